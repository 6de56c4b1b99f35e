"""Golden bytes for the partition reads besides Fetch on each door
(broker/codecs/*/partition_reads.py, harness in golden.py). ListOffsets v1 has neither the
isolation level nor the leader epoch, and says OFFSET_NOT_AVAILABLE (78) as
LEADER_NOT_AVAILABLE (5); v10 says it as it is.
"""

from __future__ import annotations

from typing import Any

import pytest

from broker.operations import list_offsets
from protocol.api import list_offsets as wire
from protocol.kafka import codec
from protocol.kafka import versions as v

from .golden import Case, check, kio, many

Asked = list_offsets.Asked
LISTED = list_offsets.ListOffsetsResult(
    (("t", (list_offsets.Listed(0, 0, 1000, 42, 3), list_offsets.Listed(1, 78, -1, -1, -1))),)
)


def _topic(version: int) -> Any:
    def build(cls: Any) -> Any:
        part_cls = codec.nested(cls, "ListOffsetsPartition")
        extra = {} if version < 4 else {"current_leader_epoch": 3}
        parts = (codec.make(part_cls, partition_index=0, timestamp=-1, **extra),
                 codec.make(part_cls, partition_index=1, timestamp=-2, **extra))  # fmt: skip
        return codec.make(codec.nested(cls, "ListOffsetsTopic"), name="t", partitions=parts)

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
         list_offsets.ListOffsets((("t", (Asked(0, -1), Asked(1, -2))),)), LISTED,
         "00000038000200010000000700076f64726164656bffffffff000000010001740000000200000000ffffffffffffffff00000001fffffffffffffffe",
         "0000003b00000007000000010001740000000200000000000000000000000003e8000000000000002a000000010005ffffffffffffffffffffffffffffffff"),
    Case("ListOffsets v10", v.LIST_OFFSETS, 10,
         kio(v.LIST_OFFSETS, 10, replica_id=-1, isolation_level=1, topics=many(_topic(10)),
             timeout=0),
         list_offsets.ListOffsets((("t", (Asked(0, -1, 3), Asked(1, -2, 3))),), -1, 1), LISTED,
         "000000430002000a0000000700076f64726164656b00ffffffff01020274030000000000000003ffffffffffffffff000000000100000003fffffffffffffffe00000000000000",
         "000000450000000700000000000202740300000000000000000000000003e8000000000000002a000000030000000001004effffffffffffffffffffffffffffffffffffffff000000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
