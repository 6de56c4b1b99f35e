"""Real Kafka clients against a real odradek cluster, through each broker's Kafka listener.

kafka-python, confluent-kafka (librdkafka) and aiokafka, each with its default settings: topics
created through its admin API, produce with acks 0, 1 and all, keyed (murmur2's partition) and
keyless, headers, null keys and values; reads by assignment from earliest, latest, an offset
and a timestamp; every codec written by one client and read by the others and by odradek's own
consumer; a batch at `max.message.bytes` accepted and one byte above refused; kcat's metadata
listing. What a Kafka client wrote, the native consumer reads identically, and the other way.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from typing import Any

import pytest

from client import Admin, Consumer, Producer
from client.partitioner import partition_for_key
from client.types import TopicPartition
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory, wait_until
from tests.integration.kafka_clients import CLIENTS, Got, Rec

pytestmark = pytest.mark.integration

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = 3


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _records(n: int, ts_ms: int | None = None) -> list[Rec]:
    """Keyed and keyless, with and without headers, a null key and a null value."""
    out = []
    for i in range(n):
        key = None if i % 3 == 0 else f"key-{i}".encode()
        headers = [("n", str(i).encode()), ("empty", b"")] if i % 4 == 1 else []
        value = None if i == 7 else f"value-{i}".encode() * (1 + i % 5)
        out.append(Rec(key, value, headers, None, ts_ms))
    return out


def _native_read(bootstrap: str, topic: str, partitions: int, count: int) -> list[Got]:
    got: list[Got] = []
    with Consumer(bootstrap) as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        c.seek_to_beginning(*[TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=200).values():
                got += [
                    Got(r.partition, r.offset, r.key, r.value, list(r.headers or []), r.timestamp)
                    for r in records
                ]
    return got


def _described(cluster: LocalCluster, topic: str) -> Any:
    """The topic as odradek describes it, once every broker's metadata has it with a leader for
    every partition (a CreateTopics answer waits for the broker that took it; the others learn
    of the topic a moment later, and an acks=0 record sent to a broker that does not lead yet
    is dropped, as Kafka drops it)."""
    deadline = time.monotonic() + 30
    desc = None
    for address in cluster.bootstrap.split(","):
        with Admin(address) as admin:
            while True:
                (desc,) = admin.describe_topics([topic])
                parts = desc.partitions if desc.error_code == 0 else []
                if parts and all(p.leader >= 0 for p in parts):
                    break
                assert time.monotonic() < deadline, f"{topic} never described: {desc}"
                time.sleep(0.1)
    return desc


def _by_partition(got: list[Got]) -> dict[int, list[Got]]:
    out: dict[int, list[Got]] = {}
    for g in sorted(got, key=lambda g: (g.partition, g.offset)):
        out.setdefault(g.partition, []).append(g)
    return out


def _same(sent: list[Rec], where: list[tuple[int, int]], got: list[Got]) -> None:
    """Every sent record is read back at its acknowledged (partition, offset), unchanged."""
    at = {(g.partition, g.offset): g for g in got}
    assert len(at) == len(sent), f"read {len(at)} records, sent {len(sent)}"
    for rec, (partition, offset) in zip(sent, where, strict=True):
        g = at[(partition, offset)]
        assert (g.key, g.value) == (rec.key, rec.value)
        assert [(k, v) for k, v in g.headers] == rec.headers
    for records in _by_partition(got).values():
        offsets = [g.offset for g in records]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), "contiguous"


# ----- each client, its defaults ------------------------------------------------------------


@pytest.mark.parametrize("client_name", sorted(CLIENTS))
@pytest.mark.parametrize("acks", [0, 1, -1])
def test_produce_and_read_back(cluster3: LocalCluster, client_name: str, acks: int) -> None:
    client = CLIENTS[client_name](cluster3.kafka_bootstrap)
    topic = _topic(f"kc-{client_name}")
    client.create_topic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    desc = _described(cluster3, topic)  # the topic exists as odradek sees it
    assert len(desc.partitions) == PARTITIONS
    assert all(len(p.replicas) == 3 for p in desc.partitions)
    sent = _records(40)
    where = client.produce(topic, sent, acks=acks)
    got = _native_read(cluster3.bootstrap, topic, PARTITIONS, len(sent))
    if acks == 0:  # no offsets acknowledged: every record arrives once, in order per key
        assert sorted(g.value or b"" for g in got) == sorted(r.value or b"" for r in sent)
        return
    _same(sent, where, got)
    for rec, (partition, _) in zip(sent, where, strict=True):
        if rec.key is not None:
            assert partition == partition_for_key(rec.key, PARTITIONS), "murmur2's partition"
    # and the client reads its own records back by assignment from earliest
    for p, records in _by_partition(got).items():
        mine = client.consume(topic, p, "earliest", len(records))
        assert [(g.offset, g.key, g.value) for g in mine] == [
            (g.offset, g.key, g.value) for g in records
        ]


@pytest.mark.parametrize("client_name", sorted(CLIENTS))
def test_read_from_latest_an_offset_and_a_timestamp(
    cluster3: LocalCluster, client_name: str
) -> None:
    client = CLIENTS[client_name](cluster3.kafka_bootstrap)
    topic = _topic(f"pos-{client_name}")
    client.create_topic(topic, 1, 1, {})
    t0 = int(time.time() * 1000) - 60_000
    first = [Rec(None, f"old-{i}".encode(), [], 0, t0 + i) for i in range(10)]
    second = [Rec(None, f"new-{i}".encode(), [], 0, t0 + 1000 + i) for i in range(10)]
    client.produce(topic, first)
    client.produce(topic, second)
    at_offset = client.consume(topic, 0, 13, 7)
    assert [g.value for g in at_offset] == [f"new-{i}".encode() for i in range(3, 10)]
    assert [g.offset for g in at_offset] == list(range(13, 20))
    by_time = client.consume(topic, 0, ("timestamp", t0 + 1000), 10)
    assert [g.value for g in by_time] == [r.value for r in second]
    assert by_time[0].timestamp_ms == t0 + 1000
    latest = client.consume(topic, 0, "latest", 1, timeout_s=2)
    assert latest == [], "latest starts after what is there"
    native = _native_read(cluster3.bootstrap, topic, 1, 20)  # the same timestamps natively
    assert [(g.offset, g.timestamp_ms) for g in native] == [
        (i, r.timestamp_ms) for i, r in enumerate(first + second)
    ]


# ----- codecs across clients ----------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_written_by_one_client_is_read_by_all(
    cluster3: LocalCluster, codec: str
) -> None:
    bootstrap = cluster3.kafka_bootstrap
    for writer_name in ("confluent-kafka", "kafka-python", "aiokafka"):
        writer = CLIENTS[writer_name](bootstrap)
        topic = _topic(f"codec-{codec}-{writer_name}")
        writer.create_topic(topic, 1, 1, {})
        sent = [
            Rec(f"k{i}".encode(), (f"payload-{i}-" * 20).encode(), [("i", str(i).encode())], 0)
            for i in range(200)
        ]
        where = writer.produce(topic, sent, compression=codec)
        native = _native_read(cluster3.bootstrap, topic, 1, len(sent))
        _same(sent, where, native)
        for reader_name, reader_cls in CLIENTS.items():
            got = reader_cls(bootstrap).consume(topic, 0, "earliest", len(sent))
            assert [(g.key, g.value) for g in got] == [(r.key, r.value) for r in sent], (
                f"{reader_name} reading {codec} written by {writer_name}"
            )


def test_native_writes_are_read_by_kafka_clients(cluster3: LocalCluster) -> None:
    topic = _topic("native-to-kafka")
    with Admin(cluster3.bootstrap) as admin:
        from client.types import NewTopic

        admin.create_topics([NewTopic(topic, 1, 1)])
    t0 = 1_700_000_000_000
    sent = [(f"k{i}".encode(), f"v{i}".encode(), [("h", b"x")]) for i in range(50)]
    with Producer(cluster3.bootstrap, acks=-1) as p:
        futures = [
            p.send(topic, value=v, key=k, headers=h, partition=0, timestamp_ms=t0 + i)
            for i, (k, v, h) in enumerate(sent)
        ]
        p.flush()
        offsets = [f.result(timeout=30).offset for f in futures]
    assert offsets == list(range(50))
    for name, client_cls in CLIENTS.items():
        got = client_cls(cluster3.kafka_bootstrap).consume(topic, 0, "earliest", 50)
        assert [(g.offset, g.key, g.value, g.headers, g.timestamp_ms) for g in got] == [
            (i, k, v, [("h", b"x")], t0 + i) for i, (k, v, _) in enumerate(sent)
        ], name


# ----- limits and refusals --------------------------------------------------------------------


def test_batch_at_max_message_bytes_is_accepted_and_one_above_refused(
    cluster3: LocalCluster,
) -> None:
    from confluent_kafka import KafkaError, KafkaException

    limit = 10_000
    client = CLIENTS["confluent-kafka"](cluster3.kafka_bootstrap)
    topic = _topic("max-bytes")
    client.create_topic(topic, 1, 1, {"max.message.bytes": str(limit)})
    # one uncompressed record with no key or headers makes a batch of 61 + 11 + len(value)
    # bytes: the record's length and its value's length are zigzag varints of 3 bytes here,
    # attributes, timestamp delta, offset delta, key length (-1) and header count 1 byte each
    overhead = 72
    (where,) = client.produce(topic, [Rec(None, b"x" * (limit - overhead), [], 0)])
    assert where == (0, 0)
    with pytest.raises(KafkaException) as exc:
        client.produce(topic, [Rec(None, b"x" * (limit - overhead + 1), [], 0)])
    assert exc.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_unknown_topic_is_refused_when_auto_create_is_off(
    cluster_factory: ClusterFactory,
) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    cluster = cluster_factory(brokers=1, broker_settings={"auto_create_topics_enable": False})
    p = KafkaProducer(bootstrap_servers=cluster.kafka_bootstrap, max_block_ms=3000)
    try:
        with pytest.raises(KafkaTimeoutError):
            p.send("never-created", b"v").get(timeout=10)
    finally:
        p.close(timeout=5)
    with Admin(cluster.bootstrap) as admin:
        assert "never-created" not in admin.list_topics()


def test_unknown_topic_is_created_when_auto_create_is_on(cluster3: LocalCluster) -> None:
    topic = _topic("auto")
    where = CLIENTS["kafka-python"](cluster3.kafka_bootstrap).produce(topic, [Rec(None, b"first")])
    assert where == [(0, 0)]
    desc = _described(cluster3, topic)
    assert len(desc.partitions) == 1  # num_partitions, the broker default


# ----- kcat ---------------------------------------------------------------------------------------


def _kcat_metadata(bootstrap: str) -> dict:
    out = subprocess.run(
        ["kcat", "-b", bootstrap, "-L", "-J", "-m", "10"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(out.stdout)


@pytest.mark.slow  # kills or pauses brokers
def test_kcat_lists_the_cluster_truthfully_after_a_broker_dies(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(brokers=3)
    topic = _topic("kcat")
    CLIENTS["kafka-python"](cluster.kafka_bootstrap).create_topic(topic, 3, 3, {})

    ports = {b.id: b.kafka_port for b in cluster.state.brokers}  # type: ignore[union-attr]

    def listed() -> dict | None:
        # CreateTopics answers once the broker asked knows the topic; the others' UpdateMetadata
        # may still be on its way (as in Kafka), and kcat asks the survivors below: every
        # broker, asked alone, must list it first
        metas = [_kcat_metadata(f"127.0.0.1:{port}") for port in ports.values()]
        known = all(any(t["topic"] == topic for t in meta["topics"]) for meta in metas)
        return metas[0] if known else None

    meta = wait_until(listed, f"every broker to list {topic} to kcat", 30)
    assert {(b["id"], b["name"]) for b in meta["brokers"]} == {
        (i, f"127.0.0.1:{port}") for i, port in ports.items()
    }
    (t,) = [t for t in meta["topics"] if t["topic"] == topic]
    assert sorted(p["partition"] for p in t["partitions"]) == [0, 1, 2]
    victim = t["partitions"][0]["leader"]
    cluster.kill(victim, "KILL")
    survivors = ",".join(f"127.0.0.1:{p}" for i, p in ports.items() if i != victim)
    deadline = time.monotonic() + 60
    while True:
        meta = _kcat_metadata(survivors)
        (t,) = [t for t in meta["topics"] if t["topic"] == topic]
        ids = {b["id"] for b in meta["brokers"]}
        leaders = {p["leader"] for p in t["partitions"]}
        if victim not in ids and victim not in leaders:
            break
        assert time.monotonic() < deadline, f"kcat still shows broker {victim}: {meta}"
        time.sleep(0.5)
    for p in t["partitions"]:
        assert p["leader"] in ids
        assert victim not in [r["id"] for r in p["isrs"]]
    assert meta["controllerid"] in ids


def test_kcat_produces_and_consumes(cluster3: LocalCluster) -> None:
    topic = _topic("kcat-pc")
    lines = "".join(f"k{i}:v{i}\n" for i in range(20))
    subprocess.run(
        ["kcat", "-b", cluster3.kafka_bootstrap, "-P", "-t", topic, "-K:", "-p", "0"],
        input=lines, text=True, timeout=60, check=True,
    )  # fmt: skip
    out = subprocess.run(
        ["kcat", "-b", cluster3.kafka_bootstrap, "-C", "-t", topic, "-o", "beginning", "-e",
         "-f", "%k %s %o\n"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert out.stdout.splitlines() == [f"k{i} v{i} {i}" for i in range(20)]
    got = _native_read(cluster3.bootstrap, topic, 1, 20)
    assert [(g.key, g.value) for g in got] == [
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(20)
    ]
