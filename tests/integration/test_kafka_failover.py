"""A Kafka client's idempotent producer through leader failover, against real processes.

confluent-kafka (librdkafka) with `enable.idempotence=true` and acks=all writes steadily while
the partition's leader is SIGKILLed and restarted, several times. Afterwards every acknowledged
message is in the log exactly once, at the offset its acknowledgement gave, and the log holds
the messages in send order (an unacknowledged one at most once). This needs InitProducerId
(producer ids from ZooKeeper blocks) and the brokers' per-producer sequence checks.
"""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from client import Admin, Consumer
from client.types import TopicPartition
from deploy.cluster import LocalCluster
from protocol.batch import decode_records, iter_batches
from tests.fixtures.cluster import ClusterFactory, seeded_rng

pytestmark = pytest.mark.integration

TOPIC = "failover"
KILLS = 3
WAIT_S = 60.0


def _leader(cluster: LocalCluster) -> int:
    with Admin(cluster.bootstrap) as admin:
        (desc,) = admin.describe_topics([TOPIC])
        return desc.partitions[0].leader


def _wait_full_isr(cluster: LocalCluster) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        with Admin(cluster.bootstrap) as admin:
            (desc,) = admin.describe_topics([TOPIC])
        p = desc.partitions[0]
        if p.leader >= 0 and len(p.isr) == 3:
            return
        time.sleep(0.2)
    raise AssertionError(f"ISR not full again: {desc}")


class SteadyProducer(threading.Thread):
    """Sends v-0, v-1, ... with a librdkafka idempotent producer until stopped."""

    def __init__(self, bootstrap: str, timeout_ms: int = 120_000) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "linger.ms": 2, "message.timeout.ms": timeout_ms, "log_level": 2,
        })  # fmt: skip
        self.acked: dict[int, int] = {}  # i -> offset
        self.failed: dict[int, str] = {}
        self.sent = 0
        self.stop = threading.Event()

    def _done(self, i: int) -> Any:
        def cb(err: Any, msg: Any) -> None:
            if err is None:
                self.acked[i] = msg.offset()
            else:
                self.failed[i] = str(err)

        return cb

    def run(self) -> None:
        while not self.stop.is_set():
            i = self.sent
            self.producer.produce(TOPIC, value=f"v-{i}".encode(), partition=0,
                                  on_delivery=self._done(i))  # fmt: skip
            self.sent += 1
            self.producer.poll(0.002)
        assert self.producer.flush(120) == 0


def _read_all(bootstrap: str, end: int) -> list[tuple[int, bytes]]:
    tp = TopicPartition(TOPIC, 0)
    out: list[tuple[int, bytes]] = []
    with Consumer(bootstrap) as c:
        c.assign([tp])
        c.seek_to_beginning(tp)
        deadline = time.monotonic() + WAIT_S
        while (not out or out[-1][0] < end - 1) and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=200).values():
                out += [(r.offset, r.value or b"") for r in records]
    return out


@pytest.mark.slow  # kills or pauses brokers
def test_idempotent_librdkafka_producer_survives_leader_kills(
    cluster_factory: ClusterFactory,
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    rng = seeded_rng()
    cluster = cluster_factory(brokers=3)
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    futures = admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})])
    for f in futures.values():
        f.result(timeout=30)
    producer = SteadyProducer(cluster.kafka_bootstrap)
    producer.start()
    for _ in range(KILLS):
        time.sleep(rng.uniform(0.5, 1.5))
        leader = _leader(cluster)
        cluster.kill(leader, "KILL")
        time.sleep(rng.uniform(0.5, 2.0))
        cluster.start(leader)
        _wait_full_isr(cluster)
    time.sleep(0.5)
    producer.stop.set()
    producer.join(timeout=150)
    assert not producer.is_alive()
    assert not producer.failed, f"deliveries failed: {list(producer.failed.items())[:5]}"
    assert len(producer.acked) == producer.sent > 0
    end = max(producer.acked.values()) + 1
    log = _read_all(cluster.bootstrap, end)
    assert [o for o, _ in log] == list(range(len(log))), "offsets are contiguous"
    values = [int(v.decode().split("-")[1]) for _, v in log]
    assert len(values) == len(set(values)), "no message is stored twice"
    assert values == sorted(values), "messages are stored in send order"
    for i, offset in producer.acked.items():
        assert log[offset][1] == f"v-{i}".encode(), f"v-{i} is not at its acknowledged offset"


def _stored(cluster: LocalCluster, broker_id: int) -> list[tuple[int, int, int]]:
    """(offset, producer epoch, i of v-i) of every record in a replica's segment files."""
    part = Path(cluster.broker(broker_id).log_dir) / f"{TOPIC}-0"
    out: list[tuple[int, int, int]] = []
    for segment in sorted(part.glob("*.log")):
        buf = segment.read_bytes()
        for pos, _ in iter_batches(buf):
            header, records = decode_records(buf, pos)
            out += [(r.offset, header.producer_epoch, int(r.value.split(b"-")[1]))
                    for r in records if r.value is not None]  # fmt: skip
    return out


@pytest.mark.slow  # kills or pauses brokers
def test_expiring_batches_keep_the_log_in_send_order(cluster_factory: ClusterFactory) -> None:
    """A short delivery timeout, two brokers killed at once so that sends expire (min ISR 2).

    What the broker owes, checked on every replica's files: offsets contiguous, replicas
    identical, every acknowledged message at the offset its acknowledgement gave, acknowledged
    messages in send order, and within one producer epoch every message once and in send
    order (the sequence checks). What librdkafka does not promise: when part of a batch that
    the broker stored expires, librdkafka bumps its epoch (KIP-360) and renumbers the rest from
    sequence 0, so they are stored again under the new epoch (librdkafka#4953; Kafka brokers
    see the same). So a message may also appear once more, under an older epoch, before its
    acknowledged copy, and never after it.
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    rng = seeded_rng()
    cluster = cluster_factory(brokers=3)
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    for f in admin.create_topics(
        [NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})]
    ).values():
        f.result(timeout=30)
    producer = SteadyProducer(cluster.kafka_bootstrap, timeout_ms=3000)
    producer.start()
    for _ in range(2):
        time.sleep(rng.uniform(0.5, 1.0))
        victims = rng.sample(cluster.broker_ids, 2)
        for v in victims:
            cluster.kill(v, "KILL")
        time.sleep(4.5)  # past the delivery timeout: queued sends expire
        for v in victims:
            cluster.start(v)
        _wait_full_isr(cluster)
    time.sleep(1.0)
    producer.stop.set()
    producer.join(timeout=150)
    assert not producer.is_alive()
    assert producer.failed, "the kills should have made some sends expire"
    assert producer.acked
    _read_all(cluster.bootstrap, max(producer.acked.values()) + 1)  # every replica caught up
    _wait_full_isr(cluster)
    replicas = [_stored(cluster, b) for b in cluster.broker_ids]
    assert replicas[0] == replicas[1] == replicas[2], "replicas hold the same records"
    stored = replicas[0]
    assert [o for o, _, _ in stored] == list(range(len(stored))), "offsets are contiguous"
    by_offset = {o: i for o, _, i in stored}
    acked = sorted(producer.acked.items())
    for i, offset in acked:
        assert by_offset.get(offset) == i, f"v-{i} is not at its acknowledged offset {offset}"
    offsets = [o for _, o in acked]
    assert offsets == sorted(offsets), "acknowledged messages are stored in send order"
    per_epoch: dict[int, list[int]] = {}
    for _, epoch, i in stored:
        per_epoch.setdefault(epoch, []).append(i)
    for epoch, values in per_epoch.items():
        assert all(a < b for a, b in itertools.pairwise(values)), (
            f"epoch {epoch}: a message stored twice or out of send order"
        )
    last_copy: dict[int, int] = {}
    for o, _, i in stored:
        last_copy[i] = o
    for i, offset in acked:
        assert last_copy[i] == offset, f"v-{i} is stored again after it was acknowledged"
