"""Followers replicate through fetch sessions (KIP-227), over real sockets between real brokers
in one event loop (tests/unit/broker/replication_cluster.py): once a session is open, a
follower's request names only the partition that moved and the leader answers only it; a
session the leader no longer has is refused on the wire and the follower opens a new one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import broker.operations.fetch as fetch_operation
from protocol.api.fetch import FetchRequest
from protocol.errors import FetchSessionIdNotFoundError, InvalidFetchSessionEpochError
from tests.unit.broker.helpers import batch
from tests.unit.broker.helpers import produce as produce_request
from tests.unit.broker.replication_cluster import LAG_MS, Cluster, cluster, eventually, log_bytes
from tests.unit.test_metrics_isr import gauges

PARTITIONS = 10
LEADER = 1
FOLLOWERS = (2, 3)


async def produce(c: Cluster, data: bytes, partition: int) -> int:
    """The error code of one acks=all batch produced to the leader."""
    resp = await c.nodes[LEADER].send(produce_request("t", partition, data, acks=-1))
    return int(resp.topics[0].partitions[0].error_code)


async def _ten_partitions_in_sync(c: Cluster) -> None:
    for p in range(PARTITIONS):
        await c.elect("t", LEADER, [1, 2, 3], [1, 2, 3], partition=p)
    for p in range(PARTITIONS):
        assert await produce(c, batch(2), p) == 0
    leader = c.nodes[LEADER]

    def told() -> bool:  # every follower knows every partition's final HW
        return all(
            c.nodes[f].partition("t", p).high_watermark == leader.partition("t", p).high_watermark
            for f in FOLLOWERS
            for p in range(PARTITIONS)
        )

    await eventually(told)


def _sessions_of(c: Cluster) -> list[Any]:
    cache = c.nodes[LEADER].replicas.sessions
    return [cache.get(f.session.session_id) for f in _fetchers(c)]


def _fetchers(c: Cluster) -> list[Any]:
    return [c.nodes[f].replicas.fetchers.fetchers[LEADER] for f in FOLLOWERS]


async def test_a_follower_asks_for_and_gets_only_the_partition_that_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with cluster(tmp_path, 3) as c:
        await _ten_partitions_in_sync(c)
        sessions = _sessions_of(c)
        assert all(s is not None and len(s.partitions) == PARTITIONS for s in sessions)
        seen = gauges(c.nodes[LEADER].replicas)  # what the broker's metrics say of them
        assert seen["odradek_server_fetchsessioncache_numincrementalfetchsessions"] == 2
        cached = "odradek_server_fetchsessioncache_numincrementalfetchpartitionscached"
        assert seen[cached] == 2 * PARTITIONS

        asked: list[set[int]] = []
        answered: list[set[int]] = []
        with_records = 0
        leader = c.nodes[LEADER].replicas
        real_context, real_build = leader.fetch_context, fetch_operation.build_response

        def spy_context(request: FetchRequest) -> Any:
            if request.replica_id in FOLLOWERS:
                asked.append({p.partition for t in request.topics for p in t.partitions})
            return real_context(request)

        def spy_build(reads: list[Any], session_id: int = 0, throttle_ms: int = 0) -> Any:
            nonlocal with_records
            if session_id != 0:
                answered.append({r.partition for r in reads})
                with_records += sum(1 for r in reads if r.size_bytes > 0)
            return real_build(reads, session_id, throttle_ms)

        monkeypatch.setattr(leader, "fetch_context", spy_context)
        monkeypatch.setattr(fetch_operation, "build_response", spy_build)
        for _ in range(5):
            assert await produce(c, batch(3), 3) == 0
        want = log_bytes(c.nodes[LEADER].log("t", 3))
        await eventually(lambda: all(log_bytes(c.nodes[f].log("t", 3)) == want for f in FOLLOWERS))

        assert asked and answered
        assert all(named <= {3} for named in asked), asked  # without sessions: all ten, always
        assert all(got <= {3} for got in answered), answered
        assert with_records >= 2  # each follower got partition 3's records
        assert _sessions_of(c) == sessions  # the same sessions throughout


async def test_a_session_the_leader_dropped_is_refused_and_the_follower_opens_another(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, 3) as c:
        await _ten_partitions_in_sync(c)
        fetcher = _fetchers(c)[0]
        old = fetcher.session.session_id
        session = c.nodes[LEADER].replicas.sessions.get(old)
        assert session is not None
        leader = c.nodes[LEADER]

        wrong = FetchRequest(2, 0, 1, 1 << 20, [], old, session.epoch + 5)
        resp = await leader.send(wrong)
        assert (resp.error_code, resp.topics) == (InvalidFetchSessionEpochError.code, [])
        closing = FetchRequest(2, 0, 1, 1 << 20, [], old)  # session_epoch -1: close it
        assert (await leader.send(closing)).error_code == 0
        unknown = FetchRequest(2, 0, 1, 1 << 20, [], old, session.epoch)
        assert (await leader.send(unknown)).error_code == FetchSessionIdNotFoundError.code

        # acks=all: both followers fetched it, the first one in a new session
        assert await produce(c, batch(4), 7) == 0
        await eventually(lambda: fetcher.session.session_id not in (0, old))
        renewed = leader.replicas.sessions.get(fetcher.session.session_id)
        assert renewed is not None and len(renewed.partitions) == PARTITIONS


async def test_quiet_partitions_are_not_read_yet_their_followers_stay_in_the_isr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with cluster(tmp_path, 3) as c:
        await _ten_partitions_in_sync(c)
        leader = c.nodes[LEADER].replicas
        read: list[list[int]] = []  # partitions read per follower fetch
        real_read_all = leader._read_all

        def spy(replica_id: int, max_bytes: int, parts: Any, *rest: Any) -> Any:
            parts = list(parts)
            if replica_id in FOLLOWERS:
                read.append([fp.partition for _, fp in parts])
            return real_read_all(replica_id, max_bytes, parts, *rest)

        monkeypatch.setattr(leader, "_read_all", spy)
        assert await produce(c, batch(3), 3) == 0
        await eventually(lambda: len(read) >= 8)  # fetches of both followers, parked and ended
        assert all(set(parts) <= {3} for parts in read), read  # never the 9 quiet ones

        # The quiet partitions' fetches are still noted: a follower that fetched within
        # replica.lag.time.max.ms stays in every ISR though nothing was read for it.
        c.clock.advance(LAG_MS - 1)
        seen = len(read)
        await eventually(lambda: len(read) >= seen + 4)  # both followers fetched again
        c.clock.advance(2)  # LAG_MS + 1 after the last records
        writes = len(c.store.writes)
        leader.isr.check_isr()
        await asyncio.sleep(0.05)  # an ISR shrink would be written by now
        assert len(c.store.writes) == writes  # no shrink asked for
        assert all(leader.partitions[("t", p)].isr == [1, 2, 3] for p in range(PARTITIONS))
