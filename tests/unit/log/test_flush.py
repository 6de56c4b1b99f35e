"""fsync policy: flush.messages / flush.ms, flush plans, and group commit sharing fdatasyncs."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from broker.log.durability import RECOVERY_POINT_FILE
from broker.log.flusher import GroupCommitFlusher
from protocol.clock import ManualClock
from protocol.errors import KafkaStorageError

from .conftest import OpenLog, batch


class SyncSpy:
    """Counts real fdatasync calls (they still happen)."""

    def __init__(self) -> None:
        self.count = 0
        self.real = os.fdatasync

    def __call__(self, fd: int) -> None:
        self.count += 1
        self.real(fd)


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[SyncSpy]:
    spy = SyncSpy()
    monkeypatch.setattr(os, "fdatasync", spy)
    yield spy


def test_never_flush_by_default(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log()
    for _ in range(100):
        log.append_as_leader(batch([b"x"]), 0)
    clock.advance(10**9)
    assert not log.durability.needs_flush()
    assert log.recovery_point == 0


def test_flush_messages(open_log: OpenLog) -> None:
    log = open_log(flush_messages=5)
    for _ in range(4):
        log.append_as_leader(batch([b"x"]), 0)
    assert not log.durability.needs_flush()
    log.append_as_leader(batch([b"x"]), 0)
    assert log.durability.needs_flush()
    log.flush()
    assert log.recovery_point == 5 and not log.durability.needs_flush()


def test_flush_ms(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(flush_ms=1000)
    log.append_as_leader(batch([b"x"]), 0)
    clock.advance(999)
    assert not log.durability.needs_flush()
    clock.advance(1)
    assert log.durability.needs_flush()


def test_flush_plan_syncs_every_unflushed_segment(
    open_log: OpenLog, syncs: SyncSpy, log_dir: Path
) -> None:
    log = open_log(segment_bytes=200)
    for _ in range(10):
        log.append_as_leader(batch([b"y" * 60]), 0)
    unflushed_segments = log.segments.count
    plan = log.durability.flush_plan()
    assert plan.up_to_offset == 10 and len(plan.fds) == unflushed_segments
    log.append_as_leader(batch([b"later"]), 0)  # appends go on while the plan runs
    syncs.count = 0
    plan.run()
    assert syncs.count == unflushed_segments
    log.durability.mark_flushed(plan.up_to_offset, plan.generation)
    assert log.recovery_point == 10
    log.flush()
    assert log.recovery_point == 11
    log.close()
    assert (log_dir / RECOVERY_POINT_FILE).read_text() == "0\n1\n11\n"


def test_truncation_during_a_flush_caps_the_recovery_point(open_log: OpenLog) -> None:
    log = open_log()
    for _ in range(10):
        log.append_as_leader(batch([b"z"]), 0)
    plan = log.durability.flush_plan()
    log.truncate_to(4)
    for _ in range(6):
        log.append_as_leader(batch([b"new"]), 1)  # offsets 4-9 again, not yet synced
    plan.run()
    log.durability.mark_flushed(plan.up_to_offset, plan.generation)
    assert log.recovery_point == 4


async def test_group_commit_shares_fdatasyncs(open_log: OpenLog, syncs: SyncSpy) -> None:
    log = open_log(flush_messages=1)
    executor = ThreadPoolExecutor(max_workers=1)
    flusher = GroupCommitFlusher(executor)
    syncs.count = 0

    async def produce(i: int) -> int:
        info = log.append_as_leader(batch([b"p%d" % i]), 0)
        await flusher.wait_durable(log, info.last_offset)
        assert log.recovery_point > info.last_offset
        return info.last_offset

    offsets = await asyncio.wait_for(asyncio.gather(*(produce(i) for i in range(200))), 30)
    assert sorted(offsets) == list(range(200))
    assert log.recovery_point == 200
    # All 200 appends happen before the first flush completes: one flush for the first
    # waiter, at most one more for everyone who arrived while it ran.
    assert 1 <= flusher.flush_count <= 2
    assert syncs.count == flusher.flush_count
    executor.shutdown()


class GatedExecutor(ThreadPoolExecutor):
    """Runs each job once `gate` is set, so a test can hold a flush in flight."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.gate = threading.Event()
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.submitted += 1

        def gated():  # type: ignore[no-untyped-def]
            assert self.gate.wait(10)
            return fn(*args, **kwargs)

        return super().submit(gated)


async def test_waiters_during_a_flush_share_the_next_one(open_log: OpenLog) -> None:
    log = open_log(flush_messages=1)
    executor = GatedExecutor()
    flusher = GroupCommitFlusher(executor)
    first = log.append_as_leader(batch([b"a"]), 0)
    waiting = asyncio.ensure_future(flusher.wait_durable(log, first.last_offset))
    for _ in range(100):
        if executor.submitted:
            break
        await asyncio.sleep(0)
    assert executor.submitted == 1  # the first flush is in flight, planned up to offset 1
    later = [log.append_as_leader(batch([b"b"]), 0) for _ in range(50)]
    others = [asyncio.ensure_future(flusher.wait_durable(log, i.last_offset)) for i in later]
    await asyncio.sleep(0)
    executor.gate.set()
    await asyncio.wait_for(asyncio.gather(waiting, *others), 30)
    assert flusher.flush_count == 2  # the 50 later waiters shared the second flush
    assert log.recovery_point == 51
    await flusher.wait_durable(log, 10)  # already durable: no flush
    assert flusher.flush_count == 2
    executor.shutdown()


async def test_waiting_for_a_truncated_offset_fails(open_log: OpenLog) -> None:
    log = open_log()
    for _ in range(5):
        log.append_as_leader(batch([b"t"]), 0)
    log.truncate_to(2)
    with pytest.raises(KafkaStorageError):
        await GroupCommitFlusher().wait_durable(log, 4)
