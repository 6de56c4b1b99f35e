"""Golden bytes for the offset APIs on each door (broker/codecs/, harness in golden.py): a
known request frame decodes to the operation's request model, and a known result encodes to a
known response frame. test_codecs.py checks that every row of the table has them.
"""

from __future__ import annotations

import pytest

from broker.operations import offset_commit
from protocol.api import group
from protocol.kafka import versions as v

from .golden import Case, check, kio, many, nested

oc = offset_commit
COMMITTED = oc.OffsetCommitResult((oc.TopicCommitted("t", ((0, 0), (1, 29))),))

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
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
