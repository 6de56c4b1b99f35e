"""Golden bytes for the offset APIs on each door (broker/codecs/, harness in golden.py): a
known request frame decodes to the operation's request model, and a known result encodes to a
known response frame. test_codecs.py checks that every row of the table has them. OffsetFetch
v1 has no top-level error code: a group's error is written on each partition asked. OffsetCommit
and OffsetFetch v10 name topics by id: the answer gives each topic's id, and an unknown id's
partitions UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import uuid

import pytest

from broker.operations import offset_commit, offset_delete, offset_fetch
from protocol.api import group
from protocol.kafka import versions as v

from .golden import TOPIC_ID, Case, check, kio, many, nested

oc = offset_commit
COMMITTED = oc.OffsetCommitResult((oc.TopicCommitted("t", ((0, 0), (1, 29))),))
of = offset_fetch
FETCHED = of.GroupOffsets("g", 0, (of.FetchedTopic("t", (
    of.Fetched(0, 5, "x", 0, 2), of.Fetched(1, -1, None, 0))),))  # fmt: skip
GONE = uuid.UUID(int=1)

CASES = [
    Case("OffsetCommit native", 8, -1,
         lambda: group.OffsetCommitRequest("g", 3, "m1", [group.CommitTopic("t", [
             group.CommitPartition(0, 5, "x", 2), group.CommitPartition(1, 6)])], "i1"),
         oc.OffsetCommit("g", 3, "m1", (oc.CommitTopic("t", (
             oc.CommitPartition(0, 5, "x", 2), oc.CommitPartition(1, 6))),), "i1"),
         COMMITTED,
         "0000002095080007a16395a16703a26d319192a17492940005a17802940106c0ffa26931",
         "0000000f930700919192a1749292000092011d"),
    Case("OffsetCommit v2", v.OFFSET_COMMIT, 2,
         kio(v.OFFSET_COMMIT, 2, group_id="g", generation_id_or_member_epoch=3, member_id="m1",
             retention_time=-1, topics=many(nested("OffsetCommitRequestTopic", name="t",
                 partitions=many(nested("OffsetCommitRequestPartition", partition_index=0,
                                        committed_offset=5, committed_metadata="x"),
                                 nested("OffsetCommitRequestPartition", partition_index=1,
                                        committed_offset=6, committed_metadata=None))))),
         oc.OffsetCommit("g", 3, "m1", (oc.CommitTopic("t", (
             oc.CommitPartition(0, 5, "x"), oc.CommitPartition(1, 6))),),
             generation_is_epoch=False),
         COMMITTED,
         "0000004c000800020000000700076f64726164656b0001670000000300026d31ffffffffffffffff0000000100017400000002000000000000000000000005000178000000010000000000000006ffff",
         "0000001b00000007000000010001740000000200000000000000000001001d"),
    Case("OffsetCommit v9", v.OFFSET_COMMIT, 9,
         kio(v.OFFSET_COMMIT, 9, group_id="g", generation_id_or_member_epoch=3, member_id="m1",
             group_instance_id="i1", topics=many(nested("OffsetCommitRequestTopic", name="t",
                 partitions=many(nested("OffsetCommitRequestPartition", partition_index=0,
                                        committed_offset=5, committed_leader_epoch=2,
                                        committed_metadata="x"),
                                 nested("OffsetCommitRequestPartition", partition_index=1,
                                        committed_offset=6, committed_leader_epoch=-1,
                                        committed_metadata=None))))),
         oc.OffsetCommit("g", 3, "m1", (oc.CommitTopic("t", (
             oc.CommitPartition(0, 5, "x", 2), oc.CommitPartition(1, 6))),), "i1"),
         COMMITTED,
         "00000049000800090000000700076f64726164656b00026700000003036d310369310202740300000000000000000000000500000002027800000000010000000000000006ffffffff00000000",
         "0000001d000000070000000000020274030000000000000000000001001d000000"),
    Case("OffsetCommit v10", v.OFFSET_COMMIT, 10,
         kio(v.OFFSET_COMMIT, 10, group_id="g", generation_id_or_member_epoch=3, member_id="m1",
             group_instance_id="i1", topics=many(nested("OffsetCommitRequestTopic",
                 topic_id=TOPIC_ID,
                 partitions=many(nested("OffsetCommitRequestPartition", partition_index=0,
                                        committed_offset=5, committed_leader_epoch=2,
                                        committed_metadata="x"),
                                 nested("OffsetCommitRequestPartition", partition_index=1,
                                        committed_offset=6, committed_leader_epoch=-1,
                                        committed_metadata=None))))),
         oc.OffsetCommit("g", 3, "m1", (oc.CommitTopic("", (
             oc.CommitPartition(0, 5, "x", 2), oc.CommitPartition(1, 6))),), "i1",
             topic_ids=(TOPIC_ID,)),
         oc.OffsetCommitResult(COMMITTED.topics, {"t": TOPIC_ID}, ((GONE, (0,)),)),
         "000000570008000a0000000700076f64726164656b00026700000003036d31036931020123456789abcdef0123456789abcdef0300000000000000000000000500000002027800000000010000000000000006ffffffff00000000",
         "00000044000000070000000000030123456789abcdef0123456789abcdef030000000000000000000001001d00000000000000000000000000000000000102000000000064000000"),
    Case("OffsetFetch native", 9, -1,
         lambda: group.OffsetFetchRequest("g", [group.TopicPartitions("t", [0, 1])]),
         of.OffsetFetch((of.GroupWanted("g", (("t", (0, 1)),)),)),
         of.OffsetFetchResult((FETCHED,)),
         "0000001095090007a16392a1679192a174920001",
         "0000001793070092009192a17492950005a17800029501ffc000ff"),
    Case("OffsetFetch v1", v.OFFSET_FETCH, 1,
         kio(v.OFFSET_FETCH, 1, group_id="g", topics=many(
             nested("OffsetFetchRequestTopic", name="t", partition_indexes=(0, 1)))),
         of.OffsetFetch((of.GroupWanted("g", (("t", (0, 1)),)),)),
         of.OffsetFetchResult((of.GroupOffsets("g", 15),)),
         "00000027000900010000000700076f64726164656b00016700000001000174000000020000000000000001",
         "0000002f00000007000000010001740000000200000000ffffffffffffffff0000000f00000001ffffffffffffffff0000000f"),
    Case("OffsetFetch v9", v.OFFSET_FETCH, 9,
         kio(v.OFFSET_FETCH, 9, require_stable=True, groups=many(
             nested("OffsetFetchRequestGroup", group_id="g", member_id="m1", member_epoch=3,
                    topics=many(nested("OffsetFetchRequestTopics", name="t",
                                       partition_indexes=(0, 1)))),
             nested("OffsetFetchRequestGroup", group_id="h", member_id=None, member_epoch=-1,
                    topics=None))),
         of.OffsetFetch((of.GroupWanted("g", (("t", (0, 1)),), "m1", 3),
                         of.GroupWanted("h", None)), True),
         of.OffsetFetchResult((FETCHED, of.GroupOffsets("h", 30))),
         "00000035000900090000000700076f64726164656b00030267036d31000000030202740300000000000000010000026800ffffffff00000100",
         "000000440000000700000000000302670202740300000000000000000000000500000002027800000000000001ffffffffffffffffffffffff0100000000000000026801001e0000"),
    Case("OffsetFetch v10", v.OFFSET_FETCH, 10,
         kio(v.OFFSET_FETCH, 10, require_stable=True, groups=many(
             nested("OffsetFetchRequestGroup", group_id="g", member_id="m1", member_epoch=3,
                    topics=many(nested("OffsetFetchRequestTopics", topic_id=TOPIC_ID,
                                       partition_indexes=(0, 1)))),
             nested("OffsetFetchRequestGroup", group_id="h", member_id=None, member_epoch=-1,
                    topics=None))),
         of.OffsetFetch((of.GroupWanted("g", (("", (0, 1)),), "m1", 3, (TOPIC_ID,)),
                         of.GroupWanted("h", None)), True, True),
         of.OffsetFetchResult((of.GroupOffsets("g", 0, FETCHED.topics, {"t": TOPIC_ID},
                                               ((GONE, (2,)),)),
                               of.GroupOffsets("h", 30))),
         "000000430009000a0000000700076f64726164656b00030267036d3100000003020123456789abcdef0123456789abcdef0300000000000000010000026800ffffffff00000100",
         "00000078000000070000000000030267030123456789abcdef0123456789abcdef0300000000000000000000000500000002027800000000000001ffffffffffffffffffffffff0100000000000000000000000000000000000000010200000002ffffffffffffffffffffffff0100640000000000026801001e0000"),
    Case("OffsetDelete v0", v.OFFSET_DELETE, 0,
         kio(v.OFFSET_DELETE, 0, group_id="g", topics=many(
             nested("OffsetDeleteRequestTopic", name="t", partitions=many(
                 nested("OffsetDeleteRequestPartition", partition_index=0),
                 nested("OffsetDeleteRequestPartition", partition_index=1))))),
         offset_delete.OffsetDelete("g", (("t", (0, 1)),)),
         offset_delete.OffsetDeleteResult(0, (
             offset_delete.TopicDeleted("t", ((0, 86), (1, 0))),)),
         "00000027002f00000000000700076f64726164656b00016700000001000174000000020000000000000001",
         "00000021000000070000000000000000000100017400000002000000000056000000010000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
