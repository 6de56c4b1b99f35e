"""Topic configs in effect on the produce path, against a real three-broker cluster with
confluent-kafka (librdkafka) as the producer and consumer: LogAppendTime stamping,
INVALID_TIMESTAMP outside message.timestamp.before.max.ms, a batch refused for some of its
records naming them (KIP-467: keyless records of a compacted topic, timestamps out of bounds;
librdkafka fails the others with _INVALID_DIFFERENT_RECORD), recompression to the topic's
compression.type (read back from every replica's segment file), and `odradek topics create
--config` / `topics describe` / `configs describe` on the same cluster."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from client.record_failures import InvalidDifferentRecordError
from deploy.cluster import LocalCluster
from protocol import compression
from protocol.batch import iter_batches
from protocol.record_errors import InvalidRecordsError
from tests.fixtures.cluster import run_odradek, wait_until
from tests.integration.kafka_clients import CLIENTS, Rec

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0
HOUR_MS = 3_600_000


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def confluent(cluster3: LocalCluster) -> Iterator[Any]:
    yield CLIENTS["confluent-kafka"](cluster3.kafka_bootstrap)


def _cli(cluster: LocalCluster, *args: str) -> Any:
    return run_odradek(*args, "--bootstrap", cluster.bootstrap)


def _create(cluster: LocalCluster, name: str, rf: int, **configs: str) -> None:
    flags = [f"--config={k}={v}" for k, v in configs.items()]
    done = _cli(cluster, "topics", "create", name, "--partitions", "1",
                "--replication-factor", str(rf), *flags)  # fmt: skip
    assert done.returncode == 0, done.stderr
    wait_until(lambda: _cli(cluster, "topics", "describe", name).returncode == 0, name, TIMEOUT_S)


def test_log_append_time_is_what_a_consumer_sees(cluster3: LocalCluster, confluent: Any) -> None:
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition

    topic = _topic("lat")
    _create(cluster3, topic, 3, **{"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    confluent.produce(topic, [Rec(b"k", b"v%d" % i, timestamp_ms=1000 + i) for i in range(3)],
                      acks=-1)  # fmt: skip
    after = int(time.time() * 1000)
    c = Consumer({"bootstrap.servers": cluster3.kafka_bootstrap, "group.id": topic,
                  "enable.auto.commit": False})  # fmt: skip
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[Any] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < 3 and time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.timestamp())
    finally:
        c.close()
    assert len(got) == 3 and {kind for kind, _ in got} == {TIMESTAMP_LOG_APPEND_TIME}
    assert all(before <= ts <= after for _, ts in got), (before, got, after)


def test_a_timestamp_outside_the_bounds_is_invalid_timestamp(
    cluster3: LocalCluster, confluent: Any
) -> None:
    from confluent_kafka import KafkaError, KafkaException

    topic = _topic("bounded")
    _create(cluster3, topic, 1, **{"message.timestamp.before.max.ms": str(HOUR_MS)})
    now = int(time.time() * 1000)
    with pytest.raises(KafkaException) as exc:
        confluent.produce(topic, [Rec(None, b"old", timestamp_ms=now - 2 * HOUR_MS)])
    assert exc.value.args[0].code() == KafkaError.INVALID_TIMESTAMP
    assert confluent.produce(topic, [Rec(None, b"new", timestamp_ms=now)]) == [(0, 0)]


def _send_one_batch(cluster: LocalCluster, topic: str, recs: list[Rec]) -> list[Any]:
    """Each record's delivery error (None: delivered), all of `recs` sent in one batch (a
    linger longer than it takes to queue them, flushed at once)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.kafka_bootstrap, "linger.ms": 60_000,
                  "batch.num.messages": 10_000, "retries": 0})  # fmt: skip
    errors: dict[int, Any] = {}

    def report(i: int) -> Any:
        return lambda err, _msg: errors.__setitem__(i, err)

    for i, r in enumerate(recs):
        p.produce(topic, r.value, r.key, partition=0, timestamp=r.timestamp_ms or 0,
                  on_delivery=report(i))  # fmt: skip
    assert p.flush(TIMEOUT_S) == 0, "deliveries still pending"
    assert sorted(errors) == list(range(len(recs)))
    return [errors[i] for i in range(len(recs))]


def _one_late_record_by_kafka_python(cluster: LocalCluster, topic: str, now: int) -> list[Any]:
    """Each record's exception, of ten sent in one batch, the fifth an hour too late."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=cluster.kafka_bootstrap, linger_ms=60_000, retries=0)
    try:
        futures = [p.send(topic, b"v%d" % i, key=b"k", partition=0,
                          timestamp_ms=now + (2 * HOUR_MS if i == 4 else i))
                   for i in range(10)]  # fmt: skip
        p.flush(TIMEOUT_S)
    finally:
        p.close(TIMEOUT_S)
    assert all(f.is_done for f in futures)
    return [f.exception for f in futures]


def _native_batch_errors(cluster: LocalCluster, topic: str, recs: list[Rec]) -> list[Any]:
    """The error odradek's client fails each of `recs` with, sent in one batch."""
    from client import Producer

    with Producer(cluster.bootstrap, linger_ms=60_000, retries=0) as p:
        futures = [p.send(topic, r.value, key=r.key, partition=0) for r in recs]
        p.flush()
        assert [f.index for f in futures] == list(range(len(recs)))  # one batch
        return [f.exception(timeout=TIMEOUT_S) for f in futures]


def _end_offset(cluster: LocalCluster, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": topic})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), TIMEOUT_S)[1])
    finally:
        c.close()


def test_keyless_records_of_a_compacted_topic_fail_alone(cluster3: LocalCluster) -> None:
    """librdkafka's 0011 test (KIP-467): 100 records in one batch to a compacted topic, every
    tenth without a key. The batch is refused and the leader names the 10 keyless records:
    they fail with INVALID_RECORD, the 90 others with _INVALID_DIFFERENT_RECORD. So does
    odradek's client (the native door): InvalidRecordsError with each one's own message, and
    one InvalidDifferentRecordError naming the 10 for the 90 others."""
    from confluent_kafka import KafkaError

    topic = _topic("keyless")
    _create(cluster3, topic, 1, **{"cleanup.policy": "compact"})
    recs = [Rec(None if i % 10 == 0 else b"k%d" % i, b"v%d" % i) for i in range(100)]
    errors = _send_one_batch(cluster3, topic, recs)
    codes = [e.code() for e in errors]
    assert [i for i, c in enumerate(codes) if c == KafkaError.INVALID_RECORD] == list(
        range(0, 100, 10)
    )
    assert codes.count(KafkaError._INVALID_DIFFERENT_RECORD) == 90
    native = _native_batch_errors(cluster3, topic, recs)
    own = [i for i, e in enumerate(native) if isinstance(e, InvalidRecordsError)]
    assert own == list(range(0, 100, 10)), native[:11]
    assert all("without a key" in native[i].message for i in own), native[0]
    others = {id(e): e for i, e in enumerate(native) if i not in own}
    assert len(others) == 1, native[:3]
    (different,) = others.values()
    assert isinstance(different, InvalidDifferentRecordError) and not different.retriable
    assert [e.batch_index for e in different.record_errors] == own
    assert "records 0, 10, 20, 30, 40, 50, 60, 70, 80, 90 (INVALID_RECORD" in different.message
    assert _end_offset(cluster3, topic) == 0  # nothing of the batch was appended


def test_records_out_of_the_timestamp_bounds_fail_alone(cluster3: LocalCluster) -> None:
    """A batch with a record an hour too late (the header's max timestamp fails) and one an
    hour too early in the middle: nothing is appended, and the leader names those two, which
    librdkafka fails with INVALID_RECORD (its answer to several record errors, whatever the
    partition's error), the rest with _INVALID_DIFFERENT_RECORD. A batch with one record too
    late, by kafka-python (librdkafka fails a whole batch with one record error with the
    partition's error): that one fails with INVALID_TIMESTAMP and its own message, the others
    as part of a batch with an invalid record."""
    from confluent_kafka import KafkaError
    from kafka.errors import InvalidTimestampError

    topic = _topic("bounds")
    _create(cluster3, topic, 1, **{"message.timestamp.before.max.ms": str(HOUR_MS),
                                   "message.timestamp.after.max.ms": str(HOUR_MS)})  # fmt: skip
    now = int(time.time() * 1000)
    stamps = {3: now + 2 * HOUR_MS, 7: now - 2 * HOUR_MS}
    recs = [Rec(b"k", b"v%d" % i, timestamp_ms=stamps.get(i, now + i)) for i in range(10)]
    codes = [e.code() for e in _send_one_batch(cluster3, topic, recs)]
    different = KafkaError._INVALID_DIFFERENT_RECORD
    bad = KafkaError.INVALID_RECORD
    assert codes == [bad if i in stamps else different for i in range(10)], codes
    late = _one_late_record_by_kafka_python(cluster3, topic, now)
    assert [i for i, e in enumerate(late) if isinstance(e, InvalidTimestampError)] == [4]
    assert f"timestamp {now + 2 * HOUR_MS} is out of range" in str(late[4]), late[4]
    assert all("invalid records" in str(e) for i, e in enumerate(late) if i != 4), late
    assert _end_offset(cluster3, topic) == 0


def _stored_codecs(cluster: LocalCluster, topic: str) -> dict[int, set[int]]:
    """{broker id: the codecs of the batches in its replica's segment files}."""
    state = cluster.state
    assert state is not None
    out = {}
    for b in state.brokers:
        data = b"".join(
            p.read_bytes() for p in sorted((Path(b.log_dir) / f"{topic}-0").glob("*.log"))
        )
        out[b.id] = {h.codec for _, h in iter_batches(data)}
    return out


def test_an_uncompressed_batch_is_stored_with_the_topics_codec(
    cluster3: LocalCluster, confluent: Any
) -> None:
    topic = _topic("zstd")
    _create(cluster3, topic, 3, **{"compression.type": "zstd"})
    recs = [Rec(b"k%d" % i, b"value %d " % i * 50) for i in range(100)]
    confluent.produce(topic, recs, acks=-1, compression="none")
    zstd = {b: {compression.ZSTD} for b in (1, 2, 3)}
    wait_until(lambda: _stored_codecs(cluster3, topic) == zstd, "zstd everywhere", TIMEOUT_S)
    got = confluent.consume(topic, 0, "earliest", len(recs))
    assert [(g.key, g.value) for g in got] == [(r.key, r.value) for r in recs]


def test_cli_creates_with_configs_and_describes_them(cluster3: LocalCluster) -> None:
    topic = _topic("cli")
    _create(cluster3, topic, 1, **{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"})
    header = _cli(cluster3, "topics", "describe", topic).stdout.splitlines()[0]
    assert header.endswith("Configs: cleanup.policy=compact,min.cleanable.dirty.ratio=0.1")
    listing = _cli(cluster3, "configs", "describe", "--topic", topic, "--synonyms")
    assert listing.returncode == 0, listing.stderr
    rows = {line.split()[0]: line.split() for line in listing.stdout.splitlines()[1:]}
    assert rows["cleanup.policy"][1:3] == ["compact", "DYNAMIC_TOPIC_CONFIG"]
    assert rows["segment.jitter.ms"][1:3] == ["0", "DEFAULT_CONFIG"]
    broker = _cli(cluster3, "configs", "describe", "--broker", "1").stdout.splitlines()
    assert any(line.split()[::2] == ["host.name", "STATIC_BROKER_CONFIG"] for line in broker)
    name = _topic("no")
    refused = _cli(cluster3, "topics", "create", name, "--partitions", "1",
                   "--config", "local.retention.ms=1000")  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"odradek: error: INVALID_CONFIG: {name}: local.retention.ms is refused: "
        "odradek has no tiered storage"
    ]


def test_cli_alters_and_describes_a_groups_configs(cluster3: LocalCluster) -> None:
    group = _topic("grp")  # a group need not exist to have configs (Kafka's rule)
    changed = _cli(cluster3, "configs", "alter", "--group", group,
                   "--set", "consumer.heartbeat.interval.ms=6000")  # fmt: skip
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == (
        f"Altered group {group}. Configs: consumer.heartbeat.interval.ms=6000"
    )
    listing = _cli(cluster3, "configs", "describe", "--group", group, "--synonyms")
    assert listing.returncode == 0, listing.stderr
    rows = {line.split()[0]: line.split() for line in listing.stdout.splitlines()[1:]}
    assert rows["consumer.heartbeat.interval.ms"][1:3] == ["6000", "DYNAMIC_GROUP_CONFIG"]
    assert rows["consumer.session.timeout.ms"][2] == "DEFAULT_CONFIG"
    back = _cli(cluster3, "configs", "alter", "--group", group,
                "--delete", "consumer.heartbeat.interval.ms")  # fmt: skip
    assert (back.returncode, back.stdout.strip()) == (0, f"Altered group {group}. Configs:")
