"""The client library against real broker processes and a real ZooKeeper."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from client import (
    Admin,
    AsyncAdmin,
    AsyncConsumer,
    AsyncProducer,
    Consumer,
    NewTopic,
    Producer,
    TopicPartition,
)
from client.partitioner import partition_for_key
from deploy.cluster import LocalCluster
from protocol.errors import (
    LeaderNotAvailableError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from tests.fixtures.cluster import ClusterFactory, alive_bootstrap

pytestmark = pytest.mark.integration


def _wait_for_leaders(admin: Admin, topic: str, timeout_s: float = 30) -> dict[int, int]:
    deadline = time.monotonic() + timeout_s
    while True:
        (desc,) = admin.describe_topics([topic])
        leaders = {p.partition: p.leader for p in desc.partitions}
        if not desc.error_code and leaders and all(v >= 0 for v in leaders.values()):
            return leaders
        assert time.monotonic() < deadline, desc
        time.sleep(0.2)


def _consume_all(consumer: Consumer, want: int, timeout_s: float = 30) -> list:
    got: list = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(records)
    return got


def test_sync_clients_round_trip_with_keys_and_headers(cluster3: LocalCluster) -> None:
    bootstrap = cluster3.bootstrap
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic("client-keys", 4, 1)])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("client-keys", 4, 1)])
        assert "client-keys" in admin.list_topics()
        _wait_for_leaders(admin, "client-keys")
    keys = [b"user-%d" % i for i in range(40)]
    with Producer(bootstrap, linger_ms=2) as producer:
        futures = [
            producer.send("client-keys", b"value-%d" % i, key=k, headers=[("n", b"%d" % i)])
            for i, k in enumerate(keys)
        ]
        producer.flush()
        metas = [f.result(30) for f in futures]
    for k, m in zip(keys, metas, strict=True):
        assert m.partition == partition_for_key(k, 4)  # where Kafka would put the key
    tps = [TopicPartition("client-keys", p) for p in range(4)]
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign(tps)
        got = _consume_all(consumer, 40)
        assert sorted(r.value for r in got) == sorted(b"value-%d" % i for i in range(40))
        for r in got:
            i = int(r.value.split(b"-")[1])
            assert r.key == keys[i] and list(r.headers) == [("n", b"%d" % i)]
            assert r.partition == partition_for_key(r.key, 4)
        ends = consumer.end_offsets(tps)
        assert sum(ends.values()) == 40
        assert all(consumer.position(tp) == ends[tp] for tp in tps)


async def test_async_bulk_and_many_partitions_per_fetch(cluster3: LocalCluster) -> None:
    bootstrap = cluster3.bootstrap
    async with AsyncAdmin(bootstrap) as admin:
        await admin.create_topics([NewTopic("client-bulk", 9, 1)])
        for _ in range(100):
            (desc,) = await admin.describe_topics(["client-bulk"])
            if desc.partitions and all(p.leader >= 0 for p in desc.partitions):
                break
            await asyncio.sleep(0.2)
    values = [b"%07d" % i for i in range(50_000)]
    async with AsyncProducer(bootstrap) as producer:
        metas = await (await producer.send_batch("client-bulk", values))
        single = await (await producer.send("client-bulk", b"one more", partition=4))
    assert sum(m.record_count for m in metas) == 50_000
    assert single.partition == 4
    tps = [TopicPartition("client-bulk", p) for p in range(9)]
    async with AsyncConsumer(
        bootstrap, auto_offset_reset="earliest", max_poll_records=10_000
    ) as consumer:
        consumer.assign(tps)
        got: list = []
        deadline = time.monotonic() + 60
        while len(got) < 50_001 and time.monotonic() < deadline:
            for records in (await consumer.poll(timeout_ms=500)).values():
                got.extend(records)
    assert sorted(r.value for r in got) == sorted([*values, b"one more"])
    per_partition: dict[int, list[int]] = {}
    for r in got:
        per_partition.setdefault(r.partition, []).append(r.offset)
    assert all(offs == list(range(len(offs))) for offs in per_partition.values())


@pytest.mark.slow  # kills or pauses brokers
def test_produce_waits_out_a_dead_leader_and_data_survives(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(2)
    bootstrap = cluster.bootstrap
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic("client-restart", 2, 1)])
        leaders = _wait_for_leaders(admin, "client-restart")
    victim = leaders[0]
    consumer = Consumer(bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=200)
    consumer.assign([TopicPartition("client-restart", 0)])
    with Producer(bootstrap, retry_backoff_ms=100, delivery_timeout_ms=90_000) as producer:
        before = [producer.send("client-restart", b"before-%d" % i, partition=0) for i in range(5)]
        assert [f.result(30).offset for f in before] == [0, 1, 2, 3, 4]
        assert [r.value for r in _consume_all(consumer, 5)][-1] == b"before-4"
        cluster.kill(victim)
        assert consumer.poll(timeout_ms=500) == {}  # its leader is gone: nothing, no error
        with Admin(bootstrap) as admin:  # the controller marks the partition offline
            deadline = time.monotonic() + 30
            while True:
                (desc,) = admin.describe_topics(["client-restart"])
                if desc.partitions[0].leader == -1:
                    break
                assert time.monotonic() < deadline, desc
                time.sleep(0.3)
        during = [producer.send("client-restart", b"during-%d" % i, partition=0) for i in range(5)]
        time.sleep(1.0)
        assert not any(f.done() for f in during)  # retrying, not failed
        cluster.start(victim)
        assert [f.result(60).offset for f in during] == [5, 6, 7, 8, 9]
    with consumer:  # the same consumer carries on from its position once the leader is back
        got = _consume_all(consumer, 5)
    assert [(r.offset, r.value) for r in got] == [(5 + i, b"during-%d" % i) for i in range(5)]
    with Consumer(bootstrap, auto_offset_reset="earliest") as fresh:
        fresh.assign([TopicPartition("client-restart", 0)])
        got = _consume_all(fresh, 10)
    assert [r.value for r in got] == [b"before-%d" % i for i in range(5)] + [
        b"during-%d" % i for i in range(5)
    ]


@pytest.mark.slow  # kills or pauses brokers
def test_admin_list_offsets_waits_out_a_dead_leader(cluster_factory: ClusterFactory) -> None:
    """As Kafka's AdminClient: a partition without a leader is asked again until the request
    timeout; a topic that does not exist fails at once."""
    cluster = cluster_factory(2)
    topic, tp = "client-offsets", TopicPartition("client-offsets", 0)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
        victim = _wait_for_leaders(admin, topic)[0]
    with Producer(cluster.bootstrap) as producer:
        sent = [producer.send(topic, b"%d" % i, partition=0) for i in range(3)]
        assert [f.result(30).offset for f in sent] == [0, 1, 2]
    cluster.kill(victim)
    other = alive_bootstrap(cluster)
    with Admin(other) as admin:  # the controller marks the partition offline
        deadline = time.monotonic() + 30
        while admin.describe_topics([topic])[0].partitions[0].leader != -1:
            assert time.monotonic() < deadline
            time.sleep(0.3)
    with Admin(other, request_timeout_ms=500) as admin:
        with pytest.raises(LeaderNotAvailableError):  # still no leader after 0.5 s of asking
            admin.list_offsets({tp: -1})
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.list_offsets({TopicPartition("client-no-such-topic", 0): -1})
    restart = threading.Timer(1.0, cluster.start, args=(victim,))
    restart.start()
    try:
        with Admin(other, request_timeout_ms=60_000) as admin:
            found = admin.list_offsets({tp: -1})
            assert found[tp].offset == 3
            assert admin.list_offsets({tp: -2})[tp].offset == 0
    finally:
        restart.join()
