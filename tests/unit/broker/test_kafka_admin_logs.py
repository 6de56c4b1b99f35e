"""The Kafka door's admin and log APIs over a real socket: DeleteRecords, DescribeLogDirs,
DescribeCluster, DescribeTopicPartitions, ElectLeaders and the reassignment APIs (the last three
with the controller's native answers stubbed, since these in-process brokers have no
controller), and DeleteRecords on a replicated partition, waiting for the followers."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from broker.doors import KafkaDoor
from broker.security.authorizer import AclCache, Authorizer
from broker.server import BrokerServer
from protocol.acl import AclOperation, ResourceType
from protocol.api.fetch import FetchResponse
from protocol.api.metadata import MetadataRequest
from protocol.errors import (
    ClusterAuthorizationFailedError,
    NotControllerError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)
from protocol.kafka import codec
from protocol.kafka.codec import make, nested
from protocol.kafka.versions import (
    ALTER_PARTITION_REASSIGNMENTS,
    ALTER_REPLICA_LOG_DIRS,
    DELETE_RECORDS,
    DESCRIBE_CLUSTER,
    DESCRIBE_LOG_DIRS,
    DESCRIBE_TOPIC_PARTITIONS,
    ELECT_LEADERS,
    LIST_OFFSETS,
    LIST_PARTITION_REASSIGNMENTS,
    METADATA,
)
from protocol.principal import ANONYMOUS
from tests.unit.broker.harness import BROKER_ID, BrokerHarness, running_broker
from tests.unit.broker.helpers import batch, fetch, produce
from tests.unit.broker.replication_cluster import Cluster, cluster, eventually
from tests.unit.broker.test_acl_rules import grant
from tests.unit.broker.test_kafka_door import KafkaRaw

INVALID_REQUEST = 42
NO_REASSIGNMENT_IN_PROGRESS = 85
CLUSTER_ID = "b3Jk-cmFkZWstdGVzdC1pZA"


def req(key: int, version: int, entity: str, **fields: Any) -> Any:
    """A nested request entity of (key, version)."""
    return make(nested(codec.request_class(key, version), entity), **fields)


async def kafka_call(port: int, key: int, version: int, **fields: Any) -> Any:
    c = await KafkaRaw.connect(port)
    try:
        c.send(key, version, 7, **fields)
        corr, resp = await c.read(key, version)
        assert corr == 7
        return resp
    finally:
        c.close()


async def produced(b: BrokerHarness, topic: str, batches: int, partition: int = 0) -> None:
    conn = await b.connect()
    for _ in range(batches):
        resp = await conn.send(produce(topic, partition, batch(10)))
        assert resp.topics[0].partitions[0].error_code == 0


def delete_records(version: int, topic: str, offsets: dict[int, int], timeout_ms: int) -> Any:
    parts = tuple(
        req(DELETE_RECORDS, version, "DeleteRecordsPartition", partition_index=p, offset=o)
        for p, o in offsets.items()
    )
    topics = (req(DELETE_RECORDS, version, "DeleteRecordsTopic", name=topic, partitions=parts),)
    return {"topics": topics, "timeout": timeout_ms}


def by_partition(resp: Any) -> dict[tuple[str, int], tuple[int, int]]:
    return {
        (t.name, p.partition_index): (p.error_code.value, p.low_watermark)
        for t in resp.topics
        for p in t.partitions
    }


# ----- DeleteRecords ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_delete_records_moves_the_log_start(tmp_path: Path, version: int) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t", partitions=2)
        await produced(b, "t", 3)  # offsets 0..29 in partition 0
        await produced(b, "t", 1, partition=1)
        body = delete_records(version, "t", {0: 13, 1: -1}, 5000)
        resp = await kafka_call(b.kafka_port, DELETE_RECORDS, version, **body)
        assert by_partition(resp) == {("t", 0): (0, 13), ("t", 1): (0, 10)}  # -1: the HW
        assert b.ctx.replicas.partitions[("t", 0)].log.log_start_offset == 13
        # ListOffsets earliest now says 13, and reads below it are out of range
        lo = req(
            LIST_OFFSETS,
            6,
            "ListOffsetsPartition",
            partition_index=0,
            current_leader_epoch=-1,
            timestamp=-2,
        )
        topics = (req(LIST_OFFSETS, 6, "ListOffsetsTopic", name="t", partitions=(lo,)),)
        lresp = await kafka_call(
            b.kafka_port, LIST_OFFSETS, 6, replica_id=-1, isolation_level=0, topics=topics
        )
        assert lresp.topics[0].partitions[0].offset == 13
        native = await b.connect()
        below: FetchResponse = await native.send(fetch("t", {0: 12}))
        assert below.topics[0].partitions[0].error_code == OffsetOutOfRangeError.code
        at: FetchResponse = await native.send(fetch("t", {0: 13}))
        assert at.topics[0].partitions[0].error_code == 0
        assert at.topics[0].partitions[0].log_start_offset == 13


# ----- DescribeLogDirs -------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 4])
async def test_describe_log_dirs_reports_sizes(tmp_path: Path, version: int) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t", partitions=2)
        await b.lead("u")
        await produced(b, "t", 2)
        resp = await kafka_call(b.kafka_port, DESCRIBE_LOG_DIRS, version, topics=None)
        (result,) = resp.results
        assert result.error_code.value == 0
        assert result.log_dir == str(tmp_path.absolute())
        sizes = {
            (t.name, p.partition_index): p.partition_size
            for t in result.topics
            for p in t.partitions
        }
        log = b.ctx.replicas.partitions[("t", 0)].log
        assert sizes == {("t", 0): log.size_bytes, ("t", 1): 0, ("u", 0): 0}
        assert sizes[("t", 0)] > 0
        assert {p.offset_lag for t in result.topics for p in t.partitions} == {0}
        assert not any(p.is_future_key for t in result.topics for p in t.partitions)
        if version >= 4:
            assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes
        named = (
            req(DESCRIBE_LOG_DIRS, version, "DescribableLogDirTopic", topic="t", partitions=(1, 7)),
        )
        resp = await kafka_call(b.kafka_port, DESCRIBE_LOG_DIRS, version, topics=named)
        (result,) = resp.results
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in result.topics] == [
            ("t", [1])
        ]


# ----- AlterReplicaLogDirs -----------------------------------------------------------------------

REPLICA_NOT_AVAILABLE, INVALID_TOPIC, KAFKA_STORAGE_ERROR, LOG_DIR_NOT_FOUND = 9, 17, 56, 57


async def alter_dirs(b: BrokerHarness, version: int, moves: dict[str, dict[str, list[int]]]
                     ) -> dict[tuple[str, int], int]:  # fmt: skip
    dirs = tuple(
        req(ALTER_REPLICA_LOG_DIRS, version, "AlterReplicaLogDir", path=path, topics=tuple(
            req(ALTER_REPLICA_LOG_DIRS, version, "AlterReplicaLogDirTopic", name=t,
                partitions=tuple(ps))
            for t, ps in topics.items()
        ))
        for path, topics in moves.items()
    )  # fmt: skip
    resp = await kafka_call(b.kafka_port, ALTER_REPLICA_LOG_DIRS, version, dirs=dirs)
    return {
        (t.topic_name, p.partition_index): p.error_code.value
        for t in resp.results
        for p in t.partitions
    }


@pytest.mark.parametrize("version", [1, 2])
async def test_alter_replica_log_dirs_answers_as_kafka_with_one_directory(
    tmp_path: Path, version: int
) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t", partitions=2)
        here = str(tmp_path.absolute())
        long_name = "x" * 220  # a legal topic whose `-future` directory name is over 255
        got = await alter_dirs(b, version, {
            here: {"t": [0, 1], "absent": [0], long_name: [0]},
            str(tmp_path / "elsewhere"): {"t": [7]},
        })  # fmt: skip
        assert got == {
            ("t", 0): 0, ("t", 1): 0,  # already there: nothing to move, as Kafka
            ("absent", 0): REPLICA_NOT_AVAILABLE,
            (long_name, 0): INVALID_TOPIC,
            ("t", 7): LOG_DIR_NOT_FOUND,
        }  # fmt: skip
        assert b.ctx.replicas.partitions[("t", 0)].log.directory == tmp_path / "t-0"
        b.log_manager.fail(OSError(5, "Input/output error"), "a test")
        assert await alter_dirs(b, version, {here: {"t": [0]}}) == {("t", 0): KAFKA_STORAGE_ERROR}


async def test_alter_replica_log_dirs_needs_alter_on_the_cluster(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        b.install_authorizer(Authorizer(AclCache()))
        here = str(tmp_path.absolute())
        assert await alter_dirs(b, 2, {here: {"t": [0], "u": [1]}}) == {
            ("t", 0): ClusterAuthorizationFailedError.code,
            ("u", 1): ClusterAuthorizationFailedError.code,
        }
        grant(b.ctx.authorizer, AclOperation.ALTER, ResourceType.CLUSTER, principal=ANONYMOUS)
        assert await alter_dirs(b, 2, {here: {"t": [0]}}) == {("t", 0): 0}


# ----- DescribeCluster and the cluster id ------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
async def test_describe_cluster_gives_kafka_endpoints_and_the_cluster_id(
    tmp_path: Path, version: int
) -> None:
    async with running_broker(tmp_path, cluster_id=CLUSTER_ID) as b:
        await b.lead("t")
        resp = await kafka_call(
            b.kafka_port,
            DESCRIBE_CLUSTER,
            version,
            include_cluster_authorized_operations=False,
            endpoint_type=1,
        )
        assert resp.error_code.value == 0
        assert resp.cluster_id == CLUSTER_ID
        assert resp.controller_id == b.ctx.metadata.controller_id
        assert [(x.broker_id, x.host, x.port) for x in resp.brokers] == [
            (BROKER_ID, "127.0.0.1", b.kafka_port)
        ]
        # Metadata gives the same id, through both doors
        meta = await kafka_call(
            b.kafka_port,
            METADATA,
            12,
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        assert meta.cluster_id == CLUSTER_ID
        native = await b.connect()
        assert (await native.send(MetadataRequest(None))).cluster_id == CLUSTER_ID


# ----- DescribeTopicPartitions -----------------------------------------------------------------


def dtp_topics(*names: str) -> tuple[Any, ...]:
    return tuple(req(DESCRIBE_TOPIC_PARTITIONS, 0, "TopicRequest", name=n) for n in names)


def dtp_cursor(topic: str, partition: int) -> Any:
    return req(DESCRIBE_TOPIC_PARTITIONS, 0, "Cursor", topic_name=topic, partition_index=partition)


def dtp_summary(resp: Any) -> list[tuple[str, int, list[int]]]:
    return [
        (t.name, t.error_code.value, [p.partition_index for p in t.partitions]) for t in resp.topics
    ]


async def test_describe_topic_partitions_pages_with_a_cursor(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("a", partitions=3)
        await b.lead("b", partitions=2)
        port = b.kafka_port
        resp = await kafka_call(
            port, DESCRIBE_TOPIC_PARTITIONS, 0, topics=(), response_partition_limit=4, cursor=None
        )
        assert dtp_summary(resp) == [("a", 0, [0, 1, 2]), ("b", 0, [0])]
        assert (resp.next_cursor.topic_name, resp.next_cursor.partition_index) == ("b", 1)
        resp = await kafka_call(
            port,
            DESCRIBE_TOPIC_PARTITIONS,
            0,
            topics=(),
            response_partition_limit=4,
            cursor=resp.next_cursor,
        )
        assert dtp_summary(resp) == [("b", 0, [1])] and resp.next_cursor is None
        p = resp.topics[0].partitions[0]
        assert (p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes)) == (1, (1,), (1,))
        assert p.eligible_leader_replicas == () and p.last_known_elr == ()
        # named topics, one unknown, in name order
        resp = await kafka_call(
            port,
            DESCRIBE_TOPIC_PARTITIONS,
            0,
            topics=dtp_topics("zz", "b"),
            response_partition_limit=100,
            cursor=None,
        )
        assert dtp_summary(resp) == [
            ("b", 0, [0, 1]),
            ("zz", UnknownTopicOrPartitionError.code, []),
        ]
        # a cursor outside the topics named is refused
        resp = await kafka_call(
            port,
            DESCRIBE_TOPIC_PARTITIONS,
            0,
            topics=dtp_topics("b"),
            response_partition_limit=100,
            cursor=dtp_cursor("a", 0),
        )
        assert dtp_summary(resp) == [("b", INVALID_REQUEST, [])]


# ----- controller APIs: NOT_CONTROLLER here, and the native answers translated --------------


async def test_controller_apis_on_a_broker_that_is_not_the_controller(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        port = b.kafka_port
        named = (req(ELECT_LEADERS, 0, "TopicPartitions", topic="t", partitions=(0,)),)
        v0 = await kafka_call(port, ELECT_LEADERS, 0, topic_partitions=named, timeout=1000)
        (result,) = v0.replica_election_results
        assert [r.error_code.value for r in result.partition_result] == [NotControllerError.code]
        for election_type in (0, 1):
            v2 = await kafka_call(
                port,
                ELECT_LEADERS,
                2,
                election_type=election_type,
                topic_partitions=None,
                timeout=1000,
            )
            assert v2.error_code.value == NotControllerError.code
        lst = await kafka_call(port, LIST_PARTITION_REASSIGNMENTS, 0, timeout=1000, topics=None)
        assert lst.error_code.value == NotControllerError.code
        part = req(
            ALTER_PARTITION_REASSIGNMENTS,
            0,
            "ReassignablePartition",
            partition_index=0,
            replicas=(1,),
        )
        topic = req(
            ALTER_PARTITION_REASSIGNMENTS, 0, "ReassignableTopic", name="t", partitions=(part,)
        )
        alt = await kafka_call(
            port, ALTER_PARTITION_REASSIGNMENTS, 0, timeout=1000, topics=(topic,)
        )
        assert alt.error_code.value == NotControllerError.code


# ----- DeleteRecords with followers ------------------------------------------------------------

T = "rep"


@contextlib.asynccontextmanager
async def kafka_door(c: Cluster, broker_id: int) -> AsyncIterator[int]:
    node = c.nodes[broker_id]
    server = BrokerServer(node.ctx, c.clock, KafkaDoor(), "127.0.0.1", 0)
    await server.start()
    try:
        yield server.port
    finally:
        await server.stop()


async def test_delete_records_waits_for_every_live_follower(tmp_path: Path) -> None:
    async with cluster(tmp_path, 3) as c:
        await c.elect(T, leader=1, replicas=[1, 2, 3], isr=[1, 2, 3])
        for _ in range(4):
            resp = await c.nodes[1].send(produce(T, 0, batch(10), acks=-1))
            assert resp.topics[0].partitions[0].error_code == 0
        async with kafka_door(c, 1) as port:
            resp = await kafka_call(
                port, DELETE_RECORDS, 2, **delete_records(2, T, {0: 25}, 10_000)
            )
            assert by_partition(resp) == {(T, 0): (0, 25)}
            # answered only once both followers had moved their own log start
            assert [c.nodes[i].log(T).log_start_offset for i in (1, 2, 3)] == [25, 25, 25]
            # a live follower that stops fetching holds the low watermark: REQUEST_TIMED_OUT
            c.nodes[3].replicas.fetchers.remove((T, 0))
            resp = await kafka_call(port, DELETE_RECORDS, 2, **delete_records(2, T, {0: 35}, 300))
            assert by_partition(resp) == {(T, 0): (RequestTimedOutError.code, 25)}
            assert c.nodes[1].log(T).log_start_offset == 35  # done on the leader all the same
            await eventually(lambda: c.nodes[2].log(T).log_start_offset == 35)
            assert c.nodes[3].log(T).log_start_offset == 25
