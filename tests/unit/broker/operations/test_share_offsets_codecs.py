"""Golden bytes for the share groups' offsets APIs on both doors (KIP-932;
broker/codecs/kafka/share_offsets.py and broker/codecs/native/share_offsets.py, harness in
golden.py): DescribeShareGroupOffsets v0-v1 (v1: KIP-1226's lag), AlterShareGroupOffsets v0
and DeleteShareGroupOffsets v0 on the Kafka door, and each on the native door."""

from __future__ import annotations

import pytest

from broker.operations import (
    alter_share_group_offsets as al,
)
from broker.operations import (
    delete_share_group_offsets as de,
)
from broker.operations import (
    describe_share_group_offsets as ds,
)
from protocol.api import share_offsets as wire
from protocol.kafka import versions as v

from .golden import TOPIC_ID, Case, check, kio, many, nested

DESCRIBE_MODEL = ds.DescribeShareGroupOffsets((ds.AskedGroup("s", (("t", (0,)),)),))
DESCRIBED = ds.DescribeShareGroupOffsetsResult((ds.GroupOffsets("s", (
    ds.TopicOffsets("t", (ds.PartitionOffset(0, 5, 2, 3),), TOPIC_ID),)),))  # fmt: skip
ALTER_MODEL = al.AlterShareGroupOffsets("s", (("t", ((0, 7),)),))
ALTERED_PARTS = (al.PartitionAltered(0), al.PartitionAltered(1, 3, "x"))
ALTERED = al.AlterShareGroupOffsetsResult(0, None, (al.TopicAltered("t", ALTERED_PARTS, TOPIC_ID),))
DELETE_MODEL = de.DeleteShareGroupOffsets("s", ("t",))
DELETED = de.DeleteShareGroupOffsetsResult(0, None, (de.TopicDeleted("t", 0, None, TOPIC_ID),))


def _describe(version: int) -> object:
    topic = nested("DescribeShareGroupOffsetsRequestTopic", topic_name="t", partitions=(0,))
    group = nested("DescribeShareGroupOffsetsRequestGroup", group_id="s", topics=many(topic))
    return kio(v.DESCRIBE_SHARE_GROUP_OFFSETS, version, groups=many(group))


def _alter() -> object:
    part = nested("AlterShareGroupOffsetsRequestPartition", partition_index=0, start_offset=7)
    topic = nested("AlterShareGroupOffsetsRequestTopic", topic_name="t", partitions=many(part))
    return kio(v.ALTER_SHARE_GROUP_OFFSETS, 0, group_id="s", topics=many(topic))


def _delete() -> object:
    topic = nested("DeleteShareGroupOffsetsRequestTopic", topic_name="t")
    return kio(v.DELETE_SHARE_GROUP_OFFSETS, 0, group_id="s", topics=many(topic))


CASES = [
    Case("DescribeShareGroupOffsets v0", v.DESCRIBE_SHARE_GROUP_OFFSETS, 0, _describe(0),
         DESCRIBE_MODEL, DESCRIBED,
         "00000020005a00000000000700076f64726164656b000202730202740200000000000000",
         "0000003a0000000700000000000202730202740123456789abcdef0123456789abcdef020000000000000000000000050000000200000000000000000000"),
    Case("DescribeShareGroupOffsets v1", v.DESCRIBE_SHARE_GROUP_OFFSETS, 1, _describe(1),
         DESCRIBE_MODEL, DESCRIBED,
         "00000020005a00010000000700076f64726164656b000202730202740200000000000000",
         "000000420000000700000000000202730202740123456789abcdef0123456789abcdef0200000000000000000000000500000002000000000000000300000000000000000000"),
    Case("AlterShareGroupOffsets v0", v.ALTER_SHARE_GROUP_OFFSETS, 0, _alter(),
         ALTER_MODEL, ALTERED,
         "00000027005b00000000000700076f64726164656b00027302027402000000000000000000000007000000",
         "000000330000000700000000000000000202740123456789abcdef0123456789abcdef0300000000000000000000000100030278000000"),
    Case("DeleteShareGroupOffsets v0", v.DELETE_SHARE_GROUP_OFFSETS, 0, _delete(),
         DELETE_MODEL, DELETED,
         "00000019005c00000000000700076f64726164656b0002730202740000",
         "000000240000000700000000000000000202740123456789abcdef0123456789abcdef0000000000"),
    Case("DescribeShareGroupOffsets native", v.DESCRIBE_SHARE_GROUP_OFFSETS, -1,
         lambda: wire.DescribeShareGroupOffsetsRequest([wire.ShareOffsetsGroupRequest(
             "s", [wire.ShareOffsetsTopicRequest("t", [0])])]),
         DESCRIBE_MODEL, DESCRIBED,
         "00000011955a0007a163919192a1739192a1749100",
         "0000003c930700919194a17300c09193a174d92430313233343536372d383961622d636465662d303132332d34353637383961626364656691960005020300c0"),
    Case("AlterShareGroupOffsets native", v.ALTER_SHARE_GROUP_OFFSETS, -1,
         lambda: wire.AlterShareGroupOffsetsRequest(
             "s", [wire.ShareTopicToSet("t", [wire.ShareOffsetToSet(0, 7)])]),
         ALTER_MODEL, ALTERED,
         "00000011955b0007a16392a1739192a17491920007",
         "0000003a9307009300c09193a174d92430313233343536372d383961622d636465662d303132332d34353637383961626364656692930000c0930103a178"),
    Case("DeleteShareGroupOffsets native", v.DELETE_SHARE_GROUP_OFFSETS, -1,
         lambda: wire.DeleteShareGroupOffsetsRequest("s", ["t"]),
         DELETE_MODEL, DELETED,
         "0000000c955c0007a16392a17391a174",
         "000000329307009300c09194a174d92430313233343536372d383961622d636465662d303132332d34353637383961626364656600c0"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
