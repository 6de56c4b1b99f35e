"""The transaction coordinator SIGKILLed at each step of a commit, on a real 3-broker cluster.

Every broker runs with `ODRADEK_TXN_HOLD=<step>` (coordinator/transaction/hold.py): the
coordinator that reaches the step first holds the transaction there and writes its process id
into the hold file; the test SIGKILLs exactly that broker. Steps: `end_txn` (EndTxn arrived,
nothing written), `prepared` (PrepareCommit written, no marker yet: EndTxn was answered, the
new coordinator must write every marker) and `markers` (the first leader's markers are written,
the others not). In every case the transaction ends committed on every partition: a
read_committed reader sees each record once, no partition keeps an open transaction (its last
stable offset reaches its high watermark), and the producer's next transaction commits.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from coordinator.transaction.hold import DIR_ENV, ENV
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory, wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 10


def _create_topic(cluster: LocalCluster, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(30)
    wait_until(lambda: len(admin.list_topics(topic, 10).topics[topic].partitions) == PARTITIONS
               and all(p.leader >= 0 for p in admin.list_topics(topic, 10).topics[topic]
                       .partitions.values()), "the topic's leaders", 30)  # fmt: skip


def _send(producer: object, topic: str, tag: str) -> list[bytes]:
    values = []
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            value = f"{tag}-{p}-{i}".encode()
            producer.produce(topic, value=value, partition=p)  # type: ignore[attr-defined]
            values.append(value)
    producer.flush(30)  # type: ignore[attr-defined]
    return values


def _read_committed(bootstrap: str, topic: str, want: int) -> list[bytes]:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "enable.auto.commit": False})  # fmt: skip
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < want and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    time.sleep(1)  # anything more (a duplicate) would arrive now
    while (m := c.poll(0.2)) is not None:
        if not m.error():
            got.append(m.value())
    c.close()
    return got


def _open_transactions(bootstrap: str, topic: str) -> list[int]:
    """Partitions whose last stable offset is below the high watermark (an open txn)."""
    from confluent_kafka import Consumer, TopicPartition

    ends = {}
    for level in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "w", "isolation.level": level})
        ends[level] = [c.get_watermark_offsets(TopicPartition(topic, p), 10)[1]
                       for p in range(PARTITIONS)]  # fmt: skip
        c.close()
    return [
        p for p in range(PARTITIONS) if ends["read_committed"][p] != ends["read_uncommitted"][p]
    ]


def _broker_of(cluster: LocalCluster, pid: int) -> int:
    for status in cluster.status():
        if status.pid == pid:
            return status.id
    raise AssertionError(f"no broker has pid {pid}")


@pytest.mark.slow  # kills or pauses brokers
@pytest.mark.parametrize("step", ["end_txn", "prepared", "markers"])
def test_a_commit_survives_its_coordinator_killed_at_each_step(
    cluster_factory: ClusterFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    from confluent_kafka import Producer

    hold_dir = tmp_path / "holds"
    hold_dir.mkdir()
    monkeypatch.setenv(ENV, step)
    monkeypatch.setenv(DIR_ENV, str(hold_dir))
    cluster = cluster_factory(3, broker_settings={"transaction_state_log_num_partitions": 3})
    topic = f"txn-failover-{step}"
    _create_topic(cluster, topic)
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap,
                         "transactional.id": f"failover-{step}",
                         "transaction.timeout.ms": 60_000})  # fmt: skip
    producer.init_transactions(60)
    producer.begin_transaction()
    sent = _send(producer, topic, "first")
    outcome: list[object] = []
    committer = threading.Thread(
        target=lambda: outcome.append(_commit(producer)), name="commit", daemon=True
    )
    committer.start()
    held = hold_dir / f"txn-held-{step}"
    wait_until(lambda: held.exists() and held.read_text(), f"the hold at {step}", 60)
    pid = int(held.read_text().split()[0])
    cluster.kill(_broker_of(cluster, pid), "KILL")
    committer.join(120)
    assert outcome == [None], f"commit_transaction failed: {outcome}"
    got = _read_committed(cluster.kafka_bootstrap, topic, len(sent))
    assert sorted(got) == sorted(sent), "each committed record exactly once"
    wait_until(lambda: not _open_transactions(cluster.kafka_bootstrap, topic),
               "every partition's transaction to end", 60)  # fmt: skip
    producer.begin_transaction()  # the coordinator that took over goes on with the id
    more = _send(producer, topic, "second")
    producer.commit_transaction(60)
    got = _read_committed(cluster.kafka_bootstrap, topic, len(sent) + len(more))
    assert sorted(got) == sorted(sent + more)


def _commit(producer: object) -> object:
    try:
        producer.commit_transaction(90)  # type: ignore[attr-defined]
    except Exception as exc:  # reported by the test's assertion
        return exc
    return None


def _leaders(cluster: LocalCluster, topic: str) -> dict[int, int]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    parts = admin.list_topics(topic, 10).topics[topic].partitions
    return {p: meta.leader for p, meta in parts.items()}


@pytest.mark.slow  # kills or pauses brokers
def test_a_partition_leader_killed_midway_through_the_markers(
    cluster_factory: ClusterFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coordinator is held once the first leader has its markers; a leader still waiting
    for its marker is SIGKILLed; released, the coordinator writes that marker to the new
    leader. Every partition ends committed, and the killed replica, restarted, agrees."""
    from confluent_kafka import Producer
    from kafka import TopicPartition as KTp
    from kafka.admin import KafkaAdminClient

    hold_dir = tmp_path / "holds"
    hold_dir.mkdir()
    monkeypatch.setenv(ENV, "markers")
    monkeypatch.setenv(DIR_ENV, str(hold_dir))
    cluster = cluster_factory(3, broker_settings={"transaction_state_log_num_partitions": 3})
    topic = "txn-leader-failover"
    _create_topic(cluster, topic)
    leaders = _leaders(cluster, topic)
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap,
                         "transactional.id": "leader-failover"})  # fmt: skip
    producer.init_transactions(60)
    producer.begin_transaction()
    sent = _send(producer, topic, "txn")
    producer.commit_transaction(60)  # answered once PrepareCommit is written
    held = hold_dir / "txn-held-markers"
    wait_until(lambda: held.exists() and held.read_text(), "the hold after a first marker", 60)
    coordinator = _broker_of(cluster, int(held.read_text().split()[0]))
    marked = min(leaders.values())  # the first leader written to (markers.py: lowest id)
    victims = sorted(set(leaders.values()) - {marked, coordinator})
    assert victims, f"leaders {leaders}, coordinator {coordinator}: no leader left to kill"
    victim = victims[0]
    cluster.kill(victim, "KILL")
    moved = [p for p, b in leaders.items() if b == victim]
    wait_until(lambda: all(_leaders(cluster, topic)[p] not in (victim, -1) for p in moved),
               "new leaders for the killed broker's partitions", 60)  # fmt: skip
    (hold_dir / "txn-release-markers").write_text("go")
    got = _read_committed(cluster.kafka_bootstrap, topic, len(sent))
    assert sorted(got) == sorted(sent), "each committed record exactly once"
    wait_until(lambda: not _open_transactions(cluster.kafka_bootstrap, topic),
               "every partition's transaction to end", 60)  # fmt: skip
    cluster.start(victim)
    admin = KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap)
    try:

        def replica_agrees() -> bool:
            for p in moved:
                try:
                    state = admin.describe_producers([KTp(topic, p)], broker_id=victim)
                except Exception:  # not caught up or not serving yet
                    return False
                rows = state[KTp(topic, p)].active_producers
                if not rows or any(r.current_transaction_start_offset != -1 for r in rows):
                    return False
            return True

        wait_until(replica_agrees, "the restarted replica to hold the commit marker", 60)
    finally:
        admin.close()
