"""A Kafka client's idempotent producer through leader failover, against real processes.

confluent-kafka (librdkafka) with `enable.idempotence=true` and acks=all writes steadily while
the partition's leader is SIGKILLed and restarted, several times. Afterwards every acknowledged
message is in the log exactly once, at the offset its acknowledgement gave, and the log holds
the messages in send order (an unacknowledged one at most once). This needs InitProducerId
(producer ids from ZooKeeper blocks) and the brokers' per-producer sequence checks.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

from client.sync import Admin, Consumer
from client.types import TopicPartition
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory

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
                out += [(r.offset, r.value) for r in records]
    return out


def test_idempotent_librdkafka_producer_survives_leader_kills(
    cluster_factory: ClusterFactory,
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
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


def test_expiring_batches_keep_the_log_in_send_order(cluster_factory: ClusterFactory) -> None:
    """A short delivery timeout, two brokers killed at once so that sends expire (min ISR 2):
    what was acknowledged is there exactly once at its offset, and nothing, acknowledged or
    not, is stored out of send order or twice (librdkafka bumps its epoch, KIP-360)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
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
    end = max(producer.acked.values()) + 1
    log = _read_all(cluster.bootstrap, end)
    assert [o for o, _ in log] == list(range(len(log))), "offsets are contiguous"
    values = [int(v.decode().split("-")[1]) for _, v in log]
    assert len(values) == len(set(values)), "no message is stored twice"
    assert values == sorted(values), "messages are stored in send order"
    for i, offset in producer.acked.items():
        assert log[offset][1] == f"v-{i}".encode(), f"v-{i} is not at its acknowledged offset"
