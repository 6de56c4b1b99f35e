"""Golden bytes for the topic APIs on each door (broker/codecs/{native,kafka}/topics.py, harness
in golden.py): a known request frame decodes to the operation's request model, and a known
result encodes to a known response frame. test_codecs.py checks every row has them.

Read against Kafka's schemas (clients/src/main/resources/common/message/): CreateTopics v2 is
not flexible (int16 string lengths, int32 array lengths, throttle then topics with name, error
code, nullable message); v7 is flexible (compact lengths + 1, tagged fields) and answers
topic_id, num_partitions, replication_factor and configs, with topic_config_error_code a tagged
field (tag 0) written only when not 0. DeleteTopics v1 names topics (string array), v6 gives
each topic a nullable name and a uuid. CreatePartitions v0 has a nullable assignment array per
topic; v3 is flexible.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from broker.operations import (
    alter_partition_reassignments,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    elect_leaders,
    list_partition_reassignments,
)
from protocol.api import admin, controller
from protocol.api import delete_records as records
from protocol.api.admin import SOURCE_TOPIC_CONFIG, TYPE_LONG, ConfigEntry
from protocol.kafka import codec as kafka_codec
from protocol.kafka import versions as v

from .golden import TOPIC_ID, Case, check, kio, many


def nested(entity: str, **fields: Any) -> Callable[[Any], Any]:
    """golden.nested for entities with a field called `name`, and entities in entities."""

    def build(cls: Any) -> Any:
        values = {k: (f(cls) if callable(f) else f) for k, f in fields.items()}
        return kafka_codec.make(kafka_codec.nested(cls, entity), **values)

    return build


ct, dt, cp, dr = create_topics, delete_topics, create_partitions, delete_records
el, apr, lpr = elect_leaders, alter_partition_reassignments, list_partition_reassignments

CREATED = ct.CreateTopicsResult((
    ct.TopicCreated("t", 0, None, 2, 1, TOPIC_ID,
                    (ConfigEntry("retention.ms", "5", False, False, SOURCE_TOPIC_CONFIG,
                                 TYPE_LONG),)),
    ct.TopicCreated("u", 0, None, 1, 1, None, None, 29),
    ct.TopicCreated("bad", 41, "no", -1, -1),
))  # fmt: skip
DELETED = dt.DeleteTopicsResult((
    dt.TopicDeleted("t", TOPIC_ID, 0),
    dt.TopicDeleted(None, TOPIC_ID, 100, "no topic has the id"),
))  # fmt: skip
PARTITIONS = cp.CreatePartitionsResult((cp.PartitionsCreated("t", 0),
                                        cp.PartitionsCreated("u", 37, "too few")))  # fmt: skip
RECORDS = dr.DeleteRecordsResult((
    dr.TopicDeleted("t", (dr.PartitionDeleted(0, 13, 0), dr.PartitionDeleted(1, -1, 1, "no"))),
))  # fmt: skip
RECORDS_ASKED = dr.DeleteRecords((dr.RecordsTopic("t", ((0, 13), (1, -1))),), 100)
ELECTED = el.ElectLeadersResult(0, (el.Elected("t", 0, 0), el.Elected("t", 1, 84, "no"),
                                    el.Elected("u", 0, 3)))  # fmt: skip
REASSIGNED = apr.AlterPartitionReassignmentsResult(0, None, (
    apr.Reassigned("t", 0, 0), apr.Reassigned("t", 1, 42, "no")))  # fmt: skip
ONGOING = lpr.ListPartitionReassignmentsResult(0, None, (
    lpr.Ongoing("t", 1, (1, 2, 3), (3,), (1,)),))  # fmt: skip
NEW_T = ct.NewTopic("t", 2, -1, (), (("retention.ms", "5"),))

CASES = [
    Case("CreateTopics native", v.CREATE_TOPICS, -1,
         lambda: admin.CreateTopicsRequest(
             [admin.CreatableTopic("t", 2, -1, [], {"retention.ms": "5"})], 100, True),
         ct.CreateTopics((NEW_T,), 100, True), CREATED,
         "0000002095130007a163939195a17402ff9081ac726574656e74696f6e2e6d73a13564c3",
         "0000001e930700919395a17400c0020195a17500c0010195a362616429a26e6fffff"),
    Case("CreateTopics v2", v.CREATE_TOPICS, 2,
         kio(v.CREATE_TOPICS, 2, timeout=100, validate_only=False, topics=many(nested(
             "CreatableTopic", name="t", num_partitions=2, replication_factor=-1,
             assignments=(), configs=many(nested("CreatableTopicConfig", name="retention.ms",
                                                 value="5"))))),
         ct.CreateTopics((NEW_T,), 100, False), CREATED,
         "0000003c001300020000000700076f64726164656b0000000100017400000002ffff0000000000000001000c726574656e74696f6e2e6d730001350000006400",
         "000000250000000700000000000000030001740000ffff0001750000ffff0003626164002900026e6f"),
    Case("CreateTopics v7", v.CREATE_TOPICS, 7,
         kio(v.CREATE_TOPICS, 7, timeout=100, validate_only=True, topics=many(nested(
             "CreatableTopic", name="t", num_partitions=2, replication_factor=-1,
             assignments=(), configs=many(nested("CreatableTopicConfig", name="retention.ms",
                                                 value="5"))))),
         ct.CreateTopics((NEW_T,), 100, True, include_configs=True), CREATED,
         "00000034001300070000000700076f64726164656b0002027400000002ffff01020d726574656e74696f6e2e6d7302350000000000640100",
         "0000007d0000000700000000000402740123456789abcdef0123456789abcdef000000000000020001020d726574656e74696f6e2e6d730235000100000002750000000000000000000000000000000000000000000001000100010002001d04626164000000000000000000000000000000000029036e6fffffffffffff000000"),
    Case("DeleteTopics native", v.DELETE_TOPICS, -1,
         lambda: admin.DeleteTopicsRequest(["t"], 100),
         dt.DeleteTopics((dt.TopicRef("t"),), 100), DELETED,
         "0000000b95140007a1639291a17464",
         "00000021930700919293a17400c093a064b36e6f20746f7069632068617320746865206964"),
    Case("DeleteTopics v1", v.DELETE_TOPICS, 1,
         kio(v.DELETE_TOPICS, 1, topic_names=("t",), timeout=100),
         dt.DeleteTopics((dt.TopicRef("t"),), 100), DELETED,
         "0000001c001400010000000700076f64726164656b0000000100017400000064",
         "00000015000000070000000000000002000174000000000064"),
    Case("DeleteTopics v6", v.DELETE_TOPICS, 6,
         kio(v.DELETE_TOPICS, 6, timeout=100, topics=many(
             nested("DeleteTopicState", name="t", topic_id=None),
             nested("DeleteTopicState", name=None, topic_id=TOPIC_ID))),
         dt.DeleteTopics((dt.TopicRef("t"), dt.TopicRef(None, TOPIC_ID)), 100), DELETED,
         "0000003d001400060000000700076f64726164656b000302740000000000000000000000000000000000000123456789abcdef0123456789abcdef000000006400",
         "000000490000000700000000000302740123456789abcdef0123456789abcdef00000000000123456789abcdef0123456789abcdef0064146e6f20746f70696320686173207468652069640000"),
    Case("CreatePartitions native", v.CREATE_PARTITIONS, -1,
         lambda: admin.CreatePartitionsRequest(
             [admin.CreatePartitionsTopic("t", 3, [[1], [2]]),
              admin.CreatePartitionsTopic("u", 2, None)], 100, False),
         cp.CreatePartitions((cp.NewPartitions("t", 3, ((1,), (2,))),
                              cp.NewPartitions("u", 2)), 100), PARTITIONS,
         "0000001895250007a163939293a17403929101910293a17502c064c2",
         "00000016930700919293a17400c093a17525a7746f6f20666577"),
    Case("CreatePartitions v0", v.CREATE_PARTITIONS, 0,
         kio(v.CREATE_PARTITIONS, 0, timeout=100, validate_only=False, topics=many(
             nested("CreatePartitionsTopic", name="t", count=3, assignments=many(
                 nested("CreatePartitionsAssignment", broker_ids=(1,)),
                 nested("CreatePartitionsAssignment", broker_ids=(2,)))),
             nested("CreatePartitionsTopic", name="u", count=2, assignments=None))),
         cp.CreatePartitions((cp.NewPartitions("t", 3, ((1,), (2,))),
                              cp.NewPartitions("u", 2)), 100), PARTITIONS,
         "00000040002500000000000700076f64726164656b0000000200017400000003000000020000000100000001000000010000000200017500000002ffffffff0000006400",
         "000000210000000700000000000000020001740000ffff00017500250007746f6f20666577"),
    Case("CreatePartitions v3", v.CREATE_PARTITIONS, 3,
         kio(v.CREATE_PARTITIONS, 3, timeout=100, validate_only=True, topics=many(
             nested("CreatePartitionsTopic", name="u", count=2, assignments=None))),
         cp.CreatePartitions((cp.NewPartitions("u", 2),), 100, True), PARTITIONS,
         "00000021002500030000000700076f64726164656b00020275000000020000000000640100",
         "0000001e000000070000000000030274000000000275002508746f6f206665770000"),
    Case("DeleteRecords native", v.DELETE_RECORDS, -1,
         lambda: records.DeleteRecordsRequest([records.DeleteRecordsTopic("t", [
             records.DeleteRecordsPartition(0, 13), records.DeleteRecordsPartition(1, -1)])], 100),
         RECORDS_ASKED, RECORDS,
         "0000001395150007a163929192a1749292000d9201ff64",
         "00000015930700919192a1749294000d00c09401ff01a26e6f"),
    Case("DeleteRecords v0", v.DELETE_RECORDS, 0,
         kio(v.DELETE_RECORDS, 0, timeout=100, topics=many(nested(
             "DeleteRecordsTopic", name="t", partitions=many(
                 nested("DeleteRecordsPartition", partition_index=0, offset=13),
                 nested("DeleteRecordsPartition", partition_index=1, offset=-1))))),
         RECORDS_ASKED, RECORDS,
         "00000038001500000000000700076f64726164656b000000010001740000000200000000000000000000000d00000001ffffffffffffffff00000064",
         "0000002f0000000700000000000000010001740000000200000000000000000000000d000000000001ffffffffffffffff0001"),
    Case("DeleteRecords v2", v.DELETE_RECORDS, 2,
         kio(v.DELETE_RECORDS, 2, timeout=100, topics=many(nested(
             "DeleteRecordsTopic", name="t", partitions=many(
                 nested("DeleteRecordsPartition", partition_index=0, offset=13),
                 nested("DeleteRecordsPartition", partition_index=1, offset=-1))))),
         RECORDS_ASKED, RECORDS,
         "00000036001500020000000700076f64726164656b000202740300000000000000000000000d0000000001ffffffffffffffff00000000006400",
         "0000002d0000000700000000000202740300000000000000000000000d00000000000001ffffffffffffffff0001000000"),
    Case("ElectLeaders native", v.ELECT_LEADERS, -1,
         lambda: controller.ElectLeadersRequest([controller.TopicPartitionRef("t", 0),
                                                 controller.TopicPartitionRef("t", 1),
                                                 controller.TopicPartitionRef("u", 0)], 100),
         el.ElectLeaders((("t", 0), ("t", 1), ("u", 0)), 100), ELECTED,
         "00000015952b0007a163929392a1740092a1740192a1750064",
         "0000001a93070092009394a1740000c094a1740154a26e6f94a1750003c0"),
    Case("ElectLeaders v0", v.ELECT_LEADERS, 0,
         kio(v.ELECT_LEADERS, 0, timeout=100, topic_partitions=many(
             nested("TopicPartitions", topic="t", partitions=(0, 1)),
             nested("TopicPartitions", topic="u", partitions=(0,)))),
         el.ElectLeaders((("t", 0), ("t", 1), ("u", 0)), 100, leave_out_not_needed=True),
         ELECTED,
         "00000033002b00000000000700076f64726164656b00000002000174000000020000000000000001000175000000010000000000000064",
         "0000003400000007000000000000000200017400000002000000000000ffff00000001005400026e6f00017500000001000000000003ffff"),
    Case("ElectLeaders v2", v.ELECT_LEADERS, 2,
         kio(v.ELECT_LEADERS, 2, timeout=100, election_type=1, topic_partitions=None),
         el.ElectLeaders(None, 100, el.UNCLEAN, leave_out_not_needed=True), ELECTED,
         "00000019002b00020000000700076f64726164656b0001000000006400",
         "0000002f0000000700000000000000030274030000000000000000000000010054036e6f000002750200000000000300000000"),
    Case("AlterPartitionReassignments native", v.ALTER_PARTITION_REASSIGNMENTS, -1,
         lambda: controller.AlterPartitionReassignmentsRequest(100, [
             controller.ReassignmentTarget("t", 0, [1, 2]),
             controller.ReassignmentTarget("t", 1, [3])]),
         apr.AlterPartitionReassignments((apr.Target("t", 0, (1, 2)), apr.Target("t", 1, (3,))),
                                         100), REASSIGNED,
         "00000016952d0007a16392649293a1740092010293a174019103",
         "000000159307009300c09294a1740000c094a174012aa26e6f"),
    Case("AlterPartitionReassignments v0", v.ALTER_PARTITION_REASSIGNMENTS, 0,
         kio(v.ALTER_PARTITION_REASSIGNMENTS, 0, timeout=100, topics=many(nested(
             "ReassignableTopic", name="t", partitions=many(
                 nested("ReassignablePartition", partition_index=0, replicas=(1, 2)),
                 nested("ReassignablePartition", partition_index=1, replicas=None))))),
         apr.AlterPartitionReassignments((apr.Target("t", 0, (1, 2)), apr.Target("t", 1, None)),
                                         100), REASSIGNED,
         "00000030002d00000000000700076f64726164656b00000000640202740300000000030000000100000002000000000100000000",
         "0000002400000007000000000000000002027403000000000000000000000001002a036e6f000000"),
    # v1 (KIP-860): the replication factor may not change, and the answer says so back
    Case("AlterPartitionReassignments v1", v.ALTER_PARTITION_REASSIGNMENTS, 1,
         kio(v.ALTER_PARTITION_REASSIGNMENTS, 1, timeout=100,
             allow_replication_factor_change=False, topics=many(nested(
                 "ReassignableTopic", name="t", partitions=many(
                     nested("ReassignablePartition", partition_index=0, replicas=(1, 2)),
                     nested("ReassignablePartition", partition_index=1, replicas=None))))),
         apr.AlterPartitionReassignments((apr.Target("t", 0, (1, 2)), apr.Target("t", 1, None)),
                                         100, False),
         apr.AlterPartitionReassignmentsResult(0, None, REASSIGNED.results, False),
         "00000031002d00010000000700076f64726164656b0000000064000202740300000000030000000100000002000000000100000000",
         "000000250000000700000000000000000002027403000000000000000000000001002a036e6f000000"),
    Case("ListPartitionReassignments native", v.LIST_PARTITION_REASSIGNMENTS, -1,
         lambda: controller.ListPartitionReassignmentsRequest(100, None),
         lpr.ListPartitionReassignments(None, 100), ONGOING,
         "00000009952e0007a1639264c0",
         "000000139307009300c09195a174019301020391039101"),
    Case("ListPartitionReassignments v0", v.LIST_PARTITION_REASSIGNMENTS, 0,
         kio(v.LIST_PARTITION_REASSIGNMENTS, 0, timeout=100, topics=many(nested(
             "ListPartitionReassignmentsTopics", name="t", partition_indexes=(1, 2)))),
         lpr.ListPartitionReassignments((("t", 1), ("t", 2)), 100), ONGOING,
         "00000024002e00000000000700076f64726164656b00000000640202740300000001000000020000",
         "0000002e00000007000000000000000002027402000000010400000001000000020000000302000000030200000001000000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
