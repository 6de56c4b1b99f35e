"""The sync Producer's send() appending from the callers' threads, against one real broker.

Several threads share one Producer: every record is stored, and each thread's records are
stored in its send order (read back with a Consumer). A tiny buffer_memory makes send() block
until batches complete, then go on, losing nothing. With linger_ms=0 a lone send() is
acknowledged without a flush (nothing waits for more records to come).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from client import Admin, Consumer, NewTopic, Producer, TopicPartition
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from tests.fixtures.cluster import shared_cluster

pytestmark = pytest.mark.integration

WAIT_S = 30.0


@pytest.fixture(scope="module")
def cluster1(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    yield from shared_cluster(zk_server, tmp_path_factory, 1)


def _topic(bootstrap: str, name: str) -> str:
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(name, 1, 1)])
    return name


def _read_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        while len(values) < count:
            assert time.monotonic() < deadline, f"read {len(values)} of {count}"
            for records in consumer.poll(timeout_ms=500).values():
                values += [r.value for r in records]
    return values


def test_threads_sharing_a_producer_keep_each_threads_order(cluster1: LocalCluster) -> None:
    bootstrap = cluster1.bootstrap
    topic = _topic(bootstrap, "loop-threads")
    threads_n, per_thread = 4, 5_000
    with Producer(bootstrap, acks=1, batch_size=4096) as producer:

        def run(t: int) -> None:
            for i in range(per_thread):
                producer.send(topic, b"%d:%06d" % (t, i))

        threads = [threading.Thread(target=run, args=(t,)) for t in range(threads_n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        producer.flush()
    stored = _read_all(bootstrap, topic, threads_n * per_thread)
    assert len(stored) == threads_n * per_thread
    for t in range(threads_n):
        mine = [v for v in stored if v.startswith(b"%d:" % t)]
        assert mine == [b"%d:%06d" % (t, i) for i in range(per_thread)]


def test_a_tiny_buffer_blocks_send_then_proceeds_losing_nothing(cluster1: LocalCluster) -> None:
    bootstrap = cluster1.bootstrap
    topic = _topic(bootstrap, "loop-buffer")
    n = 3_000
    # Room for about 10 records of 1 KiB at a time: send() must wait for acknowledgements.
    with Producer(
        bootstrap, acks=1, batch_size=2048, max_request_size=10_240, buffer_memory=10_240
    ) as producer:
        futures = [producer.send(topic, b"%06d" % i + b"." * 1000) for i in range(n)]
        assert producer._client._acc.used_bytes <= 10_240
        metas = [f.get(WAIT_S) for f in futures]
    assert [m.offset for m in metas] == list(range(n))
    assert [v[:6] for v in _read_all(bootstrap, topic, n)] == [b"%06d" % i for i in range(n)]


def test_a_lone_send_with_linger_0_is_acknowledged_without_flush(cluster1: LocalCluster) -> None:
    bootstrap = cluster1.bootstrap
    topic = _topic(bootstrap, "loop-lone")
    with Producer(bootstrap, acks=1, linger_ms=0) as producer:
        producer.send(topic, b"warm").get(WAIT_S)
        done = threading.Event()
        future = producer.send(topic, b"alone")
        future.add_done_callback(lambda _f: done.set())
        assert done.wait(WAIT_S)  # nobody flushed: the sender was woken by the send itself
        assert future.get(0).offset == 1
        assert future.done() and future.exception() is None and not future.cancel()
