"""A failed log directory (KIP-112): the pure decisions, and one broker's reaction in process.

The I/O errors are real ones, not mocks: a segment's fd is swapped for a read-only one, so
its next `writev` fails with EBADF, as a full or failing disk would fail it.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Collection
from pathlib import Path

import pytest

from broker.log.config import LogConfig
from broker.log.dir_failure import LogDirIOError, failure_cause, is_log_dir_failure
from broker.log.flusher import GroupCommitFlusher
from broker.log.log import CLEAN_SHUTDOWN_FILE, Log
from broker.log.manager import LogManager
from broker.partition import Role
from broker.replica_manager import ReplicaManager
from broker.storage_failures import must_report_log_dir_failure
from coordinator.cluster.zk_paths import BrokerRegistration, LeaderIsrState, ZkDataError
from coordinator.controller.context import LiveBroker
from coordinator.controller.log_dirs import (
    MAX_NOTE_PARTITIONS,
    LogDirContext,
    LogDirEvent,
    after_log_dir_failure,
    brokers_with_failed_dirs,
    decode_log_dir_event,
    encode_log_dir_event,
    offline_by_broker,
)
from protocol.api.controller import PartitionState
from protocol.api.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.api.produce import ACKS_ALL
from protocol.batch import build_batch_from_values
from protocol.clock import ManualClock
from protocol.errors import KafkaStorageError, LogDirOfflineError, OffsetOutOfRangeError

BROKER = 1
T0 = 1_700_000_000_000


# ----- pure decisions ---------------------------------------------------------------------------


def test_io_errors_fail_the_directory_and_input_errors_do_not() -> None:
    assert is_log_dir_failure(OSError(errno.ENOSPC, "No space left on device"))
    assert is_log_dir_failure(LogDirIOError("append failed"))
    assert not is_log_dir_failure(KafkaStorageError("log t-0 is closed"))  # a deleted partition
    assert not is_log_dir_failure(OffsetOutOfRangeError("offset 9"))


def test_failure_cause_names_the_errno_behind_a_wrapped_error() -> None:
    assert failure_cause(OSError(errno.EIO, "Input/output error")).startswith("EIO: ")
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as exc:
            raise LogDirIOError(f"append to 0.log failed: {exc}") from None
    except LogDirIOError as wrapped:
        cause = failure_cause(wrapped)
    assert cause.startswith("ENOSPC: append to 0.log failed")


def _state(leader: int, isr: list[int], replicas: list[int] | None = None) -> PartitionState:
    return PartitionState("t", 0, 1, leader, 1, isr, 0, replicas or [1, 2, 3], [])


def test_an_offline_broker_reports_again_only_when_still_counted_on() -> None:
    assert must_report_log_dir_failure([_state(1, [1, 2, 3])], 1)  # told it leads
    assert must_report_log_dir_failure([_state(2, [2, 1])], 1)  # in an ISR with others
    assert not must_report_log_dir_failure([_state(2, [2, 3])], 1)  # already out
    assert not must_report_log_dir_failure([_state(-1, [1])], 1)  # the last member stays
    assert not must_report_log_dir_failure([], 1)


def test_notification_round_trip_and_stale_notes() -> None:
    data = encode_log_dir_event(3, 77)
    assert data == b'{"version":1,"broker":3,"event":1,"registration_czxid":77}'
    assert decode_log_dir_event(data) == LogDirEvent(3, 77)
    assert decode_log_dir_event(b'{"version":1,"broker":2,"event":1}') == LogDirEvent(2, None)
    for bad in (b"{", b'{"broker":1}', b'{"version":1,"broker":1,"event":2}'):
        with pytest.raises(ZkDataError):
            decode_log_dir_event(bad)
    events = [LogDirEvent(3, 77), LogDirEvent(2, 5), LogDirEvent(4, None), LogDirEvent(9, 1)]
    # broker 2 restarted since (new czxid); 9 is not live; 4 wrote no czxid
    assert brokers_with_failed_dirs(events, {2: 6, 3: 77, 4: 10}) == [3, 4]


def test_a_note_names_the_partitions_of_the_failed_directory() -> None:
    data = encode_log_dir_event(3, 77, [("t", 1), ("a", 0)])
    assert data.endswith(b',"partitions":[["a",0],["t",1]]}')
    assert decode_log_dir_event(data) == LogDirEvent(3, 77, frozenset({("a", 0), ("t", 1)}))
    many = [("t", p) for p in range(MAX_NOTE_PARTITIONS + 1)]
    assert decode_log_dir_event(encode_log_dir_event(3, 77, many)).partitions is None  # all
    with pytest.raises(ZkDataError):
        decode_log_dir_event(b'{"version":1,"broker":1,"event":1,"partitions":[["t"]]}')
    events = [
        LogDirEvent(3, 77, frozenset({("t", 0)})), LogDirEvent(3, 77, frozenset({("t", 1)})),
        LogDirEvent(4, 10, frozenset({("t", 2)})), LogDirEvent(4, 10, None),
    ]  # fmt: skip
    assert offline_by_broker(events, {3: 77, 4: 10}) == {3: {("t", 0), ("t", 1)}, 4: None}


def test_failed_broker_loses_leadership_and_leaves_the_isr() -> None:
    def decide(leader: int, isr: list[int], unclean: bool = False) -> object:
        s = LeaderIsrState(leader, 4, 1, isr)
        return after_log_dir_failure(
            s, replicas=[3, 1, 2], failed=[3], eligible={1, 2, 3}, unclean=unclean
        )

    assert decide(3, [3, 1, 2]) == (1, [1, 2])  # next in-sync replica, in assignment order
    assert decide(1, [1, 3]) == (1, [1])  # a follower leaves the ISR
    assert decide(1, [1, 2]) is None  # not in the ISR: nothing to write
    assert decide(3, [3]) == (-1, [3])  # nobody else in sync: offline, ISR kept
    assert decide(3, [3], unclean=True) == (1, [1])


def test_context_never_elects_an_offline_directory_and_lists_its_replicas_offline() -> None:
    ctx = LogDirContext(1, 0)
    for b in (1, 2, 3):
        ctx.live[b] = LiveBroker(b, BrokerRegistration("h", 9000 + b, 0), b)
    ctx.add_topic("t", {0: [3, 1, 2]}, False)
    ctx.set_leadership(("t", 0), LeaderIsrState(1, 2, 1, [1, 2]), 5)
    assert ctx.eligible_ids == {1, 2, 3}
    ctx.add_topic("u", {0: [2, 1]}, False)
    ctx.set_leadership(("u", 0), LeaderIsrState(1, 2, 1, [1]), 5)
    ctx.offline_replicas[2] = {("u", 0)}  # one of broker 2's directories failed
    assert ctx.eligible_ids == {1, 2, 3}
    assert ctx.partition_state_msg(("u", 0)).offline_replicas == [2]
    assert ctx.partition_state_msg(("t", 0)).offline_replicas == []
    ctx.offline_log_dirs.add(3)
    assert ctx.eligible_ids == {1, 2}
    assert ctx.partition_state_msg(("t", 0)).offline_replicas == [3]


# ----- one broker, in process -------------------------------------------------------------------


class RecordingNotifier:
    def __init__(self) -> None:
        self.calls = 0
        self.partitions: list[list[tuple[str, int]] | None] = []

    async def notify_log_dir_failure(
        self, partitions: Collection[tuple[str, int]] | None = None
    ) -> None:
        self.calls += 1
        self.partitions.append(None if partitions is None else sorted(partitions))


async def _no_overrides(_topic: str) -> dict[str, str]:
    return {}


def _broker(
    log_dir: Path | list[Path], notifier: RecordingNotifier
) -> tuple[LogManager, ReplicaManager]:
    clock = ManualClock(T0)
    manager = LogManager(log_dir, LogConfig(), clock)
    manager.load_all()
    replicas = ReplicaManager(
        BROKER, manager, GroupCommitFlusher(), LogConfig(), 100, 1 << 20, clock=clock,
        log_dir_notifier=notifier,
    )  # fmt: skip
    return manager, replicas


def _break(log: Log) -> None:
    """Make the active segment's next write fail for real (EBADF: a read-only fd)."""
    seg = log.segments.active
    read_only = os.open(seg.log_path, os.O_RDONLY)
    os.close(seg.fd)
    seg.fd = read_only


def _records(*values: bytes) -> bytes:
    return build_batch_from_values(list(values), T0)


async def test_failed_append_takes_the_directory_offline_and_acknowledges_nothing(
    tmp_path: Path,
) -> None:
    notifier = RecordingNotifier()
    manager, replicas = _broker(tmp_path, notifier)
    states = [
        PartitionState("t", 0, 1, BROKER, 1, [1, 2], 0, [1, 2], []),  # leads, a follower
        PartitionState("t", 1, 1, BROKER, 1, [1], 0, [1], []),  # leads alone
    ]
    results = await replicas.roles.apply_leader_and_isr(states, _no_overrides)
    assert [c for _, _, c in results] == [0, 0]
    assert replicas.append("t", 1, _records(b"a"), acks=1).error_code == 0
    waiting = replicas.append("t", 0, _records(b"b"), acks=ACKS_ALL)  # appended, not replicated
    assert waiting.error_code == 0
    pending = asyncio.ensure_future(
        replicas.await_replication([("t", 0, waiting.required_offset)], 5000)
    )
    await asyncio.sleep(0)
    log1 = replicas.partitions[("t", 1)].log
    _break(log1)
    size_before = log1.segments.active.size_bytes

    out = replicas.append("t", 1, _records(b"lost"), acks=1)

    assert out.error_code == LogDirOfflineError.code and out.base_offset == -1
    assert manager.offline and manager.failure is not None
    assert "append to t-1" in manager.failure.describe()
    assert str(tmp_path) in manager.failure.describe()
    assert log1.offline and log1.segments.active.size_bytes == size_before
    assert await pending == {("t", 0): LogDirOfflineError.code}  # never acknowledged
    assert all(p.role is Role.OFFLINE for p in replicas.partitions.values())
    for acks in (1, ACKS_ALL):
        assert replicas.append("t", 0, _records(b"c"), acks=acks).error_code == 56
    fetch = FetchRequest(-1, 0, 1, 1 << 20, [FetchTopic("t", [FetchPartition(1, 0, 1 << 20)])])
    assert [r.error_code for r in replicas.read_all(fetch)] == [LogDirOfflineError.code]
    await asyncio.sleep(0.01)
    assert notifier.calls == 1 and notifier.partitions == [None]  # its one directory: all
    assert not manager.fail(OSError(errno.EIO, "again"), "another write")  # once only

    # a LeaderAndIsr that still counts on this broker is refused and reported again
    codes = await replicas.roles.apply_leader_and_isr(states[:1], _no_overrides)
    assert codes == [("t", 0, LogDirOfflineError.code)]
    await asyncio.sleep(0.01)
    assert notifier.calls == 2
    moved = [PartitionState("t", 0, 1, 2, 2, [2], 0, [1, 2], [1])]
    assert await replicas.roles.apply_leader_and_isr(moved, _no_overrides) == [("t", 0, 56)]
    await asyncio.sleep(0.01)
    assert notifier.calls == 2

    # shutdown writes nothing to the failed directory: no HW checkpoint, no clean marker
    await replicas.shutdown()
    manager.shutdown()
    assert not (tmp_path / "replication-offset-checkpoint").exists()
    assert not (log1.directory / CLEAN_SHUTDOWN_FILE).exists()


async def test_with_two_dirs_a_failed_one_takes_only_its_partitions_offline(
    tmp_path: Path,
) -> None:
    notifier = RecordingNotifier()
    manager, replicas = _broker([tmp_path / "d1", tmp_path / "d2"], notifier)
    states = [PartitionState("t", p, 1, BROKER, 1, [1], 0, [1], []) for p in range(4)]
    assert [c for *_, c in await replicas.roles.apply_leader_and_isr(states, _no_overrides)] == [
        0, 0, 0, 0,
    ]  # fmt: skip
    assert {manager.dir_of(("t", p)) for p in (0, 2)} == {tmp_path / "d1"}
    _break(manager.get("t", 0))  # type: ignore[arg-type]
    assert replicas.append("t", 0, _records(b"a"), acks=1).error_code == LogDirOfflineError.code
    await asyncio.sleep(0.01)
    assert notifier.partitions == [[("t", 0), ("t", 2)]]  # the failed directory's, not all
    assert [replicas.partitions[("t", p)].role is Role.OFFLINE for p in range(4)] == [
        True, False, True, False,
    ]  # fmt: skip
    assert replicas.append("t", 1, _records(b"b"), acks=1).error_code == 0  # the other serves
    assert replicas.append("t", 2, _records(b"c"), acks=1).error_code == LogDirOfflineError.code
    codes = await replicas.roles.apply_leader_and_isr(states, _no_overrides)
    assert [c for *_, c in codes] == [LogDirOfflineError.code, 0, LogDirOfflineError.code, 0]
    _break(manager.get("t", 1))  # type: ignore[arg-type]
    assert replicas.append("t", 1, _records(b"d"), acks=1).error_code == LogDirOfflineError.code
    await asyncio.sleep(0.01)
    assert manager.offline and notifier.partitions[-1] is None  # every directory: all of them
    await replicas.shutdown()


def test_recovery_cuts_a_torn_tail_left_by_a_failed_write(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    manager = LogManager(tmp_path, LogConfig(), clock)
    manager.load_all()
    log = manager.get_or_create("t", 0)
    for i in range(3):
        log.append_as_leader(_records(b"v%d" % i), 0)
    whole = log.segments.active.size_bytes
    torn = _records(b"half written")
    with open(log.segments.active.log_path, "ab") as f:  # what a crash mid-write leaves
        f.write(torn[: len(torn) // 2])
    manager.fail(OSError(errno.ENOSPC, "No space left on device"), "append to t-0")
    manager.shutdown()  # the offline log leaves no clean-shutdown marker

    again = LogManager(tmp_path, LogConfig(), clock)
    again.load_all()
    reopened = again.get("t", 0)
    assert reopened is not None and not again.offline
    assert reopened.log_end_offset == 3
    assert os.path.getsize(reopened.segments.active.log_path) == whole
    assert reopened.append_as_leader(_records(b"after"), 1).base_offset == 3
    again.shutdown()
