"""kafka-python's incremental fetch sessions (KIP-227) against a real broker, with the timing
test_kafka_consumer of kafka-python's suite leaves to chance made certain.

In kafka-python's test_kafka_consumer the consumer (no group: it assigns itself every partition)
is created, 100 records are sent to partition 0 and 100 to partition 1, and then it consumes;
once in about 20 loaded runs it got none of partition 0's. Here the consumer first opens its
fetch session over the 4 empty partitions and goes incremental (session epoch past 1, so its
requests name nothing), and only then do records come: first to partitions 0 and 1, then to 0
alone. Each partition's records must all arrive, in order, though no request names it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.fixtures.cluster import ClusterFactory

pytestmark = pytest.mark.integration

kafka = pytest.importorskip("kafka")
DEADLINE_S = 30.0
PARTITIONS = 4


def _until(what: str, check: Callable[[], bool], tick: Callable[[], None]) -> None:
    """Call `tick` until `check()` holds; fail after DEADLINE_S, naming `what`."""
    end = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < end, f"not in {DEADLINE_S:.0f} s: {what}"
        tick()


def _session_epoch(consumer: Any) -> int:
    """The epoch of the consumer's next fetch in its session with the one broker (0: full)."""
    handlers = consumer._fetcher._session_handlers  # kafka-python 3.0.12, pinned
    return max((h.next_metadata.epoch for h in handlers.values()), default=0)


def test_partitions_empty_when_the_session_opened_get_all_their_records(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(1, broker_settings={"num_partitions": PARTITIONS})
    bootstrap = cluster.kafka_bootstrap.split(",")[0]
    topic = f"sessions-{time.monotonic_ns()}"
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([kafka.admin.NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()
    tps = [kafka.TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer = kafka.KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )  # fmt: skip
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}

    def poll() -> None:
        for tp, records in consumer.poll(timeout_ms=100).items():
            got[tp.partition].extend(r.offset for r in records)

    def send(partition: int, count: int) -> None:
        for i in range(count):
            producer.send(topic, value=b"%d" % i, partition=partition)
        producer.flush()

    try:
        _until("all 4 partitions assigned", lambda: set(consumer.assignment()) == set(tps), poll)
        _until("an incremental fetch session", lambda: _session_epoch(consumer) >= 2, poll)
        assert all(not offsets for offsets in got.values()), got
        send(0, 100)
        send(1, 100)
        _until("100 records of partitions 0 and 1",
               lambda: len(got[0]) >= 100 and len(got[1]) >= 100, poll)  # fmt: skip
        send(0, 50)  # partition 1 stays quiet in the session
        _until("150 records of partition 0", lambda: len(got[0]) >= 150, poll)
        assert got == {0: list(range(150)), 1: list(range(100)), 2: [], 3: []}
        assert _session_epoch(consumer) > 2  # the session lived through it
    finally:
        producer.close()
        consumer.close()
