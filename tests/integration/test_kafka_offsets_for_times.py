"""ListOffsets by timestamp through librdkafka (confluent-kafka `offsets_for_times`) on a real
three-broker cluster: two records in one batch, the answer is the record whose timestamp is at
or after the target (its offset and timestamp), not the batch's base offset and max timestamp.
The batch is checked to be one batch in the leader's segment file, for the test to mean it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from protocol.batch import iter_batches
from tests.integration.kafka_clients import CLIENTS, Rec

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0
EARLY, LATE = 1234, 999_999_999_999  # issue 33's two timestamps


@pytest.fixture(scope="module")
def confluent(cluster3: LocalCluster) -> Iterator[Any]:
    yield CLIENTS["confluent-kafka"](cluster3.kafka_bootstrap)


def _batches(cluster: LocalCluster, topic: str) -> list[tuple[int, int]]:
    """(base offset, record count) of each batch in any replica's segment files."""
    state = cluster.state
    assert state is not None
    for b in state.brokers:
        paths = sorted((Path(b.log_dir) / f"{topic}-0").glob("*.log"))
        if paths:
            data = b"".join(p.read_bytes() for p in paths)
            return [(h.base_offset, h.record_count) for _, h in iter_batches(data)]
    return []


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_offsets_for_times_answers_the_record_inside_the_batch(
    cluster3: LocalCluster, confluent: Any, codec: str
) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    topic = f"by-time-{uuid.uuid4().hex[:8]}"
    confluent.create_topic(topic, 1, 1, {})
    recs = [Rec(None, b"early", timestamp_ms=EARLY), Rec(None, b"late", timestamp_ms=LATE)]
    # a long linger: both records leave in one batch (flush sends it at once)
    assert confluent.produce(topic, recs, acks=-1, compression=codec, **{"linger.ms": 10_000}) == [
        (0, 0),
        (0, 1),
    ]
    assert _batches(cluster3, topic) == [(0, 2)]  # one batch of two records
    c = Consumer({"bootstrap.servers": cluster3.kafka_bootstrap, "group.id": topic})
    try:

        def offset_for(ts: int) -> int:
            (found,) = c.offsets_for_times([TopicPartition(topic, 0, ts)], TIMEOUT_S)
            assert found.error is None, found.error
            return int(found.offset)

        assert offset_for(LATE) == 1  # Kafka's answer; the batch's base offset was 0
        assert offset_for(EARLY + 1) == 1
        assert offset_for(EARLY) == 0
        assert offset_for(LATE + 1) == -1  # none at or after it: librdkafka's end (-1)
    finally:
        c.close()
    # the timestamp answered is the record's, not the batch's maximum
    admin = AdminClient({"bootstrap.servers": cluster3.kafka_bootstrap})
    tp = TopicPartition(topic, 0)
    for asked, (offset, ts) in {EARLY: (0, EARLY), EARLY + 1: (1, LATE)}.items():
        futures = admin.list_offsets({tp: OffsetSpec.for_timestamp(asked)})
        info = futures[tp].result(timeout=TIMEOUT_S)
        assert (info.offset, info.timestamp) == (offset, ts)


def test_a_special_timestamp_needs_the_version_that_brought_it(cluster3: LocalCluster) -> None:
    """As Kafka's ReplicaManager.fetchOffset, by hand on the wire (clients pick the version for
    the timestamp): MAX_TIMESTAMP (-3) at v6, or a negative timestamp Kafka gives no meaning,
    is UNSUPPORTED_VERSION on its partition; -3 at v7 goes on to the partition lookup."""
    from protocol.kafka.versions import LIST_OFFSETS
    from tests.integration.kafka_wire import addresses, call, nested

    def code(version: int, timestamp: int) -> int:
        part = nested(LIST_OFFSETS, version, "ListOffsetsPartition",
                      partition_index=0, timestamp=timestamp)  # fmt: skip
        topic = nested(LIST_OFFSETS, version, "ListOffsetsTopic", name="no-such-topic",
                       partitions=(part,))  # fmt: skip
        answer = call(addresses(cluster3.kafka_bootstrap)[0], LIST_OFFSETS, version,
                      replica_id=-1, isolation_level=0, topics=(topic,))  # fmt: skip
        return int(answer.topics[0].partitions[0].error_code)

    unsupported_version, unknown_topic = 35, 3
    assert [code(6, -3), code(7, -7), code(7, -3)] == [
        unsupported_version, unsupported_version, unknown_topic,
    ]  # fmt: skip


def test_read_committed_finds_no_record_past_the_last_stable_offset(
    cluster3: LocalCluster, confluent: Any
) -> None:
    """Kafka caps a lookup by timestamp at the last fetchable offset: with read_committed the
    LSO, so a record of a transaction still open is not found (-1), while read_uncommitted
    finds it below the HW; once committed, read_committed finds it too."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = f"by-time-txn-{uuid.uuid4().hex[:8]}"
    confluent.create_topic(topic, 1, 1, {})
    producer = Producer({"bootstrap.servers": cluster3.kafka_bootstrap,
                         "transactional.id": topic})  # fmt: skip
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, b"open", partition=0, timestamp=LATE)
    assert producer.flush(TIMEOUT_S) == 0

    def offset_for(isolation: str) -> int:
        c = Consumer({"bootstrap.servers": cluster3.kafka_bootstrap, "group.id": topic,
                      "isolation.level": isolation})  # fmt: skip
        try:
            (found,) = c.offsets_for_times([TopicPartition(topic, 0, LATE)], TIMEOUT_S)
            assert found.error is None, found.error
            return int(found.offset)
        finally:
            c.close()

    assert offset_for("read_uncommitted") == 0
    assert offset_for("read_committed") == -1  # above the LSO: not found, as Kafka answers
    producer.commit_transaction(TIMEOUT_S)
    # the commit is answered once PrepareCommit is written (Kafka's EndTxn too); the marker,
    # which moves the LSO, follows: found once it is written
    deadline = time.monotonic() + TIMEOUT_S
    while (found := offset_for("read_committed")) == -1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found == 0
