"""Real network partitions on a netns cluster (issue 11): brokers in their own namespaces,
faults as iptables DROP rules inside them (deploy/netns.py), so connections hang as with a
pulled cable.

- isolate: the leader of an RF=3, min.insync.replicas=2 partition is cut from everything.
  Leadership moves, acks=all produce goes on through the new leader; after heal the old leader
  rejoins the ISR and every replica holds the same bytes.
- cut ZooKeeper: the leader still reaches its peers and clients but not ZooKeeper. It fences
  itself (broker/zk_fence.py) before ZooKeeper may expire its session, so that
  once the controller has elected another leader, a produce sent straight to it (acks=1 or all)
  is refused with a retriable error, and an OffsetFetch for a group it coordinated gets
  NOT_COORDINATOR rather than its cached offsets. After heal it rejoins the ISR; the replicas
  are identical and hold every acknowledged record once, and none of the refused ones, and the
  new coordinator has the group's commit.

Root only (namespaces, iptables): skipped otherwise.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from client import Admin, Consumer, NewTopic, PartitionDescription, Producer, TopicPartition
from deploy.cluster import LocalCluster
from deploy.netns import NetLab
from protocol.api.group import (
    CommitPartition,
    CommitTopic,
    FindCoordinatorRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    TopicPartitions,
)
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
from protocol.batch import build_batch_from_values
from protocol.errors import NotCoordinatorError, NotLeaderForPartitionError, for_code
from protocol.schema import Records
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


def _ask(host: str, port: int, request: Any, timeout_ms: int = 10_000) -> Any:
    """One request straight to one broker (no client retries): its response, or None when the
    connection failed or no answer came."""
    from transport.connection import BrokerConnection

    async def send() -> Any:
        conn = await BrokerConnection.connect(host, port, connect_timeout_ms=2000)
        try:
            return await conn.send(request, timeout_ms=timeout_ms)
        finally:
            await conn.close()

    try:
        return asyncio.run(send())
    except Exception:
        return None


def _produce_raw(host: str, port: int, value: bytes, timeout_ms: int = 2000, acks: int = -1) -> int:
    """One batch straight to one broker: its error code, or -1 when no answer came."""
    data = Records(build_batch_from_values([value], int(time.time() * 1000)))
    topics = [ProduceTopic(TOPIC, [ProducePartition(0, data)])]
    resp = _ask(host, port, ProduceRequest(acks, timeout_ms, topics))
    return -1 if resp is None else int(resp.topics[0].partitions[0].error_code)


def _group_coordinated_by(cluster: LocalCluster, broker_id: int) -> str:
    """A group id whose coordinator is `broker_id`, with offset 20 committed for partition 0."""
    host, port = cluster.broker_host(broker_id), cluster.broker(broker_id).port

    def find() -> str | None:
        for i in range(64):
            resp = _ask(host, port, FindCoordinatorRequest(f"fenced-{i}"))
            if resp is not None and resp.error_code == 0 and resp.node_id == broker_id:
                return f"fenced-{i}"
        return None

    group = _wait(find, f"a group coordinated by broker {broker_id}")
    commit = OffsetCommitRequest(group, -1, "", [CommitTopic(TOPIC, [CommitPartition(0, 20)])])

    def committed() -> bool:
        resp = _ask(host, port, commit)
        return resp is not None and resp.topics[0].partitions[0].error_code == 0

    _wait(committed, "an offset commit")
    return group


def _fetch_offset(host: str, port: int, group: str) -> tuple[int, int]:
    """(error code, offset of partition 0) as one broker answers OffsetFetch; (-1, -1) if none."""
    resp = _ask(host, port, OffsetFetchRequest(group, [TopicPartitions(TOPIC, [0])]))
    if resp is None:
        return -1, -1
    if resp.error_code:
        return int(resp.error_code), -1
    return 0, int(resp.topics[0].partitions[0].offset)


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


@pytest.mark.slow  # cuts a broker from ZooKeeper
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


@pytest.mark.slow  # cuts a broker from ZooKeeper
def test_leader_cut_from_zookeeper_fences_itself(cluster_factory: ClusterFactory) -> None:
    cluster, lab, leader, others = _start(cluster_factory)
    host, port = cluster.broker_host(leader), cluster.broker(leader).port
    before = [f"before-{i}".encode() for i in range(20)]
    assert _send(cluster.bootstrap, before) == list(range(20))
    assert _produce_raw(host, port, b"acked") == 0  # offset 20
    group = _group_coordinated_by(cluster, leader)
    assert _fetch_offset(host, port, group) == (0, 20)

    lab.cut_zookeeper(leader)
    assert lab.fault(leader) == "cut_zookeeper"

    def moved() -> int:
        p = _partition(cluster, others)
        return p.leader if p is not None and p.leader in others else 0

    _wait(moved, "a new leader elected by the controller")
    # It fenced itself before ZooKeeper could expire its session, so by the time another leader
    # was elected it acknowledges nothing, not even acks=1, and answers no coordinator read
    # from its cache: the first answers already say so.
    assert _produce_raw(host, port, b"zombie", acks=1) == NotLeaderForPartitionError.code
    assert _produce_raw(host, port, b"zombie") == NotLeaderForPartitionError.code
    assert _fetch_offset(host, port, group) == (NotCoordinatorError.code, -1)
    assert for_code(NotLeaderForPartitionError.code).retriable
    assert _partition(cluster, [leader]) is not None  # still reachable: not a pulled cable

    during = [f"during-{i}".encode() for i in range(20)]
    assert _send(_bootstrap(cluster, others), during) == list(range(21, 41))

    lab.heal(leader)
    _wait_healed(cluster, leader)
    got = _read(cluster.bootstrap, 41)
    assert got == [*before, b"acked", *during], "a refused produce was kept"
    # the commit it acknowledged is the new coordinator's too
    assert _wait(lambda: _committed_anywhere(cluster, others, group), "the group's offset") == 20


def _committed_anywhere(cluster: LocalCluster, ask: list[int], group: str) -> int | None:
    for b in ask:
        code, offset = _fetch_offset(cluster.broker_host(b), cluster.broker(b).port, group)
        if code == 0:
            return offset
    return None
