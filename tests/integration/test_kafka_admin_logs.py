"""Kafka's admin clients against a real three-broker cluster, through the Kafka listeners:
kafka-python's KafkaAdminClient and confluent-kafka's AdminClient for DescribeCluster,
DeleteRecords, DescribeLogDirs, DescribeTopicPartitions, ElectLeaders (after a broker restart
moved leadership away from the preferred replicas) and the reassignment APIs. Each answer is checked
against the native Admin, `odradek topics describe` and the data itself (read back with the
native Consumer; data is written with the native Producer, so these tests do not depend on the
record format the Kafka clients write, except DeleteRecords right after a transaction's commit,
whose records a confluent-kafka transactional producer writes).
"""

from __future__ import annotations

import asyncio
import re
import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from client import Admin, Consumer, Producer
from client.types import NewTopic, TopicPartition
from deploy.cluster import LocalCluster
from protocol.api.metadata import MetadataRequest, MetadataResponse
from protocol.kafka import codec
from protocol.kafka.versions import DESCRIBE_CLUSTER
from tests.fixtures.cluster import ClusterFactory, run_odradek
from transport.connection import BrokerConnection

pytestmark = pytest.mark.integration

WAIT_S = 60.0
ELECTION_NOT_NEEDED = 84


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _eventually(check: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _kafka_admin(cluster: LocalCluster) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap, request_timeout_ms=30_000)


def _confluent_admin(cluster: LocalCluster) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})


def _create(cluster: LocalCluster, topic: str, partitions: int, rf: int,
            configs: dict[str, str] | None = None) -> None:  # fmt: skip
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, partitions, rf, configs or {})])
    # every broker's metadata, not one's: the next Admin may ask any of them
    for address in cluster.bootstrap.split(","):
        _eventually(lambda a=address: _led_at(a, topic), f"{topic} led, as {address} sees it")


def _led_at(address: str, topic: str) -> bool:
    """The broker at `address` itself names a leader for every partition of `topic`."""
    host, port = address.rsplit(":", 1)

    async def ask() -> MetadataResponse:
        conn = await BrokerConnection.connect(host, int(port), connect_timeout_ms=2000)
        try:
            return await conn.send(MetadataRequest(topics=[topic]), 5000)  # type: ignore[no-any-return]
        finally:
            await conn.close()

    (t,) = asyncio.run(ask()).topics
    return not t.error_code and bool(t.partitions) and all(p.leader >= 0 for p in t.partitions)


def _all_led(admin: Admin, topic: str) -> bool:
    (d,) = admin.describe_topics([topic])
    return not d.error_code and bool(d.partitions) and all(p.leader >= 0 for p in d.partitions)


def _produce(cluster: LocalCluster, topic: str, partition: int, count: int) -> None:
    with Producer(cluster.bootstrap, acks="all", linger_ms=2) as producer:
        futures = [
            producer.send(topic, b"value-%05d" % i + b"." * 100, partition=partition)
            for i in range(count)
        ]
        producer.flush()
        for f in futures:
            f.result(60)


def _describe(cluster: LocalCluster, topic: str, *flags: str) -> list[str]:
    done = run_odradek("topics", "describe", topic, *flags, "--bootstrap", cluster.bootstrap)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[1:]


def _describe_cluster_raw(host: str, port: int) -> Any:
    """DescribeCluster v1 sent to one broker's Kafka listener."""
    body = codec.make(
        codec.request_class(DESCRIBE_CLUSTER, 1),
        include_cluster_authorized_operations=False,
        endpoint_type=1,
    )
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(codec.encode_request(DESCRIBE_CLUSTER, 1, 1, body))
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        return codec.decode_response(DESCRIBE_CLUSTER, 1, _read_exactly(sock, size))[1]


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "the broker closed the connection"
        out += chunk
    return out


@pytest.fixture(scope="module")
def shared(cluster3: LocalCluster) -> Iterator[LocalCluster]:
    yield cluster3


# ----- DescribeCluster and the cluster id ------------------------------------------------------


def test_describe_cluster_agrees_with_the_native_admin(shared: LocalCluster) -> None:
    cluster = shared
    with Admin(cluster.bootstrap) as admin:
        native = admin.describe_cluster()
    assert native.cluster_id is not None and len(native.cluster_id) == 22
    kafka_ports = {b.id: b.kafka_port for b in cluster.state.brokers}  # type: ignore[union-attr]

    kp = _kafka_admin(cluster)
    try:
        described = kp.describe_cluster()
    finally:
        kp.close()
    assert described["cluster_id"] == native.cluster_id
    assert described["controller_id"] == native.controller_id == cluster.controller_id()
    assert {(b["broker_id"], b["port"]) for b in described["brokers"]} == set(kafka_ports.items())

    ck = _confluent_admin(cluster)  # kept: the client is destroyed with its last reference
    result = ck.describe_cluster(request_timeout=30).result(30)
    assert result.cluster_id == native.cluster_id
    assert result.controller.id == native.controller_id
    assert {(n.id, n.port) for n in result.nodes} == set(kafka_ports.items())

    # every broker read the same /cluster/id
    for broker_id, port in kafka_ports.items():
        raw = _describe_cluster_raw("127.0.0.1", port)
        assert (raw.error_code.value, raw.cluster_id) == (0, native.cluster_id), broker_id


# ----- DeleteRecords -------------------------------------------------------------------------


def test_delete_records_moves_every_replicas_log_start(shared: LocalCluster) -> None:
    from confluent_kafka import TopicPartition as CkTopicPartition
    from kafka import TopicPartition as KpTopicPartition

    cluster = shared
    topic = _topic("delrec")
    _create(cluster, topic, 1, 3, {"segment.bytes": "2048"})
    _produce(cluster, topic, 0, 200)

    kp = _kafka_admin(cluster)
    try:
        result = kp.delete_records({KpTopicPartition(topic, 0): 40})
    finally:
        kp.close()
    assert result[KpTopicPartition(topic, 0)]["low_watermark"] == 40

    ck = _confluent_admin(cluster)
    futures = ck.delete_records([CkTopicPartition(topic, 0, 120)])
    (deleted,) = [f.result(30) for f in futures.values()]
    assert deleted.low_watermark == 120

    # the CLI does it too, through the native DeleteRecords
    done = run_odradek("topics", "delete-records", topic, "--partition", "0", "--before", "150",
                       "--bootstrap", cluster.bootstrap)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Topic: {topic} Partition: 0 LowWatermark: 150"

    # earliest is the new start, for the native Admin, a consumer and `topics describe`
    tp = TopicPartition(topic, 0)
    with Admin(cluster.bootstrap) as admin:
        assert admin.list_offsets({tp: -2})[tp].offset == 150
        assert admin.list_offsets({tp: -1})[tp].offset == 200
    with Consumer(cluster.bootstrap) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        records = _eventually(lambda: consumer.poll(timeout_ms=500).get(tp), "records")
    assert records[0].offset == 150 and records[0].value.startswith(b"value-00150")
    (line,) = _describe(cluster, topic, "--offsets")
    assert re.search(r" LogStartOffset: 150 HighWatermark: 200$", line), line

    # every replica deleted the segments wholly below the new start
    for b in cluster.state.brokers:  # type: ignore[union-attr]
        bases = sorted(int(p.stem) for p in (Path(b.log_dir) / f"{topic}-0").glob("*.log"))
        assert bases and bases[0] <= 150, (b.id, bases)
        assert len(bases) == 1 or bases[1] > 150, (b.id, bases)


def test_delete_records_past_the_high_watermark_is_refused(shared: LocalCluster) -> None:
    from kafka import TopicPartition as KpTopicPartition
    from kafka.errors import OffsetOutOfRangeError

    cluster = shared
    topic = _topic("delrec-oor")
    _create(cluster, topic, 1, 3)
    _produce(cluster, topic, 0, 10)
    kp = _kafka_admin(cluster)
    try:
        with pytest.raises(OffsetOutOfRangeError):
            kp.delete_records({KpTopicPartition(topic, 0): 11})
    finally:
        kp.close()
    done = run_odradek("topics", "delete-records", topic, "--partition", "0", "--before", "hw",
                       "--bootstrap", cluster.bootstrap)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("LowWatermark: 10")


def test_delete_records_right_after_a_commit(shared: LocalCluster) -> None:
    """Kafka bounds DeleteRecords by the high watermark, not the last stable offset: right
    after commit_transaction() the marker may still be on its way (the LSO then stays at the
    transaction's first offset), and deleting up to the records' end still succeeds. Twenty
    rounds, so the window before the marker lands is hit."""
    from confluent_kafka import Producer as CkProducer
    from confluent_kafka import TopicPartition as CkTopicPartition

    cluster = shared
    topic = _topic("delrec-txn")
    _create(cluster, topic, 1, 3)
    txn_id = _topic("delrec-txn-id")
    producer = CkProducer({"bootstrap.servers": cluster.kafka_bootstrap,
                           "transactional.id": txn_id, "linger.ms": 1})  # fmt: skip
    admin = _confluent_admin(cluster)
    producer.init_transactions(30)
    ends: list[int] = []
    offsets: list[int] = []  # this round's delivered offsets
    for round_ in range(20):
        offsets.clear()
        producer.begin_transaction()
        for i in range(5):
            producer.produce(topic, value=b"r%d-%d" % (round_, i), partition=0,
                             on_delivery=lambda err, msg: offsets.append(msg.offset()))  # fmt: skip
        producer.commit_transaction(30)  # flushes: every record is delivered (acks=all)
        end = max(offsets) + 1
        futures = admin.delete_records([CkTopicPartition(topic, 0, end)])
        (deleted,) = [f.result(30) for f in futures.values()]
        assert deleted.low_watermark == end, round_
        ends.append(end)
    assert ends == [6 * r + 5 for r in range(20)]  # five records and a marker per round
    tp = TopicPartition(topic, 0)
    with Admin(cluster.bootstrap) as native:
        assert native.list_offsets({tp: -2})[tp].offset == ends[-1]


# ----- DescribeLogDirs and DescribeTopicPartitions ------------------------------------------


def test_describe_log_dirs_matches_the_files(shared: LocalCluster) -> None:
    cluster = shared
    topic = _topic("logdirs")
    _create(cluster, topic, 2, 2)
    for p in (0, 1):
        _produce(cluster, topic, p, 50)
    with Admin(cluster.bootstrap) as admin:
        (described,) = admin.describe_topics([topic])
    hosts = {b: {p.partition for p in described.partitions if b in p.replicas} for b in (1, 2, 3)}
    dirs = {b.id: Path(b.log_dir) for b in cluster.state.brokers}  # type: ignore[union-attr]

    def on_disk(broker: int, partition: int) -> int:
        return sum(f.stat().st_size for f in (dirs[broker] / f"{topic}-{partition}").glob("*.log"))

    def answers() -> dict[int, dict[int, tuple[int, int]]] | None:
        kp = _kafka_admin(cluster)
        try:
            found = kp.describe_log_dirs({topic: [0, 1]})
        finally:
            kp.close()
        out = {}
        for entry in found:
            (log_dir,) = entry["log_dirs"]
            assert log_dir["error_code"] == 0 and Path(log_dir["log_dir"]) == dirs[entry["broker"]]
            assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
            out[entry["broker"]] = {
                p["partition_index"]: (p["partition_size"], p["offset_lag"])
                for t in log_dir["topics"]
                for p in t["partitions"]
                if t["name"] == topic
            }
        sizes_settled = all(
            size == on_disk(b, p) > 0 for b, parts in out.items() for p, (size, _) in parts.items()
        )
        return out if sizes_settled else None

    got = _eventually(answers, "log dir sizes to match the files")
    assert {b: set(parts) for b, parts in got.items()} == hosts
    assert {lag for parts in got.values() for _, lag in parts.values()} == {0}


def test_alter_replica_log_dirs_within_each_brokers_directory(shared: LocalCluster) -> None:
    """kafka-python's alter_replica_log_dirs, to the directory DescribeLogDirs names: NONE (these
    brokers have one directory each, the replica is there; moves between two:
    test_kafka_jbod.py); elsewhere LOG_DIR_NOT_FOUND; a broker that does not host the replica
    REPLICA_NOT_AVAILABLE. The data stays readable."""
    from kafka import TopicPartitionReplica
    from kafka.errors import LogDirNotFoundError, NoError, ReplicaNotAvailableError

    cluster = shared
    topic = _topic("movedirs")
    _create(cluster, topic, 1, 2)
    _produce(cluster, topic, 0, 20)
    with Admin(cluster.bootstrap) as admin:
        (described,) = admin.describe_topics([topic])
    replicas = described.partitions[0].replicas
    (outsider,) = {1, 2, 3} - set(replicas)
    kp = _kafka_admin(cluster)
    try:
        dirs = {e["broker"]: e["log_dirs"][0]["log_dir"] for e in kp.describe_log_dirs()}
        asked = {TopicPartitionReplica(topic, 0, b): dirs[b] for b in replicas}
        gone = TopicPartitionReplica(topic, 0, replicas[0])
        assert kp.alter_replica_log_dirs(asked) == {r: NoError for r in asked}
        assert kp.alter_replica_log_dirs({gone: dirs[replicas[0]] + "-elsewhere"}) == {
            gone: LogDirNotFoundError
        }
        stranger = TopicPartitionReplica(topic, 0, outsider)
        assert kp.alter_replica_log_dirs({stranger: dirs[outsider]}) == {
            stranger: ReplicaNotAvailableError
        }
    finally:
        kp.close()
    tp = TopicPartition(topic, 0)
    with Consumer(cluster.bootstrap) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got: list[Any] = []
        _eventually(lambda: got.extend(consumer.poll(timeout_ms=500).get(tp, [])) or
                    len(got) >= 20, "every record")  # fmt: skip
    assert [r.offset for r in got] == list(range(20))


def test_describe_topic_partitions_pages_like_metadata(shared: LocalCluster) -> None:
    cluster = shared
    topic = _topic("dtp")
    _create(cluster, topic, 5, 2)
    # every broker learns of a new topic a moment after CreateTopics answers: compare once
    # the broker answering each side knows all of it
    deadline = time.monotonic() + 30
    while True:
        with Admin(cluster.bootstrap) as admin:
            (native,) = admin.describe_topics([topic])
        seen = _pages(cluster, topic)
        want = [(p.partition, p.leader, p.replicas, p.isr) for p in native.partitions]
        got = [(p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
               for p in seen]  # fmt: skip
        if len(want) == 5 and got == want:
            return
        assert time.monotonic() < deadline, f"pages {got} never matched metadata {want}"
        time.sleep(0.2)


def _pages(cluster: LocalCluster, topic: str) -> list[dict[str, Any]]:
    kp = _kafka_admin(cluster)
    try:
        seen: list[dict[str, Any]] = []
        cursor = None
        for _ in range(10):
            page = kp.describe_topic_partitions([topic], response_partition_limit=2, cursor=cursor)
            (t,) = page["topics"]
            if t["error_code"] != 0:
                return []
            assert len(t["partitions"]) <= 2
            seen += t["partitions"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        return seen
    finally:
        kp.close()


# ----- reassignments ---------------------------------------------------------------------------


def test_reassign_and_list_through_kafka_python(shared: LocalCluster) -> None:
    from kafka import TopicPartition as KpTopicPartition
    from kafka.errors import NoReassignmentInProgressError

    cluster = shared
    topic = _topic("reassign")
    _create(cluster, topic, 1, 2)
    _produce(cluster, topic, 0, 100)
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
    old = d.partitions[0].replicas
    (spare,) = {1, 2, 3} - set(old)
    target = [spare, old[0]]
    tp = KpTopicPartition(topic, 0)
    kp = _kafka_admin(cluster)
    try:
        assert kp.alter_partition_reassignments({tp: target}) == {tp: None}
        ongoing = kp.list_partition_reassignments()
        if tp in ongoing:  # it may already be done: the partition is small
            assert set(target) <= set(ongoing[tp]["replicas"])

        def done() -> bool:
            if tp in kp.list_partition_reassignments([tp]):
                return False
            (row,) = _describe(cluster, topic)
            return f"Replicas: {spare},{old[0]} " in row

        _eventually(done, "the reassignment to finish")
        with Admin(cluster.bootstrap) as admin:
            assert admin.list_partition_reassignments() == {}
            (d,) = admin.describe_topics([topic])
        assert d.partitions[0].replicas == target
        # a cancel with nothing to cancel is answered as Kafka answers it
        assert kp.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
    finally:
        kp.close()


# ----- ElectLeaders after a restart ------------------------------------------------------------


@pytest.mark.slow  # kills or pauses brokers
def test_elect_leaders_moves_leadership_back_after_a_restart(
    cluster_factory: ClusterFactory,
) -> None:
    from confluent_kafka import ElectionType
    from confluent_kafka import TopicPartition as CkTopicPartition

    cluster = cluster_factory(3)
    topic = _topic("elect")
    _create(cluster, topic, 3, 3)
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
        assert all(p.leader == p.replicas[0] for p in d.partitions)
        victim = d.partitions[0].leader
        cluster.kill(victim)
        _eventually(lambda: _leaders_avoid(admin, topic, victim), "leaders to move")
        cluster.start(victim)
        _eventually(lambda: _isr_full(admin, topic), "the restarted broker to rejoin the ISRs")
        (d,) = admin.describe_topics([topic])
    moved = {p.partition for p in d.partitions if p.leader != p.replicas[0]}
    assert moved and all(d.partitions[p].replicas[0] == victim for p in moved)

    # kafka-python: the partitions named; those already led by their preferred replica are
    # ELECTION_NOT_NEEDED (which kafka-python does not raise)
    kp = _kafka_admin(cluster)
    try:
        resp = kp.elect_leaders(0, {topic: sorted(moved)})
    finally:
        kp.close()
    codes = {r.partition_id: r.error_code for t in resp.replica_election_results
             for r in t.partition_result}  # fmt: skip
    assert codes == dict.fromkeys(moved, 0)
    rows = _describe(cluster, topic)
    for row in rows:
        m = re.match(r"Topic: \S+ Partition: (\d+) Leader: (\d+) Replicas: (\d+),", row)
        assert m is not None and m.group(2) == m.group(3), row

    # confluent-kafka, every partition: nothing needs an election now, and nothing is reported
    admin = _confluent_admin(cluster)
    everything = admin.elect_leaders(ElectionType.PREFERRED, None).result(30)
    assert all(err is None for err in everything.values()), everything
    assert not any(tp.topic == topic for tp in everything)
    named = [CkTopicPartition(topic, p) for p in range(3)]
    results = admin.elect_leaders(ElectionType.PREFERRED, named).result(30)
    assert {tp.partition: err.code() for tp, err in results.items()} == dict.fromkeys(
        range(3), ELECTION_NOT_NEEDED
    )
    # unclean: every partition has a live leader, so no election is needed either
    results = admin.elect_leaders(ElectionType.UNCLEAN, named).result(30)
    assert {err.code() for err in results.values()} == {ELECTION_NOT_NEEDED}


def _leaders_avoid(admin: Admin, topic: str, broker: int) -> bool:
    (d,) = admin.describe_topics([topic])
    return all(p.leader >= 0 and p.leader != broker for p in d.partitions)


def _isr_full(admin: Admin, topic: str) -> bool:
    (d,) = admin.describe_topics([topic])
    return all(len(p.isr) == len(p.replicas) for p in d.partitions)
