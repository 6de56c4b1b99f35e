"""Topic ids (KIP-516) against real ZooKeeper and broker processes.

- CreateTopics v7 answers the new topic's id; every broker's Metadata (v12) gives the same id,
  and each replica's directory holds it in partition.metadata (Kafka's two lines);
- the id survives killing the controller (a new one loads it from the znode) and the restart of
  every broker;
- a topic deleted (DeleteTopics v6, by id) and created again gets a new id; Fetch v13 by the old
  id is UNKNOWN_TOPIC_ID on each partition, by the new one it reads;
- a topic written in the old znode form (version 1, no id) while no broker runs gets an id when
  the controller starts, written into its znode; a znode rewritten without the id (an old tool
  adding a partition) gets the same id back;
- Metadata v12 looks topics up by id (an unknown one: UNKNOWN_TOPIC_ID, null name), and
  DescribeTopicPartitions answers the id;
- Produce v13 (Kafka 4.1) names topics by id: it appends and answers under the id, an id no
  topic has is UNKNOWN_TOPIC_ID; ListOffsets v11 (Kafka 4.2) answers earliest pending upload
  (-6) with offset -1, nothing being tiered (shared cluster);
- kafka-python infers Kafka 4.2 from ApiVersions;
- an API version odradek does not serve closes the connection and the broker logs exactly one
  line naming the client.
"""

from __future__ import annotations

import json
import socket
import struct
import time
import uuid
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from protocol.kafka.versions import (
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_TOPIC_PARTITIONS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
)
from protocol.topic_ids import decode_topic_id, encode_topic_id, new_topic_id
from tests.fixtures.cluster import ClusterFactory, wait_until
from tests.integration.kafka_wire import KafkaConn, addresses, nested
from tests.unit.broker.helpers import batch

pytestmark = pytest.mark.integration

TOPIC = "ids"
WAIT_S = 60.0
UNKNOWN_TOPIC_ID = 100


def _metadata(address: tuple[str, int], topic: str) -> Any:
    with KafkaConn(address) as conn:
        wanted = (nested(METADATA, 12, "MetadataRequestTopic", name=topic, topic_id=None),)
        resp = conn.call(METADATA, 12, topics=wanted, allow_auto_topic_creation=False,
                         include_topic_authorized_operations=False)  # fmt: skip
    (t,) = resp.topics
    return t


def _ids_everywhere(cluster: LocalCluster, topic: str) -> set[uuid.UUID | None] | None:
    """The ids every live broker's Metadata gives for `topic`; None until all have it led."""
    ids: set[uuid.UUID | None] = set()
    for address in addresses(cluster.kafka_bootstrap):
        try:
            t = _metadata(address, topic)
        except OSError:
            return None
        if (
            t.error_code.value != 0
            or not t.partitions
            or any(p.leader_id < 0 for p in t.partitions)
        ):
            return None
        ids.add(t.topic_id)
    return ids


def _agreed_id(cluster: LocalCluster, topic: str) -> uuid.UUID:
    found = wait_until(lambda: _ids_everywhere(cluster, topic), f"{topic} on every broker", WAIT_S)
    ids: set[uuid.UUID | None] = found or set()
    assert len(ids) == 1, f"brokers disagree on the id of {topic}: {ids}"
    (tid,) = ids
    assert tid is not None, f"{topic} has no id"
    return tid


def _create(cluster: LocalCluster, topic: str, partitions: int = 2) -> uuid.UUID:
    address = addresses(cluster.kafka_bootstrap)[0]
    t = nested(CREATE_TOPICS, 7, "CreatableTopic", name=topic, num_partitions=partitions,
               replication_factor=3, assignments=(), configs=())  # fmt: skip
    with KafkaConn(address, timeout_s=WAIT_S) as conn:
        resp = conn.call(CREATE_TOPICS, 7, topics=(t,), timeout=30_000, validate_only=False)
    (r,) = resp.topics
    assert r.error_code.value == 0, r.error_message
    assert r.topic_id is not None
    return uuid.UUID(str(r.topic_id))


def _fetch_by_id(address: tuple[str, int], topic_id: uuid.UUID, version: int = 13) -> Any:
    part = nested(FETCH, version, "FetchPartition", partition=0, current_leader_epoch=-1,
                  fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                  partition_max_bytes=1 << 20)  # fmt: skip
    topic = nested(FETCH, version, "FetchTopic", topic_id=topic_id, partitions=(part,))
    with KafkaConn(address) as conn:
        return conn.call(FETCH, version, max_wait=0, min_bytes=0, max_bytes=1 << 20,
                         isolation_level=0, session_id=0, session_epoch=-1, topics=(topic,),
                         forgotten_topics_data=(), rack_id="")  # fmt: skip


def _partition_metadata_ids(cluster: LocalCluster, topic: str) -> dict[str, str]:
    return {
        str(path.relative_to(cluster.dir)): path.read_text()
        for path in sorted((cluster.dir / "data").glob(f"broker-*/{topic}-*/partition.metadata"))
    }


def _restart_all(cluster: LocalCluster) -> None:
    for b in cluster.broker_ids:
        cluster.kill(b)
    for b in cluster.broker_ids:
        cluster.start(b, wait=False)
    cluster.wait_ready()


@pytest.mark.slow  # kills or pauses brokers
def test_ids_live_through_failover_restart_and_recreation(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(3)
    created = _create(cluster, TOPIC)
    assert _agreed_id(cluster, TOPIC) == created

    def six_files() -> dict[str, str]:
        files = _partition_metadata_ids(cluster, TOPIC)
        return files if len(files) == 6 else {}  # 2 partitions x 3 replicas

    files = wait_until(six_files, "partition.metadata files", WAIT_S)
    assert set(files.values()) == {f"version: 0\ntopic_id: {encode_topic_id(created)}\n"}

    controller = cluster.controller_id()
    assert controller is not None
    cluster.kill(controller)
    wait_until(
        lambda: cluster.controller_id() not in (None, controller), "a new controller", WAIT_S
    )
    cluster.start(controller)
    assert _agreed_id(cluster, TOPIC) == created
    _restart_all(cluster)
    assert _agreed_id(cluster, TOPIC) == created

    # delete by id, create again: a new id; the old one is unknown to Fetch v13+
    address = addresses(cluster.kafka_bootstrap)[0]
    gone = nested(DELETE_TOPICS, 6, "DeleteTopicState", name=None, topic_id=created)
    with KafkaConn(address, timeout_s=WAIT_S) as conn:
        resp = conn.call(DELETE_TOPICS, 6, topics=(gone,), timeout=30_000)
    (r,) = resp.responses
    assert (r.name, r.error_code.value, r.topic_id) == (TOPIC, 0, created)

    def deleted() -> bool:
        return all(_metadata(a, TOPIC).error_code.value != 0 for a in bootstrap)

    bootstrap = addresses(cluster.kafka_bootstrap)
    wait_until(deleted, "the delete", WAIT_S)
    again = _create(cluster, TOPIC)
    assert again != created
    assert _agreed_id(cluster, TOPIC) == again
    # Metadata v12 by id: the new id names the topic, the old one is UNKNOWN_TOPIC_ID
    with KafkaConn(address) as conn:
        by_id = tuple(nested(METADATA, 12, "MetadataRequestTopic", name=None, topic_id=i)
                      for i in (again, created))  # fmt: skip
        resp = conn.call(METADATA, 12, topics=by_id, allow_auto_topic_creation=False,
                         include_topic_authorized_operations=False)  # fmt: skip
        named = {t.topic_id: (t.name, t.error_code.value) for t in resp.topics}
        assert named == {again: (TOPIC, 0), created: (None, UNKNOWN_TOPIC_ID)}
        wanted = (nested(DESCRIBE_TOPIC_PARTITIONS, 0, "TopicRequest", name=TOPIC),)
        resp = conn.call(DESCRIBE_TOPIC_PARTITIONS, 0, topics=wanted,
                         response_partition_limit=100, cursor=None)  # fmt: skip
        assert [(t.name, t.topic_id) for t in resp.topics] == [(TOPIC, again)]
    for version in (13, 17):
        for a in addresses(cluster.kafka_bootstrap):
            (t,) = _fetch_by_id(a, created, version).responses
            assert t.topic_id == created
            assert [p.error_code.value for p in t.partitions] == [UNKNOWN_TOPIC_ID]
    leader = _metadata(address, TOPIC).partitions
    p0 = next(p for p in leader if p.partition_index == 0)
    host_port = dict(zip(cluster.broker_ids, addresses(cluster.kafka_bootstrap), strict=True))
    (t,) = _fetch_by_id(host_port[p0.leader_id], again).responses
    assert t.topic_id == again and t.partitions[0].error_code.value == 0
    # deleting an id no topic has
    with KafkaConn(address) as conn:
        unknown = nested(DELETE_TOPICS, 6, "DeleteTopicState", name=None, topic_id=created)
        (r,) = conn.call(DELETE_TOPICS, 6, topics=(unknown,), timeout=5_000).responses
    assert r.error_code.value == UNKNOWN_TOPIC_ID and r.topic_id == created


@pytest.mark.slow  # kills or pauses brokers
def test_a_topic_without_an_id_gets_one_when_the_controller_starts(
    cluster_factory: ClusterFactory,
) -> None:
    from kazoo.client import KazooClient

    cluster = cluster_factory(3)
    for b in cluster.broker_ids:
        cluster.kill(b)
    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start()
    try:
        old_form = {"version": 1, "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]}}
        zk.create("/brokers/topics/legacy", json.dumps(old_form).encode(), makepath=True)
        for b in cluster.broker_ids:
            cluster.start(b, wait=False)
        cluster.wait_ready()
        tid = _agreed_id(cluster, "legacy")
        data, _ = zk.get("/brokers/topics/legacy")
        znode = json.loads(data)
        assert znode["version"] == 3 and decode_topic_id(znode["topic_id"]) == tid
        assert znode["partitions"] == old_form["partitions"]

        # an old tool adds a partition and writes the znode without the id: the controller
        # puts the same id back (a new one would not match the replicas' partition.metadata)
        grown = {"version": 1, "partitions": {**old_form["partitions"], "2": [3, 1, 2]}}
        zk.set("/brokers/topics/legacy", json.dumps(grown).encode())

        def restored() -> dict[str, Any]:
            obj: dict[str, Any] = json.loads(zk.get("/brokers/topics/legacy")[0])
            return obj if "topic_id" in obj else {}

        znode = wait_until(restored, "the id written back", WAIT_S)
        assert decode_topic_id(znode["topic_id"]) == tid and "2" in znode["partitions"]
        assert _agreed_id(cluster, "legacy") == tid
    finally:
        zk.stop()
        zk.close()


def test_produce_v13_by_topic_id_and_list_offsets_v11(cluster3: LocalCluster) -> None:
    topic = f"by-id-{uuid.uuid4().hex[:8]}"
    tid = _create(cluster3, topic, partitions=1)
    assert _agreed_id(cluster3, topic) == tid
    by_broker = dict(zip(cluster3.broker_ids, addresses(cluster3.kafka_bootstrap), strict=True))
    (p0,) = _metadata(by_broker[cluster3.broker_ids[0]], topic).partitions
    gone = new_topic_id()

    def data(topic_id: uuid.UUID) -> Any:
        part = nested(PRODUCE, 13, "PartitionProduceData", index=0, records=batch(3))
        return nested(PRODUCE, 13, "TopicProduceData", topic_id=topic_id, partition_data=(part,))

    with KafkaConn(by_broker[p0.leader_id]) as conn:
        resp = conn.call(PRODUCE, 13, transactional_id=None, acks=-1, timeout=30_000,
                         topic_data=(data(tid), data(gone)))  # fmt: skip
        answered = {
            t.topic_id: [(p.index, p.error_code.value, p.base_offset) for p in parts]
            for t in resp.responses
            for parts in [t.partition_responses]
        }
        assert answered == {tid: [(0, 0, 0)], gone: [(0, UNKNOWN_TOPIC_ID, -1)]}
        asked = tuple(nested(LIST_OFFSETS, 11, "ListOffsetsPartition", partition_index=0,
                             current_leader_epoch=-1, timestamp=ts) for ts in (-6, -1))  # fmt: skip
        wanted = nested(LIST_OFFSETS, 11, "ListOffsetsTopic", name=topic, partitions=asked[:1])
        latest = nested(LIST_OFFSETS, 11, "ListOffsetsTopic", name=topic, partitions=asked[1:])
        listed = [
            [(p.error_code.value, p.timestamp, p.offset) for p in t.partitions]
            for t in conn.call(LIST_OFFSETS, 11, replica_id=-1, isolation_level=0,
                               topics=(wanted, latest), timeout=0).topics
        ]  # fmt: skip
    assert listed == [[(0, -1, -1)], [(0, -1, 3)]]


def test_kafka_python_infers_kafka_4(cluster_factory: ClusterFactory) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer  # type: ignore[import-untyped]

    cluster = cluster_factory(1)
    admin = KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap, request_timeout_ms=10_000)
    try:
        inferred = admin._client.check_version(timeout_ms=10_000)
    finally:
        admin.close()
    assert tuple(inferred)[:2] == (4, 2), f"kafka-python's admin infers {inferred}"
    consumer = KafkaConsumer(bootstrap_servers=cluster.kafka_bootstrap)
    try:
        assert tuple(consumer.config["api_version"])[:2] == (4, 2), consumer.config["api_version"]
    finally:
        consumer.close()


def test_an_unserved_version_is_refused_with_one_line_naming_the_client(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(1)
    host, port = addresses(cluster.kafka_bootstrap)[0]
    client_id = f"too-new-{uuid.uuid4().hex[:8]}"
    cid = client_id.encode()
    frame = struct.pack(">hhih", FETCH, 99, 7, len(cid)) + cid + b"\x00"
    for _ in range(3):  # retried: still one line
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            assert sock.recv(1024) == b"", "the broker closes the connection, as Kafka does"
    log_path = cluster.dir / f"broker-{cluster.broker_ids[0]}.log"

    def lines() -> list[str]:
        return [ln for ln in log_path.read_text().splitlines() if client_id in ln]

    found = wait_until(lines, "the log line", WAIT_S)
    time.sleep(0)  # the three refusals are already logged (each closed the connection first)
    assert len(found) == 1, found
    assert "Fetch (key 1) v99" in found[0] and "4-18" in found[0]
