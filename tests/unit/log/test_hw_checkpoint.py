"""The high watermark checkpoint (`replication-offset-checkpoint`): its format, its round trip
through LogManager, and a restarted leader starting from it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.log import checkpoint
from broker.log.config import LogConfig
from broker.log.flusher import GroupCommitFlusher
from broker.log.manager import HW_CHECKPOINT_FILE, LogManager
from broker.partition_roles import initial_high_watermark
from broker.replica_manager import ReplicaManager
from protocol.api.controller import PartitionState
from protocol.batch import build_batch_from_values
from protocol.clock import ManualClock

T0 = 1_700_000_000_000


def test_golden_bytes() -> None:
    data = checkpoint.encode_partition_offsets({("b", 1): 7, ("a.x-y_z", 0): 0, ("b", 0): 12})
    assert data == b"0\n3\na.x-y_z 0 0\nb 0 12\nb 1 7\n"
    assert checkpoint.encode_partition_offsets({}) == b"0\n0\n"


topics = st.text(alphabet="abcxyz._-0123456789", min_size=1, max_size=20)


@given(st.dictionaries(st.tuples(topics, st.integers(0, 1000)), st.integers(0, 1 << 62)))
def test_round_trip(offsets: dict[tuple[str, int], int]) -> None:
    data = checkpoint.encode_partition_offsets(offsets)
    assert checkpoint.decode_partition_offsets(data) == offsets


@pytest.mark.parametrize(
    "data",
    [b"", b"1\n0\n", b"0\n2\nt 0 1\n", b"0\n1\nt 0\n", b"0\n1\nt -1 3\n", b"0\n1\nt 0 x\n",
     b"0\n2\nt 0 1\nt 0 2\n", b"\xff"],
)  # fmt: skip
def test_corrupt_files_are_refused(data: bytes) -> None:
    with pytest.raises(checkpoint.CorruptCheckpointError):
        checkpoint.decode_partition_offsets(data)


def test_initial_high_watermark_is_bounded_by_the_log() -> None:
    assert initial_high_watermark(None, 0, 50) == 0
    assert initial_high_watermark(None, 10, 50) == 10
    assert initial_high_watermark(30, 0, 50) == 30
    assert initial_high_watermark(80, 0, 50) == 50  # the log lost an unflushed tail
    assert initial_high_watermark(5, 10, 50) == 10  # the log start moved past it


def test_manager_round_trip_keeps_partitions_not_yet_named(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    manager = LogManager(tmp_path, LogConfig(), clock)
    manager.load_all()
    for p in range(3):
        manager.get_or_create("t", p)
    manager.write_high_watermarks({("t", 0): 4, ("t", 1): 9, ("gone", 0): 3})
    assert checkpoint.read_partition_offsets(tmp_path / HW_CHECKPOINT_FILE) == {
        ("t", 0): 4, ("t", 1): 9,
    }  # fmt: skip
    manager.shutdown()

    again = LogManager(tmp_path, LogConfig(), clock)
    again.load_all()
    assert again.checkpointed_high_watermark("t", 1) == 9
    assert again.checkpointed_high_watermark("t", 2) is None
    again.write_high_watermarks({("t", 0): 5})  # t-1 not named yet: its value is kept
    assert checkpoint.read_partition_offsets(tmp_path / HW_CHECKPOINT_FILE) == {
        ("t", 0): 5, ("t", 1): 9,
    }  # fmt: skip
    again.shutdown()
    (tmp_path / HW_CHECKPOINT_FILE).write_bytes(b"garbage")
    third = LogManager(tmp_path, LogConfig(), clock)
    third.load_all()  # a corrupt file is ignored: the HWs start as without it
    assert third.checkpointed_high_watermark("t", 0) is None
    third.shutdown()


async def _no_overrides(_topic: str) -> dict[str, str]:
    return {}


def _replicas(manager: LogManager, clock: ManualClock) -> ReplicaManager:
    return ReplicaManager(1, manager, GroupCommitFlusher(), LogConfig(), 100, 1 << 20, clock=clock)


async def _five_records_led_alone(where: Path, clock: ManualClock) -> None:
    """Lead t-0 alone, append 5 records (HW 5), shut down (which checkpoints the HWs)."""
    manager = LogManager(where, LogConfig(), clock)
    manager.load_all()
    replicas = _replicas(manager, clock)
    alone = [PartitionState("t", 0, 1, 1, 1, [1], 0, [1, 2, 3], [])]
    await replicas.roles.apply_leader_and_isr(alone, _no_overrides)
    for i in range(5):
        batch = build_batch_from_values([b"v%d" % i], T0)
        assert replicas.append("t", 0, batch, acks=1).error_code == 0
    assert replicas.partitions[("t", 0)].high_watermark == 5
    await replicas.shutdown()
    manager.shutdown()


async def _leader_again_with_full_isr(
    where: Path, clock: ManualClock
) -> tuple[LogManager, ReplicaManager]:
    """Restart and lead t-0 again, its followers in the ISR but not heard from."""
    manager = LogManager(where, LogConfig(), clock)
    manager.load_all()
    replicas = _replicas(manager, clock)
    full_isr = [PartitionState("t", 0, 1, 1, 2, [1, 2, 3], 1, [1, 2, 3], [])]
    await replicas.roles.apply_leader_and_isr(full_isr, _no_overrides)
    return manager, replicas


async def test_restarted_leader_starts_from_the_checkpointed_hw(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    await _five_records_led_alone(tmp_path, clock)
    # leader again, its followers not heard from: nothing moves the HW
    manager, replicas = await _leader_again_with_full_isr(tmp_path, clock)
    p = replicas.partitions[("t", 0)]
    assert p.is_leader and p.high_watermark == 5
    assert replicas.list_offset(-1, "t", 0, -1, -1)[2] == 5  # consumers see it at once
    await replicas.shutdown()
    manager.shutdown()


async def test_a_new_leader_behind_its_epoch_start_answers_offset_not_available(
    tmp_path: Path,
) -> None:
    """KIP-207: a leader whose HW (no checkpoint here) lags the start of its epoch would list
    an end below what consumers saw from the old leader: OFFSET_NOT_AVAILABLE (78, retriable)
    until the followers' fetches bring the HW there; earliest and replicas are answered."""
    clock = ManualClock(T0)
    await _five_records_led_alone(tmp_path, clock)
    (tmp_path / HW_CHECKPOINT_FILE).unlink()  # as if killed before any HW checkpoint
    manager, replicas = await _leader_again_with_full_isr(tmp_path, clock)
    p = replicas.partitions[("t", 0)]
    assert (p.high_watermark, p.leader_epoch_start_offset) == (0, 5)
    assert replicas.list_offset(-1, "t", 0, -1, -1)[0] == 78  # latest
    assert replicas.list_offset(-1, "t", 0, T0, -1)[0] == 78  # by time
    assert replicas.list_offset(-1, "t", 0, -2, -1)[:3] == (0, -1, 0)  # earliest
    assert replicas.list_offset(2, "t", 0, -1, -1)[2] == 5  # a replica: the log end
    for follower in (2, 3):
        p.record_follower_fetch(follower, 5, clock.time_ms())
    assert p.high_watermark == 5
    assert replicas.list_offset(-1, "t", 0, -1, -1)[:3] == (0, -1, 5)
    await replicas.shutdown()
    manager.shutdown()


async def test_the_periodic_checkpoint_writes_off_the_loop_and_only_what_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The periodic HW checkpoint (its write and two fsyncs) runs in an executor thread, not
    in the loop's step; a directory whose values did not move is not written again; the
    shutdown's write, on the loop's thread, still lands over what the thread wrote."""
    clock = ManualClock(T0)
    manager = LogManager(tmp_path, LogConfig(), clock)
    manager.load_all()
    manager.get_or_create("t", 0)
    writers: list[int] = []
    real = checkpoint.write_atomically

    def recorded(path: Path, data: bytes) -> None:
        writers.append(threading.get_ident())
        real(path, data)

    monkeypatch.setattr(checkpoint, "write_atomically", recorded)
    assert await manager.write_high_watermarks_off_loop({("t", 0): 4}) == 1
    assert writers and threading.get_ident() not in writers  # written in a thread
    assert await manager.write_high_watermarks_off_loop({("t", 0): 4}) == 0  # nothing moved
    assert len(writers) == 1
    assert await manager.write_high_watermarks_off_loop({("t", 0): 7}) == 1
    assert checkpoint.read_partition_offsets(tmp_path / HW_CHECKPOINT_FILE) == {("t", 0): 7}
    manager.write_high_watermarks({("t", 0): 9})  # shutdown's: on this thread
    assert writers[-1] == threading.get_ident()
    assert checkpoint.read_partition_offsets(tmp_path / HW_CHECKPOINT_FILE) == {("t", 0): 9}
    # a periodic write asked for and dropped unrun (cancelled in the executor's queue): the
    # shutdown's write of the same values still writes them
    jobs = manager.high_watermark_jobs({("t", 0): 11})
    assert len(jobs) == 1  # asked, never run
    manager.write_high_watermarks({("t", 0): 11})
    assert checkpoint.read_partition_offsets(tmp_path / HW_CHECKPOINT_FILE) == {("t", 0): 11}
    manager.shutdown()
