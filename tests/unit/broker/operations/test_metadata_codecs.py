"""Golden bytes for the metadata APIs on each door (broker/codecs/*/metadata.py, harness in
golden.py): a known request frame decodes to the operation's request model, and a known result
encodes to a known response frame. Metadata v0 asks for every topic with an empty list and
always allows auto-creation; v13 names a topic by id (null name) and answers ids, operations
and a top-level error code. ApiVersions v4 is flexible but, as Kafka's, answers with a v0
response header (no tagged fields byte after the correlation id). DescribeTopicPartitions
writes both ELR lists empty (01) and a next cursor as a present nullable struct (01 ...).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from broker.operations import (
    alter_replica_log_dirs,
    api_versions,
    describe_cluster,
    describe_log_dirs,
    describe_topic_partitions,
    metadata,
)
from protocol.api.metadata import KAFKA_DOOR, BrokerInfo, PartitionMetadata, TopicMetadata
from protocol.api.metadata import MetadataRequest as NativeMetadata
from protocol.kafka import codec
from protocol.kafka import versions as v

from .golden import TOPIC_ID, Case, check, kio, many, nested


def _asked(name: str | None, topic_id: uuid.UUID | None) -> Callable[[Any], Any]:
    """A Metadata request's topic (its field `name` would clash with golden.nested's)."""
    cls = "MetadataRequestTopic"
    return lambda req: codec.make(codec.nested(req, cls), name=name, topic_id=topic_id)


TOPIC = TopicMetadata(0, "t", False, [PartitionMetadata(0, 0, 1, 4, [1, 2], [1], [2])])
META = metadata.MetadataResult([BrokerInfo(1, "h", 9092, "r")], "cid", 1, [TOPIC])
META_IDS = metadata.MetadataResult(
    [BrokerInfo(1, "h", 9092, None)], "cid", 1, [TOPIC], ((TOPIC_ID, 100),),
    {"t": TOPIC_ID}, {"t": 8}, 0,
)  # fmt: skip


def _named(entity: str, name: str) -> Callable[[Any], Any]:
    return lambda req: codec.make(codec.nested(req, entity), name=name)


CASES = [
    Case("Metadata native", v.METADATA, -1, lambda: NativeMetadata(["t"]),
         metadata.Metadata(("t",)), META,
         "0000000b95030007a1639291a174c2",
         "0000002993070094919701a168cd2384a172c0ff90a363696401919400a174c291970000010492010291019102"),
    Case("Metadata v0", v.METADATA, 0, kio(v.METADATA, 0, topics=()),
         metadata.Metadata(None, KAFKA_DOOR, True), META,
         "00000015000300000000000700076f64726164656b00000000",
         "0000003e0000000700000001000000010001680000238400000001000000017400000001000000000000000000010000000200000001000000020000000100000001"),
    Case("Metadata v13", v.METADATA, 13,
         kio(v.METADATA, 13, topics=many(_asked("t", None), _asked(None, TOPIC_ID)),
             allow_auto_topic_creation=False, include_topic_authorized_operations=True),
         metadata.Metadata(("t", TOPIC_ID), KAFKA_DOOR, False, True, False, True), META_IDS,

         "0000003b0003000d0000000700076f64726164656b0003000000000000000000000000000000000274000123456789abcdef0123456789abcdef0000000100",
         "0000007900000007000000000002000000010268000023840000046369640000000103000002740123456789abcdef0123456789abcdef00020000000000000000000100000004030000000100000002020000000102000000020000000008000064000123456789abcdef0123456789abcdef00018000000000000000"),
]  # fmt: skip


LISTED = api_versions.ApiVersionsResult(0, ((3, 0, 13), (18, 0, 4)))

CASES += [
    Case("ApiVersions v0", v.API_VERSIONS, 0, kio(v.API_VERSIONS, 0),
         api_versions.ApiVersions(True), LISTED,
         "00000011001200000000000700076f64726164656b",
         "000000160000000700000000000200030000000d001200000004"),
    Case("ApiVersions v4", v.API_VERSIONS, 4,
         kio(v.API_VERSIONS, 4, client_software_name="odradek-test",
             client_software_version="1.0"),
         api_versions.ApiVersions(True), LISTED,
         "00000024001200040000000700076f64726164656b000d6f64726164656b2d7465737404312e3000",
         "0000001a0000000700000300030000000d00001200000004000000000000"),
]  # fmt: skip

FEATURED = api_versions.ApiVersionsResult(
    0,
    ((3, 0, 13), (18, 0, 4)),
    (("transaction.version", 0, 2), ("some.feature", 1, 3)),
    (("transaction.version", 2),),
    0,
)
CASES += [  # v3 leaves out a supported feature whose minimum is 0 (KAFKA-17011), v4 has it
    Case("ApiVersions v3 features", v.API_VERSIONS, 3,
         kio(v.API_VERSIONS, 3, client_software_name="odradek-test",
             client_software_version="1.0"),
         api_versions.ApiVersions(True), FEATURED,
         "00000024001200030000000700076f64726164656b000d6f64726164656b2d7465737404312e3000",
         "000000550000000700000300030000000d000012000000040000000000030013020d736f6d652e66656174757265000100030001080000000000000000021a02147472616e73616374696f6e2e76657273696f6e0002000200"),
    Case("ApiVersions v4 features", v.API_VERSIONS, 4,
         kio(v.API_VERSIONS, 4, client_software_name="odradek-test",
             client_software_version="1.0"),
         api_versions.ApiVersions(True), FEATURED,
         "00000024001200040000000700076f64726164656b000d6f64726164656b2d7465737404312e3000",
         "0000006e0000000700000300030000000d00001200000004000000000003002c03147472616e73616374696f6e2e76657273696f6e00000002000d736f6d652e66656174757265000100030001080000000000000000021a02147472616e73616374696f6e2e76657273696f6e0002000200"),
]  # fmt: skip

DESCRIBED = describe_cluster.DescribeClusterResult(
    0, None, 1, "cid", 1, (BrokerInfo(1, "h", 9092, "r"),), 8
)
CASES += [
    Case("DescribeCluster v0", v.DESCRIBE_CLUSTER, 0,
         kio(v.DESCRIBE_CLUSTER, 0, include_cluster_authorized_operations=True),
         describe_cluster.DescribeCluster(1, True), DESCRIBED,
         "00000014003c00000000000700076f64726164656b000100",
         "00000027000000070000000000000000046369640000000102000000010268000023840272000000000800"),
    Case("DescribeCluster v1", v.DESCRIBE_CLUSTER, 1,
         kio(v.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False,
             endpoint_type=2),
         describe_cluster.DescribeCluster(2, False),
         describe_cluster.DescribeClusterResult(119, "no", 2, "cid", -1, ()),
         "00000015003c00010000000700076f64726164656b00000200",
         "0000001d0000000700000000000077036e6f0204636964ffffffff018000000000"),
    # v2 (KIP-1073): fenced brokers asked for too; there are none, each broker is_fenced false
    Case("DescribeCluster v2", v.DESCRIBE_CLUSTER, 2,
         kio(v.DESCRIBE_CLUSTER, 2, include_cluster_authorized_operations=False,
             endpoint_type=1, include_fenced_brokers=True),
         describe_cluster.DescribeCluster(1, False), DESCRIBED,
         "00000016003c00020000000700076f64726164656b0000010100",
         "000000290000000700000000000000000104636964000000010200000001026800002384027200000000000800"),
]  # fmt: skip

dtp = describe_topic_partitions
PAGE = dtp.DescribeTopicPartitionsResult(
    (dtp.DescribedTopic(0, "t", TOPIC_ID, False, tuple(TOPIC.partitions), 8),
     dtp.DescribedTopic(29, "u", None)),
    dtp.Cursor("t", 1),
)  # fmt: skip
CASES += [
    Case("DescribeTopicPartitions v0", v.DESCRIBE_TOPIC_PARTITIONS, 0,
         kio(v.DESCRIBE_TOPIC_PARTITIONS, 0, topics=many(_named("TopicRequest", "t"),
                                                         _named("TopicRequest", "u")),
             response_partition_limit=1,
             cursor=lambda cls: codec.make(codec.nested(cls, "Cursor"), topic_name="t",
                                           partition_index=0)),
         dtp.DescribeTopicPartitions(("t", "u"), dtp.Cursor("t", 0), 1), PAGE,
         "00000026004b00000000000700076f64726164656b000302740002750000000001010274000000000000",
         "0000006d00000007000000000003000002740123456789abcdef0123456789abcdef00020000000000000000000100000004030000000100000002020000000101010200000002000000000800001d02750000000000000000000000000000000000018000000000010274000000010000"),
]  # fmt: skip

ldp = describe_log_dirs.LogDirPartition
DIRS = describe_log_dirs.DescribeLogDirsResult(
    0,
    (
        describe_log_dirs.LogDir(
            0, "/d", (ldp("t", 0, 100, 0), ldp("t", 1, 0, 0), ldp("u", 0, 5, -1)), 1000, 400
        ),
    ),
)
CASES += [
    Case("DescribeLogDirs v1", v.DESCRIBE_LOG_DIRS, 1, kio(v.DESCRIBE_LOG_DIRS, 1, topics=None),
         describe_log_dirs.DescribeLogDirs(None), DIRS,
         "00000015002300010000000700076f64726164656bffffffff",
         "00000063000000070000000000000001000000022f64000000020001740000000200000000000000000000006400000000000000000000000001000000000000000000000000000000000000017500000001000000000000000000000005ffffffffffffffff00"),
    Case("DescribeLogDirs v4", v.DESCRIBE_LOG_DIRS, 4,
         kio(v.DESCRIBE_LOG_DIRS, 4, topics=many(
             lambda cls: codec.make(codec.nested(cls, "DescribableLogDirTopic"), topic="t",
                                    partitions=(0, 1)))),
         describe_log_dirs.DescribeLogDirs(frozenset({("t", 0), ("t", 1)})), DIRS,
         "00000020002300040000000700076f64726164656b000202740300000000000000010000",
         "0000006e0000000700000000000000020000032f6403027403000000000000000000000064000000000000000000000000000100000000000000000000000000000000000000027502000000000000000000000005ffffffffffffffff00000000000000000003e800000000000001900000"),
    # a replica being moved: its future log in "/e" (is_future_key, its lag behind the
    # current log); "/f" offline (KAFKA_STORAGE_ERROR, no logs, no byte counts)
    Case("DescribeLogDirs v4, a move", v.DESCRIBE_LOG_DIRS, 4,
         kio(v.DESCRIBE_LOG_DIRS, 4, topics=many(
             lambda cls: codec.make(codec.nested(cls, "DescribableLogDirTopic"), topic="t",
                                    partitions=(0, 1)))),
         describe_log_dirs.DescribeLogDirs(frozenset({("t", 0), ("t", 1)})),
         describe_log_dirs.DescribeLogDirsResult(0, (
             describe_log_dirs.LogDir(0, "/d", (ldp("t", 0, 100, 0),), 1000, 400),
             describe_log_dirs.LogDir(0, "/e", (ldp("t", 0, 40, 60, is_future=True),), 1000, 400),
             describe_log_dirs.LogDir(56, "/f", ()),
         )),
         "00000020002300040000000700076f64726164656b000202740300000000000000010000",
         "000000860000000700000000000000040000032f6402027402000000000000000000000064000000000000000000000000000000000003e80000000000000190000000032f6502027402000000000000000000000028000000000000003c01000000000000000003e80000000000000190000038032f6601ffffffffffffffffffffffffffffffff0000"),
]  # fmt: skip


ard = alter_replica_log_dirs
MOVED = ard.AlterReplicaLogDirsResult(
    (ard.ReplicaMoved("t", 0, 0), ard.ReplicaMoved("u", 1, 57), ard.ReplicaMoved("t", 2, 9))
)


def alter_dirs_request(version: int) -> Callable[[], Any]:
    """t-0 and t-2 to /d, u-1 to /e."""
    return kio(v.ALTER_REPLICA_LOG_DIRS, version, dirs=many(
        nested("AlterReplicaLogDir", path="/d", topics=many(
            nested("AlterReplicaLogDirTopic", name="t", partitions=(0, 2)))),
        nested("AlterReplicaLogDir", path="/e", topics=many(
            nested("AlterReplicaLogDirTopic", name="u", partitions=(1,))))))  # fmt: skip


MOVES = ard.AlterReplicaLogDirs((("/d", (("t", 0), ("t", 2))), ("/e", (("u", 1),))))
CASES += [  # answered by topic, in the order first asked
    Case("AlterReplicaLogDirs v1", v.ALTER_REPLICA_LOG_DIRS, 1, alter_dirs_request(1), MOVES,
         MOVED,
         "0000003f002200010000000700076f64726164656b0000000200022f640000000100017400000002000000000000000200022f65000000010001750000000100000001",
         "0000002c0000000700000000000000020001740000000200000000000000000002000900017500000001000000010039"),
    Case("AlterReplicaLogDirs v2", v.ALTER_REPLICA_LOG_DIRS, 2, alter_dirs_request(2), MOVES,
         MOVED,
         "00000032002200020000000700076f64726164656b0003032f640202740300000000000000020000032f650202750200000001000000",
         "0000002800000007000000000003027403000000000000000000000200090000027502000000010039000000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
