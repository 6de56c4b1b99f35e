"""Replication between real brokers in one loop: follower fetch, HW, ISR, acks=all, epochs."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from protocol.api.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceResponse, ProduceTopic
from protocol.api.replication import (
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetsForLeaderEpochRequest,
)
from protocol.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    RequestTimedOutError,
    UnknownLeaderEpochError,
)
from protocol.schema import Records
from tests.unit.broker.helpers import batch, fetch
from tests.unit.broker.replication_cluster import LAG_MS, Cluster, cluster, eventually, log_bytes

T = "rep"


def produce_req(data: bytes, acks: int, timeout_ms: int = 5000) -> ProduceRequest:
    return ProduceRequest(acks, timeout_ms, [ProduceTopic(T, [ProducePartition(0, Records(data))])])


async def produce(
    c: Cluster, broker: int, data: bytes, acks: int, timeout_ms: int = 5000
) -> tuple[int, int]:
    """(error code, base offset) of one batch produced to `broker`."""
    resp: ProduceResponse = await c.nodes[broker].send(produce_req(data, acks, timeout_ms))
    part = resp.topics[0].partitions[0]
    return part.error_code, part.base_offset


def leos(c: Cluster) -> dict[int, int]:
    return {b: n.log(T).log_end_offset for b, n in c.nodes.items()}


async def test_followers_copy_the_leader_byte_for_byte_and_learn_the_hw(tmp_path: Path) -> None:
    async with cluster(tmp_path, 3) as c:
        await c.elect(T, leader=1, replicas=[1, 2, 3], isr=[1, 2, 3])
        for i in range(20):
            code, base = await produce(c, 1, batch(10, fill=bytes([65 + i])), acks=1)
            assert (code, base) == (0, i * 10)
        await eventually(lambda: set(leos(c).values()) == {200})
        leader = c.nodes[1].partition(T)
        await eventually(lambda: leader.high_watermark == 200)
        assert (
            log_bytes(c.nodes[2].log(T))
            == log_bytes(c.nodes[1].log(T))
            == log_bytes(c.nodes[3].log(T))
        )
        # followers learn the HW from the leader's answers: min(leader HW, own LEO)
        await eventually(
            lambda: all(n.partition(T).high_watermark == 200 for n in c.nodes.values())
        )
        assert c.nodes[2].log(T).epochs.entries() == c.nodes[1].log(T).epochs.entries()


async def test_acks_all_answers_once_every_isr_member_has_the_batch(tmp_path: Path) -> None:
    async with cluster(tmp_path, 3) as c:
        await c.elect(T, leader=1, replicas=[1, 2, 3], isr=[1, 2, 3])
        for i in range(5):
            code, base = await produce(c, 1, batch(7), acks=-1)
            assert (code, base) == (0, i * 7)
            # answered only when every ISR member holds the batch
            assert all(leo >= base + 7 for leo in leos(c).values()), leos(c)
            assert c.nodes[1].partition(T).high_watermark >= base + 7


async def test_acks_all_times_out_and_consumers_see_only_below_the_hw(tmp_path: Path) -> None:
    async with cluster(tmp_path, 2) as c:
        await c.elect(T, leader=1, replicas=[1, 2], isr=[1, 2])
        assert await produce(c, 1, batch(5), acks=-1) == (0, 0)
        await c.stop_node(2)  # the follower is gone; it stays in the ISR until the lag passes
        code, _ = await produce(c, 1, batch(5), acks=-1, timeout_ms=300)
        assert code == RequestTimedOutError.code
        leader = c.nodes[1].partition(T)
        assert (leader.log.log_end_offset, leader.high_watermark) == (
            10,
            5,
        )  # appended, not committed
        resp = await c.nodes[1].send(fetch(T, {0: 5}))
        assert resp.topics[0].partitions[0].records == b""  # nothing past the HW for consumers
        assert resp.topics[0].partitions[0].high_watermark == 5


async def test_isr_shrinks_on_lag_and_expands_when_the_follower_catches_up(tmp_path: Path) -> None:
    async with cluster(tmp_path, 3) as c:
        await c.elect(T, leader=1, replicas=[1, 2, 3], isr=[1, 2, 3])
        assert await produce(c, 1, batch(5), acks=-1) == (0, 0)
        await c.stop_node(3)
        for _ in range(3):
            assert (await produce(c, 1, batch(5), acks=1))[0] == 0
        leader = c.nodes[1].partition(T)
        c.clock.advance(LAG_MS // 2)
        c.nodes[1].replicas.isr.check_isr()
        await asyncio.sleep(0.05)
        assert leader.isr == [1, 2, 3]  # not lagging long enough yet
        c.clock.advance(LAG_MS // 2 + 1)
        c.nodes[1].replicas.isr.check_isr()
        await eventually(lambda: leader.isr == [1, 2])
        assert c.store.states[(T, 0)].isr == [1, 2]  # written to the state znode first
        await eventually(lambda: leader.high_watermark == 20)  # the ISR that is left has it all
        # broker 3 returns; the controller tells it again what it is (no new epoch)
        await c.start_node(3)
        await c.resend(T, 3)
        await eventually(lambda: leader.isr == [1, 2, 3])
        assert c.store.states[(T, 0)].isr == [1, 2, 3]
        assert log_bytes(c.nodes[3].log(T)) == log_bytes(leader.log)


async def test_not_enough_replicas_refuses_and_appends_nothing(tmp_path: Path) -> None:
    async with cluster(tmp_path, 2) as c:
        c.configure(T, {"min.insync.replicas": "2"})
        await c.stop_node(2)
        await c.elect(T, leader=1, replicas=[1, 2], isr=[1])
        code, base = await produce(c, 1, batch(5), acks=-1)
        assert (code, base) == (NotEnoughReplicasError.code, -1)
        assert c.nodes[1].log(T).log_end_offset == 0  # nothing appended
        assert await produce(c, 1, batch(5), acks=1) == (0, 0)  # acks=1 is not bound by it


async def test_isr_shrinking_below_the_minimum_after_append(tmp_path: Path) -> None:
    async with cluster(tmp_path, 3) as c:
        c.configure(T, {"min.insync.replicas": "2"})
        await c.elect(T, leader=1, replicas=[1, 2, 3], isr=[1, 2, 3])
        assert await produce(c, 1, batch(5), acks=-1) == (0, 0)
        await c.stop_node(2)
        await c.stop_node(3)
        pending = asyncio.create_task(produce(c, 1, batch(5), acks=-1, timeout_ms=10_000))
        leader = c.nodes[1].partition(T)
        await eventually(lambda: leader.log.log_end_offset == 10)
        assert not pending.done()
        c.clock.advance(LAG_MS + 1)
        c.nodes[1].replicas.isr.check_isr()
        code, _ = await asyncio.wait_for(pending, 5)
        assert code == NotEnoughReplicasAfterAppendError.code
        assert leader.isr == [1]
        assert (await produce(c, 1, batch(5), acks=-1))[0] == NotEnoughReplicasError.code


async def test_stale_and_future_leader_epochs_are_fenced(tmp_path: Path) -> None:
    async with cluster(tmp_path, 2) as c:
        await c.elect(T, leader=1, replicas=[1, 2], isr=[1, 2])
        epoch = await c.elect(T, leader=1, replicas=[1, 2], isr=[1, 2])
        assert epoch == 1

        def replica_fetch(current_epoch: int) -> FetchRequest:
            part = FetchPartition(0, 0, 1 << 20, current_epoch)
            return FetchRequest(2, 0, 1, 1 << 20, [FetchTopic(T, [part])])

        codes = []
        for e in (0, 2, 1):
            resp = await c.nodes[1].send(replica_fetch(e))
            codes.append(resp.topics[0].partitions[0].error_code)
        assert codes == [FencedLeaderEpochError.code, UnknownLeaderEpochError.code, 0]
        ask = OffsetsForLeaderEpochRequest(
            2, [OffsetForLeaderTopic(T, [OffsetForLeaderPartition(0, 0, 0)])]
        )
        resp = await c.nodes[1].send(ask)
        assert resp.topics[0].partitions[0].error_code == FencedLeaderEpochError.code


async def test_kip101_scenario_1_restarted_follower_does_not_truncate_to_its_hw(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, 2) as c:
        await c.elect(T, leader=1, replicas=[1, 2], isr=[1, 2])
        assert await produce(c, 1, batch(3, fill=b"a"), acks=-1) == (0, 0)
        assert await produce(c, 1, batch(3, fill=b"b"), acks=-1) == (0, 3)
        acked = log_bytes(c.nodes[1].log(T))
        await c.stop_node(2)
        restarted = await c.start_node(2)  # comes back with HW 0 and LEO 6
        on_disk = restarted.log_manager.get(T, 0)
        assert on_disk is not None and on_disk.log_end_offset == 6
        await c.resend(T, 2)
        fetchers = restarted.replicas.fetchers
        await eventually(
            lambda: not fetchers.fetchers[1].partitions[(T, 0)].truncating
        )  # it asked the leader where epoch 0 ends (6), not its own HW (0)
        assert on_disk.segments.truncations == []  # nothing was cut, not even to be fetched again
        assert on_disk.log_end_offset == 6
        await c.stop_node(1)
        await c.elect(T, leader=2, replicas=[1, 2], isr=[2])
        assert log_bytes(c.nodes[2].log(T)) == acked  # nothing acknowledged was lost
        resp = await c.nodes[2].send(fetch(T, {0: 0}))
        assert resp.topics[0].partitions[0].high_watermark == 6
        await c.start_node(1)
        await c.resend(T, 1)
        assert await produce(c, 2, batch(3, fill=b"c"), acks=1) == (0, 6)
        await eventually(lambda: c.nodes[1].log(T).log_end_offset == 9)
        assert log_bytes(c.nodes[1].log(T)) == log_bytes(c.nodes[2].log(T))


async def test_kip101_scenario_2_divergent_tails_converge_on_the_new_leader(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, 2) as c:
        await c.elect(T, leader=1, replicas=[1, 2], isr=[1, 2])
        assert await produce(c, 1, batch(3, fill=b"a"), acks=-1) == (0, 0)
        c.nodes[2].replicas.fetchers.remove((T, 0))  # broker 2 stops replicating
        assert await produce(c, 1, batch(3, fill=b"b"), acks=1) == (0, 3)  # only on broker 1
        await c.stop_node(1)
        await c.stop_node(2)  # both crash
        await c.start_node(2)
        await c.elect(T, leader=2, replicas=[1, 2], isr=[2])  # 2 returns first and leads
        assert await produce(c, 2, batch(3, fill=b"c"), acks=1) == (0, 3)
        await c.start_node(1)
        await c.resend(T, 1)  # the old leader returns as a follower
        new, old = c.nodes[2].log(T), c.nodes[1].log(T)
        await eventually(lambda: old.log_end_offset == new.log_end_offset == 6)
        await eventually(lambda: log_bytes(old) == log_bytes(new))
        assert b"bbb" not in log_bytes(old)  # the unreplicated tail is gone
        assert old.epochs.entries() == new.epochs.entries()


async def test_a_follower_whose_disk_fails_stops_and_leaves_the_isr(tmp_path: Path) -> None:
    async with cluster(tmp_path, 2) as c:
        await c.elect(T, leader=1, replicas=[1, 2], isr=[1, 2])
        assert await produce(c, 1, batch(5), acks=-1) == (0, 0)
        follower = c.nodes[2].partition(T)
        segment = follower.log.segments.active
        read_only = os.open(segment.log_path, os.O_RDONLY)
        os.dup2(read_only, segment.fd)  # the segment can no longer be written
        os.close(read_only)
        assert (await produce(c, 1, batch(5), acks=1))[0] == 0
        await eventually(lambda: follower.storage_failed)
        assert not c.nodes[2].replicas.fetchers.fetching((T, 0))
        assert follower.log.log_end_offset == 5
        c.clock.advance(LAG_MS + 1)
        c.nodes[1].replicas.isr.check_isr()
        leader = c.nodes[1].partition(T)
        await eventually(lambda: leader.isr == [1])
        assert await produce(c, 1, batch(5), acks=-1) == (0, 10)  # the leader keeps serving
        resp = await c.nodes[1].send(fetch(T, {0: 0}))
        assert resp.topics[0].partitions[0].high_watermark == 15


async def test_leader_resigns_when_zookeeper_shows_a_newer_epoch(tmp_path: Path) -> None:
    async with cluster(tmp_path, 2) as c:
        await c.elect(T, leader=1, replicas=[1, 2], isr=[1, 2])
        await c.stop_node(2)
        pending = asyncio.create_task(produce(c, 1, batch(5), acks=-1, timeout_ms=10_000))
        leader = c.nodes[1].partition(T)
        await eventually(lambda: leader.log.log_end_offset == 5)
        # the controller moved leadership to 2 while broker 1 did not hear of it (a zombie)
        z = c.store.states[(T, 0)]
        z.leader, z.leader_epoch, z.isr, z.version = 2, z.leader_epoch + 1, [2], z.version + 1
        c.clock.advance(LAG_MS + 1)
        c.nodes[1].replicas.isr.check_isr()  # its ISR write fails on the version: it stops leading
        code, _ = await asyncio.wait_for(pending, 5)
        assert code != 0 and not leader.is_leader
        assert c.store.states[(T, 0)].isr == [2]  # it wrote nothing
        assert (await produce(c, 1, batch(5), acks=1))[0] != 0


async def test_acks_all_refused_below_the_minimum_and_accepted_once_replicas_return(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, 3) as c:
        c.configure(T, {"min.insync.replicas": "2"})
        await c.elect(T, leader=1, replicas=[1, 2, 3], isr=[1, 2, 3])
        assert await produce(c, 1, batch(5), acks=-1) == (0, 0)
        await c.stop_node(2)
        await c.stop_node(3)
        c.clock.advance(LAG_MS + 1)
        c.nodes[1].replicas.isr.check_isr()
        leader = c.nodes[1].partition(T)
        await eventually(lambda: leader.isr == [1])
        assert (await produce(c, 1, batch(5), acks=-1))[0] == NotEnoughReplicasError.code
        assert leader.log.log_end_offset == 5
        await c.start_node(2)
        await c.resend(T, 2)
        await eventually(lambda: leader.isr == [1, 2])
        assert await produce(c, 1, batch(5), acks=-1) == (0, 5)


async def test_a_follower_told_before_its_leader_retries_until_the_leader_knows(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, 2) as c:
        # broker 2 hears of the leadership first; its fetches get UNKNOWN_TOPIC_OR_PARTITION
        # (or UNKNOWN_LEADER_EPOCH) until broker 1 is told, then it backs off and retries
        await c.elect(T, leader=1, replicas=[2, 1], isr=[1, 2])
        assert await produce(c, 1, batch(5), acks=-1) == (0, 0)
        assert c.nodes[2].log(T).log_end_offset == 5
