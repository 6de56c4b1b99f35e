"""Golden bytes for the share coordinator's state APIs on both doors (KIP-932;
broker/codecs/kafka/share_state.py and broker/codecs/native/share_state.py, harness in
golden.py): Initialize, Read, Delete v0, Write and ReadSummary v0-v1 on the Kafka door (v1:
KIP-1226's DeliveryCompleteCount), and each on the native door."""

from __future__ import annotations

import pytest

from broker.operations import (
    delete_share_group_state,
    initialize_share_group_state,
    read_share_group_state,
    read_share_group_state_summary,
    write_share_group_state,
)
from broker.operations.read_share_group_state import PartitionRead
from broker.operations.share_state import PartitionState, ShareStateResult, TopicState
from broker.operations.write_share_group_state import PartitionWrite
from coordinator.share.records import StateBatch
from protocol.api import share_state as wire
from protocol.kafka import versions as v

from .golden import TOPIC_ID, Case, check, kio, many, nested

ini, rd, wr, de, su = (initialize_share_group_state, read_share_group_state,
                       write_share_group_state, delete_share_group_state,
                       read_share_group_state_summary)  # fmt: skip
BATCH = StateBatch(5, 9, 2, 1)
PLAIN = ShareStateResult((TopicState(TOPIC_ID, (PartitionState(0), PartitionState(1, 74, "x"))),))
READ = ShareStateResult(
    (TopicState(TOPIC_ID, (PartitionState(0, 0, None, 3, 2, 5, 4, (BATCH,)),)),)
)
INIT_MODEL = ini.InitializeShareGroupState("s", ((TOPIC_ID, (ini.PartitionInit(0, 3, 5),)),))
READ_MODEL = rd.ReadShareGroupState("s", ((TOPIC_ID, (PartitionRead(0, 2),)),))
SUMMARY_MODEL = su.ReadShareGroupStateSummary("s", ((TOPIC_ID, (PartitionRead(0, 2),)),))
DELETE_MODEL = de.DeleteShareGroupState("s", ((TOPIC_ID, (0, 1)),))


def _write_model(count: int) -> object:
    return wr.WriteShareGroupState(
        "s", ((TOPIC_ID, (PartitionWrite(0, 3, 2, 5, (BATCH,), count),)),)
    )


def _kio(key: int, version: int, topic: str, part: str, *parts: dict[str, object]) -> object:
    return kio(
        key,
        version,
        group_id="s",
        topics=many(
            nested(topic, topic_id=TOPIC_ID, partitions=many(*(nested(part, **p) for p in parts)))
        ),
    )


WRITE_PART = dict(
    partition=0,
    state_epoch=3,
    leader_epoch=2,
    start_offset=5,
    state_batches=many(
        nested("StateBatch", first_offset=5, last_offset=9, delivery_state=2, delivery_count=1)
    ),
)


def _native(cls: type, *parts: wire.ShareStatePartition) -> object:
    return lambda: cls("s", [wire.ShareStateTopic(TOPIC_ID.bytes, list(parts))])


NATIVE_WRITE = wire.ShareStatePartition(0, 3, 2, 5, -1, [wire.WireStateBatch(5, 9, 2, 1)])

CASES = [
    Case("InitializeShareGroupState v0", v.INITIALIZE_SHARE_GROUP_STATE, 0,
         _kio(v.INITIALIZE_SHARE_GROUP_STATE, 0, "InitializeStateData", "PartitionData",
              dict(partition=0, state_epoch=3, start_offset=5)),
         INIT_MODEL, PLAIN,
         "00000039005300000000000700076f64726164656b000273020123456789abcdef0123456789abcdef0200000000000000030000000000000005000000",
         "0000002a0000000700020123456789abcdef0123456789abcdef03000000000000000000000001004a0278000000"),
    Case("ReadShareGroupState v0", v.READ_SHARE_GROUP_STATE, 0,
         _kio(v.READ_SHARE_GROUP_STATE, 0, "ReadStateData", "PartitionData",
              dict(partition=0, leader_epoch=2)),
         READ_MODEL, READ,
         "00000031005400000000000700076f64726164656b000273020123456789abcdef0123456789abcdef020000000000000002000000",
         "000000420000000700020123456789abcdef0123456789abcdef0200000000000000000000030000000000000005020000000000000005000000000000000902000100000000"),
    Case("WriteShareGroupState v0", v.WRITE_SHARE_GROUP_STATE, 0,
         _kio(v.WRITE_SHARE_GROUP_STATE, 0, "WriteStateData", "PartitionData", WRITE_PART),
         _write_model(-1), PLAIN,
         "00000052005500000000000700076f64726164656b000273020123456789abcdef0123456789abcdef020000000000000003000000020000000000000005020000000000000005000000000000000902000100000000",
         "0000002a0000000700020123456789abcdef0123456789abcdef03000000000000000000000001004a0278000000"),
    Case("WriteShareGroupState v1", v.WRITE_SHARE_GROUP_STATE, 1,
         _kio(v.WRITE_SHARE_GROUP_STATE, 1, "WriteStateData", "PartitionData",
              dict(WRITE_PART, delivery_complete_count=4)),
         _write_model(4), PLAIN,
         "00000056005500010000000700076f64726164656b000273020123456789abcdef0123456789abcdef02000000000000000300000002000000000000000500000004020000000000000005000000000000000902000100000000",
         "0000002a0000000700020123456789abcdef0123456789abcdef03000000000000000000000001004a0278000000"),
    Case("DeleteShareGroupState v0", v.DELETE_SHARE_GROUP_STATE, 0,
         _kio(v.DELETE_SHARE_GROUP_STATE, 0, "DeleteStateData", "PartitionData",
              dict(partition=0), dict(partition=1)),
         DELETE_MODEL, PLAIN,
         "00000032005600000000000700076f64726164656b000273020123456789abcdef0123456789abcdef03000000000000000001000000",
         "0000002a0000000700020123456789abcdef0123456789abcdef03000000000000000000000001004a0278000000"),
    Case("ReadShareGroupStateSummary v0", v.READ_SHARE_GROUP_STATE_SUMMARY, 0,
         _kio(v.READ_SHARE_GROUP_STATE_SUMMARY, 0, "ReadStateSummaryData", "PartitionData",
              dict(partition=0, leader_epoch=2)),
         SUMMARY_MODEL, READ,
         "00000031005700000000000700076f64726164656b000273020123456789abcdef0123456789abcdef020000000000000002000000",
         "000000310000000700020123456789abcdef0123456789abcdef020000000000000000000003000000020000000000000005000000"),
    Case("ReadShareGroupStateSummary v1", v.READ_SHARE_GROUP_STATE_SUMMARY, 1,
         _kio(v.READ_SHARE_GROUP_STATE_SUMMARY, 1, "ReadStateSummaryData", "PartitionData",
              dict(partition=0, leader_epoch=2)),
         SUMMARY_MODEL, READ,
         "00000031005700010000000700076f64726164656b000273020123456789abcdef0123456789abcdef020000000000000002000000",
         "000000350000000700020123456789abcdef0123456789abcdef02000000000000000000000300000002000000000000000500000004000000"),
    Case("InitializeShareGroupState native", v.INITIALIZE_SHARE_GROUP_STATE, -1,
         _native(wire.InitializeShareGroupStateRequest,
                 wire.ShareStatePartition(0, state_epoch=3, start_offset=5)),
         INIT_MODEL, PLAIN,
         "0000002595530007a16392a1739192c4100123456789abcdef0123456789abcdef91960003ff05ff90",
         "0000002c930700919192c4100123456789abcdef0123456789abcdef92980000c0ffffffff9098014aa178ffffffff90"),
    Case("ReadShareGroupState native", v.READ_SHARE_GROUP_STATE, -1,
         _native(wire.ReadShareGroupStateRequest, wire.ShareStatePartition(0, leader_epoch=2)),
         READ_MODEL, READ,
         "0000002595540007a16392a1739192c4100123456789abcdef0123456789abcdef919600ff02ffff90",
         "00000027930700919192c4100123456789abcdef0123456789abcdef91980000c003020504919405090201"),
    Case("WriteShareGroupState native", v.WRITE_SHARE_GROUP_STATE, -1,
         _native(wire.WriteShareGroupStateRequest, NATIVE_WRITE), _write_model(-1), PLAIN,
         "0000002a95550007a16392a1739192c4100123456789abcdef0123456789abcdef919600030205ff919405090201",
         "0000002c930700919192c4100123456789abcdef0123456789abcdef92980000c0ffffffff9098014aa178ffffffff90"),
    Case("DeleteShareGroupState native", v.DELETE_SHARE_GROUP_STATE, -1,
         _native(wire.DeleteShareGroupStateRequest, wire.ShareStatePartition(0),
                 wire.ShareStatePartition(1)),
         DELETE_MODEL, PLAIN,
         "0000002c95560007a16392a1739192c4100123456789abcdef0123456789abcdef929600ffffffff909601ffffffff90",
         "0000002c930700919192c4100123456789abcdef0123456789abcdef92980000c0ffffffff9098014aa178ffffffff90"),
    Case("ReadShareGroupStateSummary native", v.READ_SHARE_GROUP_STATE_SUMMARY, -1,
         _native(wire.ReadShareGroupStateSummaryRequest,
                 wire.ShareStatePartition(0, leader_epoch=2)),
         SUMMARY_MODEL, READ,
         "0000002595570007a16392a1739192c4100123456789abcdef0123456789abcdef919600ff02ffff90",
         "00000027930700919192c4100123456789abcdef0123456789abcdef91980000c003020504919405090201"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
