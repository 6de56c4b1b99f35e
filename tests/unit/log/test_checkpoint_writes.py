"""Which checkpoint writes happen, and where: a new log writes none, an unchanged value is not
written again, the minute pass and a LeaderAndIsr's new epochs are written in threads, and a
write asked for earlier never lands over a newer one or after its log is deleted.

fsyncs are counted by wrapping os.fsync (they still happen); checkpoint writes by wrapping
checkpoint.write_atomically, recording the file and the thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.log import checkpoint
from broker.log.config import LogConfig
from broker.log.durability import LOG_START_FILE, RECOVERY_POINT_FILE
from broker.log.epoch import LeaderEpochCache
from broker.log.flusher import GroupCommitFlusher
from broker.log.log import CLEAN_SHUTDOWN_FILE, EPOCH_FILE
from broker.log.manager import LogManager
from broker.replica_manager import ReplicaManager
from protocol.api.controller import PartitionState
from protocol.clock import ManualClock
from tests.unit.log.conftest import T0, OpenLog, batch, read_values

CHECKPOINTS = (RECOVERY_POINT_FILE, LOG_START_FILE, EPOCH_FILE)


class Writes:
    """Counts os.fsync and records (file name, thread name) of every checkpoint write."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fsyncs = 0
        self.files: list[tuple[str, str]] = []
        real_fsync, real_write = os.fsync, checkpoint.write_atomically

        def fsync(fd: int) -> None:
            self.fsyncs += 1
            real_fsync(fd)

        def write(path: Path, data: bytes) -> None:
            self.files.append((path.name, threading.current_thread().name))
            real_write(path, data)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(checkpoint, "write_atomically", write)

    def reset(self) -> None:
        self.fsyncs = 0
        self.files.clear()


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Writes]:
    yield Writes(monkeypatch)


def test_a_new_log_fsyncs_nothing_and_writes_no_checkpoint(
    open_log: OpenLog, log_dir: Path, writes: Writes
) -> None:
    log = open_log()
    assert writes.fsyncs == 0 and writes.files == []
    assert not any((log_dir / name).exists() for name in CHECKPOINTS)
    log.close_unclean()  # a crash: the absent files read as what a new log holds
    reopened = open_log()
    assert (reopened.log_start_offset, reopened.log_end_offset, reopened.recovery_point) == (
        0, 0, 0,
    )  # fmt: skip
    assert reopened.epochs.entries() == []
    reopened.append_as_leader(batch([b"a", b"b"]), 3)
    assert reopened.epochs.entries() == [(3, 0)] and read_values(reopened) == [(0, b"a"), (1, b"b")]


def test_the_first_flush_of_a_new_log_fsyncs_its_directories(
    open_log: OpenLog, writes: Writes
) -> None:
    log = open_log()
    log.append_as_leader(batch([b"x"]), 1)
    writes.reset()
    log.flush()  # the data (fdatasync, not counted here), then both directories
    assert writes.fsyncs == 2 and log.recovery_point == 1
    log.append_as_leader(batch([b"y"]), 1)
    writes.reset()
    log.flush()
    assert writes.fsyncs == 0 and log.recovery_point == 2  # once is enough


def test_an_unchanged_checkpoint_is_not_written_again(
    open_log: OpenLog, log_dir: Path, writes: Writes
) -> None:
    log = open_log()
    log.append_as_leader(batch([b"x"] * 5), 1)
    log.flush()
    writes.reset()
    log.durability.checkpoint_offsets()
    log.epochs.flush()  # a new log's first epoch from 0 was left unwritten until now
    assert [name for name, _ in writes.files] == [RECOVERY_POINT_FILE, EPOCH_FILE]
    writes.reset()
    log.durability.checkpoint_offsets()
    log.epochs.flush()
    assert writes.files == [] and writes.fsyncs == 0
    log.close()  # flushed and checkpointed already: only the clean-shutdown marker
    assert [name for name, _ in writes.files] == [CLEAN_SHUTDOWN_FILE]
    assert checkpoint.read_offset(log_dir / RECOVERY_POINT_FILE) == 5
    writes.reset()
    reopened = open_log()  # what the files hold is what it would write: nothing but the dir
    assert writes.files == [] and reopened.recovery_point == 5


def test_an_older_write_never_lands_over_a_newer_one(tmp_path: Path) -> None:
    file = checkpoint.CheckpointFile(tmp_path / "cp")
    older, newer = file.write_job(b"A"), file.write_job(b"B")
    assert older is not None and newer is not None
    assert file.write_job(b"B") is None  # asked for already
    newer()
    older()  # ran late (another thread): skipped
    assert (tmp_path / "cp").read_bytes() == b"B"
    late = file.write_job(b"C")
    assert late is not None
    file.retire()
    late()
    assert (tmp_path / "cp").read_bytes() == b"B" and file.write_job(b"D") is None


def test_a_forced_write_replaces_an_ask_whose_job_never_ran(tmp_path: Path) -> None:
    file = checkpoint.CheckpointFile(tmp_path / "cp")
    dropped = file.write_job(b"A")  # asked, then dropped unrun (cancelled in an executor)
    assert dropped is not None and file.write_job(b"A") is None
    forced = file.write_job(b"A", force=True)
    assert forced is not None
    forced()
    assert (tmp_path / "cp").read_bytes() == b"A"
    assert file.write_job(b"A", force=True) is None  # landed: nothing to force


def test_close_writes_the_offsets_a_dropped_periodic_write_left_unwritten(
    open_log: OpenLog, log_dir: Path
) -> None:
    log = open_log(segment_bytes=200)
    for _ in range(6):
        log.append_as_leader(batch([b"y" * 60]), 1)
    log.flush()
    jobs = log.durability.offsets_checkpoint_jobs()  # the minute pass asked ...
    assert jobs  # ... and its executor job was cancelled before it ran
    log.close()
    assert checkpoint.read_offset(log_dir / RECOVERY_POINT_FILE) == 6


def test_a_deleted_log_gets_no_checkpoint_asked_for_before(
    open_log: OpenLog, log_dir: Path
) -> None:
    log = open_log()
    log.append_as_leader(batch([b"x"]), 1)
    log.flush()
    jobs = log.durability.offsets_checkpoint_jobs()
    assert jobs
    log.mark_deleted()
    for job in jobs:
        job()
    assert not (log_dir / RECOVERY_POINT_FILE).exists()
    assert log.durability.offsets_checkpoint_jobs() == []


def test_an_epoch_written_ahead_is_not_written_again_by_assign(
    tmp_path: Path, writes: Writes
) -> None:
    cache = LeaderEpochCache(tmp_path / EPOCH_FILE, [(1, 0)])
    job = cache.assign_job(4, 10)
    assert job is not None and cache.entries() == [(1, 0)]  # the cache itself waits
    assert cache.assign_job(1, 10) is None  # an assign that changes nothing: nothing to write
    thread = threading.Thread(target=job, name="ahead")
    thread.start()
    thread.join()
    assert LeaderEpochCache.load(tmp_path / EPOCH_FILE)[0].entries() == [(1, 0), (4, 10)]
    writes.reset()
    assert cache.assign(4, 10)
    assert cache.entries() == [(1, 0), (4, 10)]
    assert writes.files == [] and writes.fsyncs == 0


def test_an_epoch_whose_ahead_write_was_dropped_is_written_by_assign(
    tmp_path: Path, writes: Writes
) -> None:
    cache = LeaderEpochCache(tmp_path / EPOCH_FILE, [(1, 0)])
    assert cache.assign_job(4, 10) is not None  # asked ahead, its thread's job never ran
    assert cache.assign(4, 10)
    assert [name for name, _ in writes.files] == [EPOCH_FILE]
    assert LeaderEpochCache.load(tmp_path / EPOCH_FILE)[0].entries() == [(1, 0), (4, 10)]


def _manager(where: Path) -> LogManager:
    manager = LogManager(where, LogConfig(retention_ms=None), ManualClock(T0))
    manager.load_all()
    return manager


async def test_the_minute_pass_writes_only_what_moved_and_in_a_thread(
    tmp_path: Path, writes: Writes
) -> None:
    manager = _manager(tmp_path)
    logs = [manager.get_or_create("t", p) for p in range(3)]
    logs[1].append_as_leader(batch([b"x"] * 3), 1)
    logs[1].flush()
    writes.reset()
    assert await manager.checkpoint_offsets() == 1
    assert [name for name, _ in writes.files] == [RECOVERY_POINT_FILE]
    assert all(thread != threading.main_thread().name for _, thread in writes.files)
    assert checkpoint.read_offset(tmp_path / "t-1" / RECOVERY_POINT_FILE) == 3
    assert await manager.checkpoint_offsets() == 0
    manager.shutdown()


async def _no_overrides(_topic: str) -> dict[str, str]:
    return {}


async def test_new_leaderships_write_their_epochs_in_threads(
    tmp_path: Path, writes: Writes
) -> None:
    """New logs leave their first epoch unwritten (rebuilt from the batches if lost); a
    leadership of logs holding data writes each one's epoch file in a thread."""
    broker = 1
    manager = _manager(tmp_path)
    replicas = ReplicaManager(broker, manager, GroupCommitFlusher(), LogConfig(), 100, 1 << 20,
                              clock=ManualClock(T0))  # fmt: skip

    async def lead(epoch: int) -> None:
        states = [PartitionState("t", p, 1, broker, epoch, [1], 0, [1], []) for p in range(4)]
        results = await replicas.roles.apply_leader_and_isr(states, _no_overrides)
        assert [code for _, _, code in results] == [0] * 4

    await lead(7)
    assert not [name for name, _ in writes.files if name == EPOCH_FILE]
    for p in range(4):
        log = manager.get("t", p)
        assert log is not None and log.epochs.entries() == [(7, 0)]
        log.append_as_leader(batch([b"x"]), 7)
    await lead(8)
    epoch_writes = [thread for name, thread in writes.files if name == EPOCH_FILE]
    assert len(epoch_writes) == 4
    assert all(thread != threading.main_thread().name for thread in epoch_writes)
    for p in range(4):
        on_disk = LeaderEpochCache.load(tmp_path / f"t-{p}" / EPOCH_FILE)[0].entries()
        assert on_disk == [(7, 0), (8, 1)] == manager.get("t", p).epochs.entries()  # type: ignore[union-attr]
    manager.shutdown()


def test_a_moved_log_start_is_written_and_read_back(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(segment_bytes=200)
    for _ in range(6):
        log.append_as_leader(batch([b"y" * 60]), 1)
    assert log.advance_log_start_offset(3)
    assert checkpoint.read_offset(log_dir / LOG_START_FILE) == 3
    log.close()
    assert open_log(segment_bytes=200).log_start_offset == 3


def test_a_new_logs_first_epoch_is_rebuilt_when_its_file_was_never_written(
    open_log: OpenLog, log_dir: Path
) -> None:
    log = open_log()
    log.append_as_leader(batch([b"a", b"b"]), 3)
    assert log.epochs.entries() == [(3, 0)] and not (log_dir / EPOCH_FILE).exists()
    log.close_unclean()
    crashed = open_log()
    assert crashed.epochs.entries() == [(3, 0)]  # from the batches
    crashed.append_as_leader(batch([b"c"]), 5)  # a second epoch: written through at once
    assert LeaderEpochCache.load(log_dir / EPOCH_FILE)[0].entries() == [(3, 0), (5, 2)]
    crashed.close_unclean()
    assert open_log().epochs.entries() == [(3, 0), (5, 2)]


def test_a_clean_close_writes_a_new_logs_first_epoch(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.epochs.assign(4, 0)  # a leadership, nothing written yet
    assert not (log_dir / EPOCH_FILE).exists()
    log.close()
    assert LeaderEpochCache.load(log_dir / EPOCH_FILE)[0].entries() == [(4, 0)]
