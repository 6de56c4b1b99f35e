"""ISR shrink/expand counts and the replica gauges (broker/metrics_state.py), on real replica
managers replicating in one loop (tests/unit/broker/replication_cluster.py) with a manual clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client.core import Metric

from broker.context import ControllerEpoch
from broker.metadata_cache import MetadataCache
from broker.metrics_state import BrokerParts, state_families
from broker.replica_manager import ReplicaManager
from tests.unit.broker.helpers import batch
from tests.unit.broker.replication_cluster import LAG_MS, cluster, eventually
from tests.unit.broker.test_replication import T, produce


def gauges(replicas: ReplicaManager) -> dict[str, float]:
    """Unlabelled samples of the state families, by sample name."""
    families: list[Metric] = state_families(
        BrokerParts(replicas, MetadataCache(), ControllerEpoch())
    )
    return {s.name: s.value for f in families for s in f.samples if not s.labels}


async def test_shrink_and_expand_are_counted_and_under_replicated_follows(tmp_path: Path) -> None:
    async with cluster(tmp_path, 3) as c:
        c.configure(T, {"min.insync.replicas": "3"})
        await c.elect(T, leader=1, replicas=[1, 2, 3], isr=[1, 2, 3])
        assert await produce(c, 1, batch(5), acks=-1) == (0, 0)
        rm = c.nodes[1].replicas
        before = gauges(rm)
        assert before["odradek_server_replicamanager_underreplicatedpartitions"] == 0
        assert before["odradek_server_replicamanager_leadercount"] == 1
        assert before["odradek_server_replicamanager_isrshrinks_total"] == 0
        await c.stop_node(3)
        assert (await produce(c, 1, batch(5), acks=1))[0] == 0
        leader = c.nodes[1].partition(T)
        c.clock.advance(LAG_MS + 1)
        rm.isr.check_isr()
        await eventually(lambda: leader.isr == [1, 2])
        shrunk = gauges(rm)
        # the idle follower 2 may have been dropped too and taken back at its next fetch
        assert shrunk["odradek_server_replicamanager_isrshrinks_total"] >= 1
        assert shrunk["odradek_server_replicamanager_underreplicatedpartitions"] == 1
        assert shrunk["odradek_server_replicamanager_underminisrpartitioncount"] == 1
        await c.start_node(3)
        await c.resend(T, 3)
        await eventually(lambda: leader.isr == [1, 2, 3])
        await asyncio.sleep(0)
        back = gauges(rm)
        expands = "odradek_server_replicamanager_isrexpands_total"
        assert back[expands] == shrunk[expands] + 1  # broker 3 came back
        assert back["odradek_server_replicamanager_underreplicatedpartitions"] == 0
        assert back["odradek_server_replicamanager_underminisrpartitioncount"] == 0
        # the follower's own view: it hosts the partition, leads nothing
        follower = gauges(c.nodes[2].replicas)
        assert follower["odradek_server_replicamanager_partitioncount"] == 1
        assert follower["odradek_server_replicamanager_leadercount"] == 0


def labelled(replicas: ReplicaManager, name: str, **labels: str) -> float:
    parts = BrokerParts(replicas, MetadataCache(), ControllerEpoch())
    return sum(
        s.value
        for f in state_families(parts)
        for s in f.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


async def test_an_acks_all_produce_waits_in_the_produce_purgatory(tmp_path: Path) -> None:
    async with cluster(tmp_path, 2) as c:
        await c.elect(T, leader=1, replicas=[1, 2], isr=[1, 2])
        await c.stop_node(2)  # still in the ISR: acks=all waits for it
        rm = c.nodes[1].replicas
        name = "odradek_server_delayedoperationpurgatory_purgatorysize"
        assert labelled(rm, name, operation="Produce") == 0
        waiting = asyncio.ensure_future(produce(c, 1, batch(5), acks=-1, timeout_ms=2000))
        await eventually(lambda: labelled(rm, name, operation="Produce") == 1)
        await waiting  # times out: the follower never fetched it
        # as Kafka's PurgatorySize, an answered entry stays until the queue moves past it:
        # here when the follower returns and the high watermark passes the batch
        await c.start_node(2)
        await c.resend(T, 2)
        await eventually(lambda: labelled(rm, name, operation="Produce") == 0)
