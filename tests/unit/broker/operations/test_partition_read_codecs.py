"""Golden bytes for the partition reads besides Fetch on each door
(broker/codecs/*/partition_reads.py, harness in golden.py). ListOffsets v1 has neither the
isolation level nor the leader epoch, and says OFFSET_NOT_AVAILABLE (78) as
LEADER_NOT_AVAILABLE (5); v10 says it as it is. OffsetForLeaderEpoch v2 has no replica id
(v3+), v4 is flexible; neither door's replica id reaches the operation.
"""

from __future__ import annotations

from typing import Any

import pytest

from broker.operations import list_offsets
from broker.operations import offset_for_leader_epoch as ofle
from protocol.api import list_offsets as wire
from protocol.api import replication
from protocol.kafka import codec
from protocol.kafka import versions as v

from .golden import Case, check, kio, many

Asked = list_offsets.Asked
LISTED = list_offsets.ListOffsetsResult(
    (("t", (list_offsets.Listed(0, 0, 1000, 42, 3), list_offsets.Listed(1, 78, -1, -1, -1))),)
)


def _topic(version: int, first: int = -1) -> Any:
    def build(cls: Any) -> Any:
        part_cls = codec.nested(cls, "ListOffsetsPartition")
        extra = {} if version < 4 else {"current_leader_epoch": 3}
        parts = (codec.make(part_cls, partition_index=0, timestamp=first, **extra),
                 codec.make(part_cls, partition_index=1, timestamp=-2, **extra))  # fmt: skip
        return codec.make(codec.nested(cls, "ListOffsetsTopic"), name="t", partitions=parts)

    return build


EPOCHS = ofle.OffsetForLeaderEpoch((("t", (ofle.Asked(0, 3, 2), ofle.Asked(1, -1, 0))),))
ENDS = ofle.OffsetForLeaderEpochResult(
    (("t", (ofle.EpochEnd(0, 0, 2, 42), ofle.EpochEnd(1, 74, -1, -1))),)
)


def _epoch_topic(version: int) -> Any:
    def build(cls: Any) -> Any:
        part_cls = codec.nested(cls, "OffsetForLeaderPartition")
        parts = (
            codec.make(part_cls, partition=0, current_leader_epoch=3, leader_epoch=2),
            codec.make(part_cls, partition=1, current_leader_epoch=-1, leader_epoch=0),
        )
        return codec.make(codec.nested(cls, "OffsetForLeaderTopic"), topic="t", partitions=parts)

    return build


CASES = [
    Case("ListOffsets native", v.LIST_OFFSETS, -1,
         lambda: wire.ListOffsetsRequest(2, [wire.ListOffsetsTopic("t", [
             wire.ListOffsetsPartition(0, -1, 3), wire.ListOffsetsPartition(1, -2, 3)])], 1),
         list_offsets.ListOffsets((("t", (Asked(0, -1, 3), Asked(1, -2, 3))),), 2, 1), LISTED,
         "0000001695020007a16393029192a174929300ff039301fe0301",
         "00000017930700919192a17492950000cd03e82a0395014effffff"),
    Case("ListOffsets v1", v.LIST_OFFSETS, 1,
         kio(v.LIST_OFFSETS, 1, replica_id=-1, topics=many(_topic(1))),
         list_offsets.ListOffsets((("t", (Asked(0, -1), Asked(1, -2))),), version=1), LISTED,
         "00000038000200010000000700076f64726164656bffffffff000000010001740000000200000000ffffffffffffffff00000001fffffffffffffffe",
         "0000003b00000007000000010001740000000200000000000000000000000003e8000000000000002a000000010005ffffffffffffffffffffffffffffffff"),
    Case("ListOffsets v10", v.LIST_OFFSETS, 10,
         kio(v.LIST_OFFSETS, 10, replica_id=-1, isolation_level=1, topics=many(_topic(10)),
             timeout=0),
         list_offsets.ListOffsets((("t", (Asked(0, -1, 3), Asked(1, -2, 3))),), -1, 1, 10),
         LISTED,
         "000000430002000a0000000700076f64726164656b00ffffffff01020274030000000000000003ffffffffffffffff000000000100000003fffffffffffffffe00000000000000",
         "000000450000000700000000000202740300000000000000000000000003e8000000000000002a000000030000000001004effffffffffffffffffffffffffffffffffffffff000000"),
    Case("ListOffsets v11", v.LIST_OFFSETS, 11,
         kio(v.LIST_OFFSETS, 11, replica_id=-1, isolation_level=0, topics=many(_topic(11, -6)),
             timeout=0),
         list_offsets.ListOffsets((("t", (Asked(0, -6, 3), Asked(1, -2, 3))),), -1, 0, 11),
         list_offsets.ListOffsetsResult((("t", (list_offsets.Listed(0, 0, -1, -1, -1),
                                                list_offsets.Listed(1, 0, -1, 0, 3))),)),
         "000000430002000b0000000700076f64726164656b00ffffffff00020274030000000000000003fffffffffffffffa000000000100000003fffffffffffffffe00000000000000",
         "0000004500000007000000000002027403000000000000ffffffffffffffffffffffffffffffffffffffff00000000010000ffffffffffffffff000000000000000000000003000000"),
    Case("OffsetForLeaderEpoch native", v.OFFSET_FOR_LEADER_EPOCH, -1,
         lambda: replication.OffsetsForLeaderEpochRequest(2, [replication.OffsetForLeaderTopic(
             "t", [replication.OffsetForLeaderPartition(0, 3, 2),
                   replication.OffsetForLeaderPartition(1, -1, 0)])]),
         EPOCHS, ENDS,
         "0000001595170007a16392029192a17492930003029301ff00",
         "00000014930700929192a17492940000022a94014affff00"),
    Case("OffsetForLeaderEpoch v2", v.OFFSET_FOR_LEADER_EPOCH, 2,
         kio(v.OFFSET_FOR_LEADER_EPOCH, 2, topics=many(_epoch_topic(2))),
         EPOCHS, ENDS,
         "00000034001700020000000700076f64726164656b000000010001740000000200000000000000030000000200000001ffffffff00000000",
         "000000370000000700000000000000010001740000000200000000000000000002000000000000002a004a00000001ffffffffffffffffffffffff"),
    Case("OffsetForLeaderEpoch v4", v.OFFSET_FOR_LEADER_EPOCH, 4,
         kio(v.OFFSET_FOR_LEADER_EPOCH, 4, replica_id=-1, topics=many(_epoch_topic(4))),
         EPOCHS, ENDS,
         "00000036001700040000000700076f64726164656b00ffffffff020274030000000000000003000000020000000001ffffffff00000000000000",
         "000000350000000700000000000202740300000000000000000002000000000000002a00004a00000001ffffffffffffffffffffffff000000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
