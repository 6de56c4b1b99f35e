"""The follower's fetcher matches each answer to the FetchState it was asked for: a LeaderAndIsr
that bumps the epoch while a fetch is in flight replaces the state, and the leader's answer to the
old epoch (FENCED_LEADER_EPOCH) must not drop the partition it now follows at the new epoch."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from broker.log.config import LogConfig
from broker.log.log import Log
from broker.partition import Partition
from broker.replica_fetcher import FetcherSettings, ReplicaFetcherManager
from protocol.api.fetch import (
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
)
from protocol.api.metadata import BrokerInfo
from protocol.clock import ManualClock
from protocol.errors import FencedLeaderEpochError

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
