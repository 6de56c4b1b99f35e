"""Topic configs in effect on the produce path, against a real three-broker cluster with
confluent-kafka (librdkafka) as the producer and consumer: LogAppendTime stamping,
INVALID_TIMESTAMP outside message.timestamp.before.max.ms, recompression to the topic's
compression.type (read back from every replica's segment file), and `odradek topics create
--config` / `topics describe` / `configs describe` on the same cluster."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from protocol import compression
from protocol.batch import iter_batches
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
