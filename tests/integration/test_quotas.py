"""Client quotas against real brokers: set with `odradek quotas` (kafka-configs.sh's flags),
kept in ZooKeeper as Kafka keeps them, followed by every broker, and enforced as Kafka does.

- A confluent-kafka producer under producer_byte_rate=100 KiB/s: the bytes acknowledged over
  the run stay near the quota (bounded by what Kafka's 11-sample window allows, with a wide
  margin), librdkafka is told to back off (its throttle callback fires), and the broker's
  Prometheus throttle metric counts it.
- A confluent-kafka consumer under consumer_byte_rate: the same for the bytes it receives.
- A quota set through one broker throttles a produce on the other within a second; removing it
  unthrottles; describe returns what was set, and the znode is Kafka's JSON.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.api.metadata import MetadataRequest
from protocol.api.produce import ProduceResponse
from protocol.api.quotas import AlterClientQuotasRequest, QuotaAlteration, QuotaEntityPart, QuotaOp
from tests.fixtures.cluster import run_odradek, shared_cluster
from tests.unit.broker.helpers import batch, produce
from transport.connection import BrokerConnection

pytestmark = pytest.mark.integration

QUOTA = 102_400  # 100 KiB/s
WINDOW_S = 10  # quota.window.num - 1 full windows of 1 s: what a first burst may use


@pytest.fixture(scope="module")
def cluster(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """One cluster for the module's tests, which name their topics, clients and principals
    apart (uuids) and only read and write."""
    yield from shared_cluster(zk_server, tmp_path_factory, 2)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def odradek(cluster: LocalCluster, *args: str) -> str:
    done = run_odradek(*args, "--bootstrap", cluster.bootstrap)
    assert done.returncode == 0, done.stderr
    return done.stdout


def create_topic(cluster: LocalCluster, topic: str) -> None:
    odradek(cluster, "topics", "create", topic, "--partitions", "1", "--replication-factor", "1")


def scrape(cluster: LocalCluster, metric: str, client_id: str) -> float:
    """The sum over brokers of `metric`'s samples labelled with `client_id`."""
    state = cluster.state
    assert state is not None
    total = 0.0
    for b in state.brokers:
        if not b.metrics_port:
            continue
        url = f"http://{b.host or state.host}:{b.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as resp:
            text = resp.read().decode()
        for line in text.splitlines():
            if line.startswith(metric + "{") and f'client_id="{client_id}"' in line:
                total += float(line.rsplit(" ", 1)[1])
    return total


def test_producer_bounded_by_producer_byte_rate(cluster: LocalCluster) -> None:
    from confluent_kafka import Producer

    topic, client_id = _name("quota-p"), _name("qp")
    create_topic(cluster, topic)
    odradek(cluster, "quotas", "alter", "--entity-type", "clients", "--entity-name", client_id,
            "--add-config", f"producer_byte_rate={QUOTA}")  # fmt: skip
    described = json.loads(odradek(cluster, "quotas", "describe", "--entity-type", "clients",
                                   "--entity-name", client_id, "-o", "json"))  # fmt: skip
    assert described["quotas"] == [{"user": None, "client_id": client_id,
                          "quotas": {"producer_byte_rate": float(QUOTA)}}]  # fmt: skip
    throttles: list[float] = []
    acked = [0]

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked[0] += len(msg.value())

    producer = Producer({
        "bootstrap.servers": cluster.kafka_bootstrap, "client.id": client_id, "linger.ms": 5,
        "queue.buffering.max.messages": 2000,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })  # fmt: skip
    value = b"x" * 10_000
    run_s = 8.0
    started = time.monotonic()
    while time.monotonic() - started < run_s:
        try:
            producer.produce(topic, value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    elapsed = time.monotonic() - started
    done = acked[0]
    producer.purge()
    producer.flush(10)
    # Kafka's window lets about QUOTA * max(elapsed, 10 s) through, plus the request in
    # flight when the throttle started; unthrottled, localhost takes tens of MB in 8 s
    allowed = QUOTA * (elapsed + WINDOW_S) * 1.5 + 2 * 1024 * 1024
    assert QUOTA <= done <= allowed, (done, allowed)
    assert throttles and max(throttles) > 0
    assert scrape(cluster, "odradek_server_produce_throttle_time_seconds_total", client_id) > 0
    # Kafka's beans, as Prometheus' JMX exporter names them: the window's rate and throttle
    assert scrape(cluster, "kafka_server_produce_byte_rate", client_id) > 0
    assert scrape(cluster, "kafka_server_produce_throttle_time", client_id) > 0


def test_consumer_bounded_by_consumer_byte_rate(cluster: LocalCluster) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, client_id = _name("quota-c"), _name("qc")
    create_topic(cluster, topic)
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap, "linger.ms": 5})
    value = b"y" * 10_000
    total = 8 * 1024 * 1024
    for _ in range(total // len(value)):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(30) == 0
    odradek(cluster, "quotas", "alter", "--entity-type", "clients", "--entity-name", client_id,
            "--add-config", f"consumer_byte_rate={QUOTA}")  # fmt: skip
    throttles: list[float] = []
    consumer = Consumer({
        "bootstrap.servers": cluster.kafka_bootstrap, "client.id": client_id,
        "group.id": _name("g"), "enable.auto.commit": False,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    run_s = 8.0
    started = time.monotonic()
    try:
        while time.monotonic() - started < run_s:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got += len(msg.value())
    finally:
        elapsed = time.monotonic() - started
        consumer.close()
    # one fetch of max.partition.fetch.bytes (1 MiB) may come before the throttle, and the
    # consumer prefetches; unthrottled, all 8 MiB arrive in well under a second
    allowed = QUOTA * (elapsed + WINDOW_S) * 1.5 + 2 * 1024 * 1024
    assert 0 < got <= allowed < total, (got, allowed)
    assert throttles and max(throttles) > 0
    assert scrape(cluster, "odradek_server_fetch_throttle_time_seconds_total", client_id) > 0
    assert scrape(cluster, "kafka_server_fetch_byte_rate", client_id) > 0


def _alter(client_id: str, value: float | None) -> AlterClientQuotasRequest:
    op = (
        QuotaOp("producer_byte_rate", 0.0, remove=True)
        if value is None
        else QuotaOp("producer_byte_rate", value)
    )
    return AlterClientQuotasRequest(
        [QuotaAlteration([QuotaEntityPart("client-id", client_id)], [op])]
    )


async def _produce_throttle(host: str, port: int, topic: str, client_id: str) -> int:
    conn = await BrokerConnection.connect(host, port, client_id=client_id)
    try:
        resp: ProduceResponse = await conn.send(produce(topic, 0, batch(count=1, size=800_000)))
        assert resp.topics[0].partitions[0].error_code == 0, resp
        return resp.throttle_time_ms
    finally:
        await conn.close()


def test_a_change_through_one_broker_throttles_on_the_other_within_a_second(
    cluster: LocalCluster,
) -> None:
    import asyncio

    state = cluster.state
    assert state is not None
    topic, client_id = _name("quota-x"), _name("qx")
    create_topic(cluster, topic)

    async def scenario() -> None:
        first = state.brokers[0]
        host = first.host or state.host
        conn = await BrokerConnection.connect(host, first.port, client_id="admin")
        meta = await conn.send(MetadataRequest([topic]))
        leader_id = meta.topics[0].partitions[0].leader
        leader = next(b for b in state.brokers if b.id == leader_id)
        other = next(b for b in state.brokers if b.id != leader_id)
        await conn.close()
        lhost, ohost = leader.host or state.host, other.host or state.host
        assert await _produce_throttle(lhost, leader.port, topic, client_id) == 0
        admin = await BrokerConnection.connect(ohost, other.port, client_id="admin")
        # 50 kB/s: one 800 kB batch is over what its 10 s window allows at once
        resp = await admin.send(_alter(client_id, 50_000))
        assert resp.entries[0].error_code == 0
        deadline = time.monotonic() + 1.0
        while await _produce_throttle(lhost, leader.port, topic, client_id) == 0:
            assert time.monotonic() < deadline, "the leader did not apply the quota in 1 s"
        resp = await admin.send(_alter(client_id, None))
        assert resp.entries[0].error_code == 0
        deadline = time.monotonic() + 1.0
        while await _produce_throttle(lhost, leader.port, topic, client_id) > 0:
            assert time.monotonic() < deadline, "the leader did not remove the quota in 1 s"
        await admin.close()

    asyncio.run(scenario())
    described = json.loads(odradek(cluster, "quotas", "describe", "-o", "json"))
    assert [d for d in described["quotas"] if d["client_id"] == client_id] == []


def test_quota_znode_is_kafkas_and_bad_keys_are_refused(cluster: LocalCluster) -> None:
    user = _name("alice")
    odradek(cluster, "quotas", "alter", "--entity-type", "users", "--entity-name", user,
            "--entity-type", "clients", "--entity-default",
            "--add-config", "producer_byte_rate=1024,request_percentage=12.5")  # fmt: skip
    out = odradek(cluster, "quotas", "describe", "--entity-type", "users", "--entity-name",
                  user, "--entity-type", "clients", "--entity-default")  # fmt: skip
    assert f"user {user}, default client-id" in out and "request_percentage" in out
    from kazoo.client import KazooClient

    state = cluster.state
    assert state is not None
    zk = KazooClient(hosts=state.zookeeper.connect)
    zk.start(timeout=15)
    try:
        data, _ = zk.get(f"/config/users/{user}/clients/<default>")
        changes = zk.get_children("/config/changes")
        paths = [json.loads(zk.get(f"/config/changes/{c}")[0])["entity_path"] for c in changes]
    finally:
        zk.stop()
        zk.close()
    assert json.loads(data) == {
        "version": 1,
        "config": {"producer_byte_rate": "1024", "request_percentage": "12.5"},
    }
    assert f"users/{user}/clients/<default>" in paths
    bad = run_odradek("quotas", "alter", "--bootstrap", cluster.bootstrap, "--entity-type",
                      "clients", "--entity-name", "c", "--add-config", "bogus_rate=1")  # fmt: skip
    assert bad.returncode != 0 and "Invalid configuration key bogus_rate" in bad.stderr
