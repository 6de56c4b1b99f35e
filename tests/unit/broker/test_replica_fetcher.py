"""The follower's fetcher matches each answer to the FetchState it was asked for: a LeaderAndIsr
that bumps the epoch while a fetch is in flight replaces the state, and the leader's answer to the
old epoch (FENCED_LEADER_EPOCH) must not drop the partition it now follows at the new epoch.
An answer is applied, and the next fetch written, inside the read that brings it (inline
rounds); connections that cannot write at once (`send_now` None) are awaited instead."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.reads import ReadResult
from broker.partition import Partition
from broker.replica_fetcher import FetcherSettings, ReplicaFetcherManager
from protocol.api.fetch import (
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
)
from protocol.api.metadata import BrokerInfo
from protocol.batch import build_batch
from protocol.clock import ManualClock
from protocol.errors import FencedLeaderEpochError
from transport.connection import InlineAnswer

LEADER = 2
FOLLOWER = 1


class PausedLeader:
    """A connection whose first fetch is held until the test releases it, then fenced."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.release = asyncio.Event()
        self.epochs: list[int] = []

    async def send(self, request: Any, timeout_ms: float | None = None) -> Any:
        assert isinstance(request, FetchRequest)
        parts = {p.partition: p for p in request.topics[0].partitions}
        first = not self.epochs
        self.epochs.append(parts[0].current_leader_epoch)
        if first:
            self.asked.set()
            await self.release.wait()
        else:
            await asyncio.sleep(0.05)
        answers = [
            # the leader moved to the next epoch meanwhile: the epoch-5 ask of t-0 is fenced
            FetchPartitionResponse(
                i, FencedLeaderEpochError.code if first and i == 0 else 0, 0, 0, 0, b""
            )
            for i in sorted(parts)
        ]
        return FetchResponse(0, [FetchTopicResponse(request.topics[0].name, answers)])

    def send_now(self, request: Any, answer: Any = None) -> Any:
        return None  # never a free slot at once: every fetch goes through `send`

    async def close(self) -> None:
        return None


async def test_a_stale_fenced_answer_does_not_drop_the_new_epoch(tmp_path: Path) -> None:
    leader = PausedLeader()

    async def connect(host: str, port: int, broker_id: int) -> PausedLeader:
        return leader

    manager = ReplicaFetcherManager(FOLLOWER, FetcherSettings(backoff_ms=10), connect=connect)
    manager.update_brokers([BrokerInfo(LEADER, "127.0.0.1", 1)])
    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock())
    other_log = Log.open(tmp_path / "t-1", LogConfig(), ManualClock())
    p = Partition("t", 0, log, FOLLOWER)
    other = Partition("t", 1, other_log, FOLLOWER)  # keeps the fetcher for LEADER running
    try:
        other.become_follower(LEADER, 5, [LEADER, FOLLOWER], [LEADER, FOLLOWER], 0)
        manager.add(other)
        p.become_follower(LEADER, 5, [LEADER, FOLLOWER], [LEADER, FOLLOWER], 0)
        manager.add(p)
        await asyncio.wait_for(leader.asked.wait(), 5)
        # LeaderAndIsr at epoch 6 (same leader) arrives while the epoch-5 fetch is in flight
        p.become_follower(LEADER, 6, [LEADER, FOLLOWER], [LEADER, FOLLOWER], 1)
        manager.add(p)
        leader.release.set()
        for _ in range(100):
            if 6 in leader.epochs:
                break
            await asyncio.sleep(0.02)
        assert manager.fetching(("t", 0)), "the fenced answer to epoch 5 dropped epoch 6"
        assert leader.epochs[0] == 5 and 6 in leader.epochs
    finally:
        await manager.shutdown()
        log.close()
        other_log.close()


class ReadyLeader:
    """Answers every fetch at once, with nothing new; counts them."""

    def __init__(self) -> None:
        self.fetches = 0

    async def send(self, request: Any, timeout_ms: float | None = None) -> Any:
        self.fetches += 1
        await asyncio.sleep(0.001)
        parts = [FetchPartitionResponse(p.partition, 0, 0, 0, 0, b"")
                 for p in request.topics[0].partitions]  # fmt: skip
        return FetchResponse(0, [FetchTopicResponse(request.topics[0].name, parts)])

    def send_now(self, request: Any, answer: Any = None) -> Any:
        return None  # never a free slot at once: every fetch goes through `send`

    async def close(self) -> None:
        return None


async def test_each_follower_step_between_an_answer_and_the_next_fetch_is_counted(
    tmp_path: Path,
) -> None:
    leader = ReadyLeader()

    async def connect(host: str, port: int, broker_id: int) -> ReadyLeader:
        return leader

    ticks = itertools.count()  # every clock read is 2 ms after the one before
    manager = ReplicaFetcherManager(FOLLOWER, FetcherSettings(), connect=connect,
                                    now=lambda: next(ticks) * 0.002)  # fmt: skip
    manager.update_brokers([BrokerInfo(LEADER, "127.0.0.1", 1)])
    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock())
    p = Partition("t", 0, log, FOLLOWER)
    try:
        p.become_follower(LEADER, 5, [LEADER, FOLLOWER], [LEADER, FOLLOWER], 0)
        manager.add(p)
        for _ in range(500):
            if leader.fetches >= 5:
                break
            await asyncio.sleep(0.01)
    finally:
        await manager.shutdown()
        log.close()
    reading = manager.steps.snapshot()
    # a step per fetch after the first (the first has no answer before it), each 2 ms: the
    # clock is read once as an answer arrives and once as the next fetch goes
    assert reading.count >= 4 and reading.sum_s == pytest.approx(0.002 * reading.count)
    assert dict(reading.buckets)["0.0025"] == reading.count


class InlineLeader:
    """A connection that writes at once: each fetch's `InlineAnswer` is kept for the test to
    settle, as a read of the leader's answer would."""

    def __init__(self) -> None:
        self.written: list[tuple[FetchRequest, InlineAnswer]] = []

    def send_now(self, request: Any, answer: Any = None) -> Any:
        assert isinstance(answer, InlineAnswer)
        self.written.append((request, answer))
        return answer

    async def send(self, request: Any, timeout_ms: float | None = None) -> Any:
        raise AssertionError("a fetch waited for a slot on a connection with one free")

    async def close(self) -> None:
        return None


def _records(tmp_path: Path, epoch: int) -> bytes:
    """Two records as the leader's log stores them (a follower appends these bytes)."""
    leader = Log.open(tmp_path / "leader-0", LogConfig(), ManualClock())
    try:
        leader.append_as_leader(build_batch([(None, b"a", None, 0), (None, b"b", None, 0)]), epoch)
        read: ReadResult = leader.read(0, 1 << 20)
        assert read.slice is not None
        return os.pread(read.slice.fd, read.slice.length, read.slice.position)
    finally:
        leader.close()


async def test_the_next_fetch_is_written_in_the_step_that_applies_the_answer(
    tmp_path: Path,
) -> None:
    leader = InlineLeader()

    async def connect(host: str, port: int, broker_id: int) -> InlineLeader:
        return leader

    manager = ReplicaFetcherManager(FOLLOWER, FetcherSettings(), connect=connect)
    manager.update_brokers([BrokerInfo(LEADER, "127.0.0.1", 1)])
    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock())
    p = Partition("t", 0, log, FOLLOWER)
    try:
        p.become_follower(LEADER, 5, [LEADER, FOLLOWER], [LEADER, FOLLOWER], 0)
        manager.add(p)
        for _ in range(1000):  # loop turns, not time: the task's first fetch
            if leader.written:
                break
            await asyncio.sleep(0)
        assert len(leader.written) == 1
        first, answer = leader.written[0]
        assert first.topics[0].partitions[0].fetch_offset == 0
        records = _records(tmp_path, 5)
        parts = [FetchPartitionResponse(0, 0, 2, 0, 2, records)]
        # the read of the leader's answer: no loop turn between it and the next fetch
        answer.set_result(FetchResponse(0, [FetchTopicResponse("t", parts)]))
        assert log.log_end_offset == 2 and p.high_watermark == 2
        assert len(leader.written) == 2, "the next fetch waited for a loop turn"
        nxt = leader.written[1][0]
        assert nxt.topics[0].partitions[0].fetch_offset == 2  # it confirms the append
        assert manager.fetchers[LEADER].inline_fetches == 1
    finally:
        await manager.shutdown()
        log.close()
