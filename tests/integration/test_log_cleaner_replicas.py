"""A compacted RF 3 topic on three brokers: written with keys and tombstones by confluent-kafka
(through the Kafka listener) and by the native producer while the partition's leader is
SIGKILLed and restarted, then a last acknowledged round per key. Every broker cleans its own
copy (followers too, below their own high watermark); after cleaning, the records each replica
holds give the same latest value per key, the one last acknowledged, and reads through both
doors agree with them."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from confluent_kafka import Producer as KafkaProducer

from broker.log.cleaner.manager import CHECKPOINT_FILE
from client import Admin, Consumer, NewTopic, Producer, TopicPartition
from deploy.cluster import LocalCluster
from protocol.batch import decode_all, iter_batches
from tests.fixtures.cluster import ClusterFactory, wait_until

pytestmark = pytest.mark.integration

TOPIC = "profiles"
KEYS = 30
CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "2048",
    "min.cleanable.dirty.ratio": "0.01",
    "min.insync.replicas": "2",
}


def _leader(bootstrap: str) -> int:
    with Admin(bootstrap) as admin:
        return admin.describe_topics([TOPIC])[0].partitions[0].leader


def _native_round(bootstrap: str, round_: int, expected: dict[bytes, bytes | None]) -> None:
    with Producer(bootstrap, acks="all", retries=20) as producer:
        for i in range(KEYS):
            key = b"n-%d" % i
            value = None if (i % 5 == 0 and round_ % 2) else b"native %d/%d" % (round_, i)
            producer.send(TOPIC, value, key=key, partition=0).get(timeout=60)
            expected[key] = value


def _kafka_round(kafka: str, round_: int, expected: dict[bytes, bytes | None]) -> None:
    producer = KafkaProducer({"bootstrap.servers": kafka, "enable.idempotence": True,
                              "linger.ms": 0, "message.timeout.ms": 60_000})  # fmt: skip
    errors: list[str] = []

    def done(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    for i in range(KEYS):
        key = b"c-%d" % i
        value = None if (i % 5 == 1 and round_ % 2) else b"kafka %d/%d" % (round_, i)
        producer.produce(TOPIC, value, key=key, partition=0, on_delivery=done)
        producer.flush(60)
        if not errors:
            expected[key] = value
    assert producer.flush(60) == 0
    assert not errors, errors


def _replica_latest(cluster: LocalCluster, broker: int) -> dict[bytes, bytes | None] | None:
    """The latest value per key in the replica's segment files (what it serves); None when a
    file went away under the read (the broker's cleaner swapped it): read again."""
    latest: dict[bytes, bytes | None] = {}
    directory = Path(cluster.broker(broker).log_dir) / f"{TOPIC}-0"
    try:
        files = [path.read_bytes() for path in sorted(directory.glob("*.log"))]
    except FileNotFoundError:
        return None
    for data in files:
        whole = 0
        while whole + 12 <= len(data):
            size = 12 + int.from_bytes(data[whole + 8 : whole + 12], "big")
            if whole + size > len(data):
                break  # the active segment's append in flight
            whole += size
        assert sum(h.size for _, h in iter_batches(data[:whole])) == whole
        for record in decode_all(data[:whole]):
            assert record.key is not None
            latest[record.key] = record.value
    return latest


def _cleaned(cluster: LocalCluster, broker: int) -> bool:
    path = Path(cluster.broker(broker).log_dir) / CHECKPOINT_FILE
    return path.exists() and f"{TOPIC} 0 " in path.read_text()


def _read(bootstrap: str) -> dict[bytes, bytes | None]:
    with Admin(bootstrap) as admin:
        end = admin.list_offsets({TopicPartition(TOPIC, 0): -1})[TopicPartition(TOPIC, 0)].offset
    latest: dict[bytes, bytes | None] = {}
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(TOPIC, 0)])
        while consumer.position(TopicPartition(TOPIC, 0)) < end:
            for records in consumer.poll(timeout_ms=1000).values():
                for r in records:
                    assert r.key is not None
                    latest[r.key] = r.value
    return latest


@pytest.mark.slow  # kills or pauses brokers
def test_every_replica_serves_the_same_latest_value_per_key(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(brokers=3, broker_settings={"log_cleaner_backoff_ms": 300})
    bootstrap, kafka = cluster.bootstrap, cluster.kafka_bootstrap
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 3, CONFIGS)])
    expected: dict[bytes, bytes | None] = {}
    for round_ in range(2):
        _native_round(bootstrap, round_, expected)
        _kafka_round(kafka, round_, expected)
    leader = _leader(bootstrap)
    writers = [
        threading.Thread(target=_native_round, args=(bootstrap, 2, {})),
        threading.Thread(target=_kafka_round, args=(kafka, 2, {})),
    ]
    for w in writers:
        w.start()
    cluster.kill(leader, "KILL")
    for w in writers:
        w.join(120)
        assert not w.is_alive()
    cluster.start(leader)
    for round_ in (3, 4):  # a last acknowledged value for every key
        _native_round(bootstrap, round_, expected)
        _kafka_round(kafka, round_, expected)
    wait_until(lambda: all(_cleaned(cluster, b) for b in (1, 2, 3)), "every replica cleaned", 90)

    def converged() -> bool:
        return all(_replica_latest(cluster, b) == expected for b in (1, 2, 3))

    wait_until(converged, "every replica holding the last values", 60)
    assert _read(bootstrap) == expected
    sizes = [sum(p.stat().st_size for p in (Path(cluster.broker(b).log_dir) / f"{TOPIC}-0")
                 .glob("*.log")) for b in (1, 2, 3)]  # fmt: skip
    assert all(size > 0 for size in sizes)
    assert os.environ.get("ODRADEK_CLEANER_HOLD") is None
