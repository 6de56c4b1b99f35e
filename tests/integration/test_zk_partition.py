"""Real network partitions on a netns cluster (issue 11): brokers in their own namespaces,
faults as iptables DROP rules inside them (deploy/netns.py), so connections hang as with a
pulled cable.

- isolate: the leader of an RF=3, min.insync.replicas=2 partition is cut from everything.
  Leadership moves, acks=all produce goes on through the new leader; after heal the old leader
  rejoins the ISR and every replica holds the same bytes.
- cut ZooKeeper: the leader still reaches its peers and clients but not ZooKeeper. After its
  session timeout it fences itself (broker/zk_fence.py): an acks=all produce sent straight to it
  is refused with a retriable error and never acknowledged, while the controller has elected
  another leader. After heal it rejoins the ISR; the replicas are identical and hold every
  acknowledged record once, and none of the refused ones.

Root only (namespaces, iptables): skipped otherwise.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from client import Admin, Consumer, NewTopic, PartitionDescription, Producer, TopicPartition
from deploy.cluster import LocalCluster
from deploy.netns import NetLab
from protocol.errors import NotLeaderForPartitionError, for_code
from tests.fixtures.cluster import ClusterFactory, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and iptables need root"),
]
T = TypeVar("T")

SESSION_TIMEOUT_MS = 3000
WAIT_S = 30.0
TOPIC = "net"


def _wait(check: Callable[[], T], what: str, timeout_s: float = WAIT_S) -> T:
    return wait_until(check, what, timeout_s)


def _bootstrap(cluster: LocalCluster, ids: list[int]) -> str:
    return ",".join(f"{cluster.broker_host(b)}:{cluster.broker(b).port}" for b in ids)


def _partition(cluster: LocalCluster, ask: list[int]) -> PartitionDescription | None:
    """Partition 0 as the brokers `ask` describe it (None when none answers)."""
    try:
        with Admin(_bootstrap(cluster, ask), request_timeout_ms=2000) as admin:
            (desc,) = admin.describe_topics([TOPIC])
    except Exception:
        return None
    return None if desc.error_code or not desc.partitions else desc.partitions[0]


def _start(cluster_factory: ClusterFactory) -> tuple[LocalCluster, NetLab, int, list[int]]:
    cluster = cluster_factory(brokers=3, network="netns", session_timeout_ms=SESSION_TIMEOUT_MS)
    lab = cluster.netlab
    assert lab is not None
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 3, {"min.insync.replicas": "2"})])
    every = cluster.broker_ids
    p = _wait(lambda: _full_isr(cluster, every), "the topic with a full ISR")
    others = [b for b in every if b != p.leader]
    return cluster, lab, p.leader, others


def _full_isr(cluster: LocalCluster, ask: list[int]) -> PartitionDescription | None:
    p = _partition(cluster, ask)
    return p if p is not None and p.leader >= 0 and len(p.isr) == 3 else None


def _send(bootstrap: str, values: list[bytes]) -> list[int]:
    """acks=all through the client (it retries retriable errors); the offsets."""
    with Producer(bootstrap, acks="all", linger_ms=2, request_timeout_ms=5000) as producer:
        futures = [producer.send(TOPIC, v, partition=0) for v in values]
        producer.flush()
        return [f.result(60).offset for f in futures]


def _read(bootstrap: str, count: int) -> list[bytes]:
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        got: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(bytes(r.value or b"") for r in records)
        return got


def _produce_raw(host: str, port: int, value: bytes, timeout_ms: int = 2000) -> int:
    """One acks=all batch straight to one broker (no client retries): its error code, or -1
    when the connection failed or no answer came."""
    from client.connection import BrokerConnection
    from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
    from protocol.batch import build_batch_from_values
    from protocol.schema import Records

    async def send() -> int:
        conn = await BrokerConnection.connect(host, port, connect_timeout_ms=2000)
        try:
            data = Records(build_batch_from_values([value], int(time.time() * 1000)))
            topics = [ProduceTopic(TOPIC, [ProducePartition(0, data)])]
            resp = await conn.send(ProduceRequest(-1, timeout_ms, topics), timeout_ms=10_000)
            return int(resp.topics[0].partitions[0].error_code)
        finally:
            await conn.close()

    try:
        return asyncio.run(send())
    except Exception:
        return -1


def _segments(cluster: LocalCluster, broker_id: int) -> bytes:
    directory = Path(cluster.broker(broker_id).log_dir) / f"{TOPIC}-0"
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def _wait_healed(cluster: LocalCluster, old_leader: int) -> None:
    """The old leader is back in the ISR and every replica's log bytes are the same."""
    every = cluster.broker_ids
    p = _wait(lambda: _full_isr(cluster, every), f"broker {old_leader} back in the ISR")
    assert old_leader in p.isr

    def same() -> bool:
        logs = [_segments(cluster, b) for b in every]
        return len(logs[0]) > 0 and all(log == logs[0] for log in logs)

    _wait(same, "identical replicas")


def test_isolated_leader_loses_leadership_and_rejoins(cluster_factory: ClusterFactory) -> None:
    cluster, lab, leader, others = _start(cluster_factory)
    before = [f"before-{i}".encode() for i in range(20)]
    assert _send(cluster.bootstrap, before) == list(range(20))

    lab.isolate(leader)
    assert lab.fault(leader) == "isolate"
    # the isolated broker answers nobody: the client must not even reach it
    assert _produce_raw(cluster.broker_host(leader), cluster.broker(leader).port, b"x") == -1

    def moved() -> int:
        p = _partition(cluster, others)
        return p.leader if p is not None and p.leader in others else 0

    new_leader = _wait(moved, "a new leader among the others")
    during = [f"during-{i}".encode() for i in range(20)]
    assert _send(_bootstrap(cluster, others), during) == list(range(20, 40))

    lab.heal(leader)
    assert lab.fault(leader) is None
    _wait_healed(cluster, leader)
    assert _read(cluster.bootstrap, 40) == before + during
    print(f"leader {leader} isolated, {new_leader} took over, {leader} rejoined")


def test_leader_cut_from_zookeeper_fences_itself(cluster_factory: ClusterFactory) -> None:
    cluster, lab, leader, others = _start(cluster_factory)
    host, port = cluster.broker_host(leader), cluster.broker(leader).port
    before = [f"before-{i}".encode() for i in range(20)]
    assert _send(cluster.bootstrap, before) == list(range(20))
    assert _produce_raw(host, port, b"acked") == 0  # offset 20

    lab.cut_zookeeper(leader)
    assert lab.fault(leader) == "cut_zookeeper"

    def moved() -> int:
        p = _partition(cluster, others)
        return p.leader if p is not None and p.leader in others else 0

    _wait(moved, "a new leader elected by the controller")
    # From here on the old leader must acknowledge nothing; once fenced it says so at once.
    refused: list[int] = []

    def fenced() -> bool:
        code = _produce_raw(host, port, b"zombie")
        refused.append(code)
        assert code != 0, "a broker cut from ZooKeeper acknowledged a write"
        return code == NotLeaderForPartitionError.code

    _wait(fenced, "the cut-off leader to refuse produces", timeout_s=3 * SESSION_TIMEOUT_MS / 1000)
    assert for_code(NotLeaderForPartitionError.code).retriable
    assert _partition(cluster, [leader]) is not None  # still reachable: not a pulled cable

    during = [f"during-{i}".encode() for i in range(20)]
    assert _send(_bootstrap(cluster, others), during) == list(range(21, 41))

    lab.heal(leader)
    _wait_healed(cluster, leader)
    got = _read(cluster.bootstrap, 41)
    assert got == [*before, b"acked", *during], f"refused produces answered {refused}"
