"""Golden bytes for the transaction APIs on each door (broker/codecs/{native,kafka}/
transactions.py, harness in golden.py): a known request frame decodes to the operation's
request model, and a known result encodes to a known response frame, on the native door and
the lowest and highest Kafka version served. The old versions' frames pin that PRODUCER_FENCED
(90, 0x5a) is written as INVALID_PRODUCER_EPOCH (47, 0x2f) before KIP-588, and AddPartitionsToTxn
v4's that a broker's batch carries a top-level error code.
"""

from __future__ import annotations

from typing import Any

import pytest

from broker.operations import add_offsets_to_txn as aot
from broker.operations import add_partitions_to_txn as apt
from broker.operations import describe_producers as dp
from broker.operations import end_txn
from broker.operations import init_producer_id as ipi
from broker.operations import list_transactions as lt
from broker.operations import txn_offset_commit as toc
from broker.operations import write_txn_markers as wtm
from broker.producer_state import ProducerRow
from protocol.api import producer_ids, txn, txn_markers
from protocol.kafka import versions as v
from protocol.kafka.codec import make
from protocol.kafka.codec import nested as kio_nested

from .golden import Case, check, kio, many

FENCED = 90


def kio_topic(cls: Any) -> Any:
    """AddPartitionsToTxn's topic t, partitions 0 and 1 (its field `name` is nested()'s)."""
    return make(kio_nested(cls, "AddPartitionsToTxnTopic"), name="t", partitions=(0, 1))


ADDED = apt.AddPartitionsToTxnResult(
    0, (apt.TxnPartitionsAdded("tx", (("t", ((0, 0), (1, FENCED))),)),)
)
TX_TOPICS = (("t", (0, 1)),)
COMMITTED = toc.TxnOffsetCommitResult((("t", ((0, FENCED),)),))
MARKED = wtm.WriteTxnMarkersResult((wtm.MarkerWritten(4, (("t", ((0, 0), (1, 6))),)),))
LISTED = lt.ListTransactionsResult(0, ("Bogus",), (lt.Listed("tx", 4, "Ongoing"),))
PRODUCERS = dp.DescribeProducersResult((("t", (
    dp.PartitionProducers(0, 0, None, (ProducerRow(4, 1, 9, 1000, 2, 100),)),
    dp.PartitionProducers(1, 29, "no Read on t"))),))  # fmt: skip


def partition_offset(cls: Any, **more: Any) -> Any:
    """TxnOffsetCommit's partition 0 at offset 5 with metadata "m" (and what else `more` says)."""
    part = make(kio_nested(cls, "TxnOffsetCommitRequestPartition"), partition_index=0,
                committed_offset=5, committed_metadata="m", **more)  # fmt: skip
    return make(kio_nested(cls, "TxnOffsetCommitRequestTopic"), name="t", partitions=(part,))


def marker(cls: Any) -> Any:
    topic = make(kio_nested(cls, "WritableTxnMarkerTopic"), name="t", partition_indexes=(0, 1))
    return make(kio_nested(cls, "WritableTxnMarker"), producer_id=4, producer_epoch=1,
                transaction_result=True, topics=(topic,), coordinator_epoch=3,
                transaction_version=2)  # fmt: skip


CASES = [
    Case("InitProducerId native", 22, -1,
         lambda: producer_ids.InitProducerIdRequest("tx", 60000, 4, 1, True, False),
         ipi.InitProducerId("tx", 60000, 4, 1, True, False),
         ipi.InitProducerIdResult(0, 4, 2, None, 3, 1),
         "0000001195160007a16396a27478cdea600401c3c2",
         "0000000b93070097000402c0000301"),
    Case("InitProducerId v0", v.INIT_PRODUCER_ID, 0,
         kio(v.INIT_PRODUCER_ID, 0, transactional_id=None, transaction_timeout=60000),
         ipi.InitProducerId(None, 60000),
         ipi.InitProducerIdResult(FENCED),
         "00000017001600000000000700076f64726164656bffff0000ea60",
         "000000140000000700000000002fffffffffffffffffffff"),
    Case("InitProducerId v6", v.INIT_PRODUCER_ID, 6,
         kio(v.INIT_PRODUCER_ID, 6, transactional_id="tx", transaction_timeout=60000,
             producer_id=4, producer_epoch=1, enable2_pc=True, keep_prepared_txn=True),
         ipi.InitProducerId("tx", 60000, 4, 1, True, True),
         ipi.InitProducerIdResult(0, 4, 2, None, 3, 1),
         "00000026001600060000000700076f64726164656b000374780000ea6000000000000000040001010100",
         "000000200000000700000000000000000000000000000400020000000000000003000100"),
    Case("AddPartitionsToTxn native", 24, -1,
         lambda: txn.AddPartitionsToTxnRequest("tx", 4, 1, [txn.TxnTopic("t", [0, 1])]),
         apt.AddPartitionsToTxn((apt.TxnPartitions("tx", 4, 1, TX_TOPICS),)), ADDED,
         "0000001595180007a16396a2747804019192a174920001c200",
         "00000010930700929192a1749292000092015a00"),
    Case("AddPartitionsToTxn v0", v.ADD_PARTITIONS_TO_TXN, 0,
         kio(v.ADD_PARTITIONS_TO_TXN, 0, v3_and_below_transactional_id="tx",
             v3_and_below_producer_id=4, v3_and_below_producer_epoch=1,
             v3_and_below_topics=many(kio_topic)),
         apt.AddPartitionsToTxn((apt.TxnPartitions("tx", 4, 1, TX_TOPICS),)), ADDED,
         "00000032001800000000000700076f64726164656b000274780000000000000004000100000001000174000000020000000000000001",
         "0000001f0000000700000000000000010001740000000200000000000000000001002f"),
    Case("AddPartitionsToTxn v4", v.ADD_PARTITIONS_TO_TXN, 4,
         kio(v.ADD_PARTITIONS_TO_TXN, 4, transactions=many(lambda cls: make(
             kio_nested(cls, "AddPartitionsToTxnTransaction"), transactional_id="tx",
             producer_id=4, producer_epoch=1, verify_only=True, topics=(kio_topic(cls),)))),
         apt.AddPartitionsToTxn((apt.TxnPartitions("tx", 4, 1, TX_TOPICS, True),), True),
         ADDED,
         "00000030001800040000000700076f64726164656b00020374780000000000000004000101020274030000000000000001000000",
         "00000024000000070000000000000002037478020274030000000000000000000001005a00000000"),
    Case("AddPartitionsToTxn v5", v.ADD_PARTITIONS_TO_TXN, 5,
         kio(v.ADD_PARTITIONS_TO_TXN, 5, transactions=many(lambda cls: make(
             kio_nested(cls, "AddPartitionsToTxnTransaction"), transactional_id="tx",
             producer_id=4, producer_epoch=1, verify_only=False, topics=(kio_topic(cls),)))),
         apt.AddPartitionsToTxn((apt.TxnPartitions("tx", 4, 1, TX_TOPICS, False, 2),), True),
         ADDED,
         "00000030001800050000000700076f64726164656b00020374780000000000000004000100020274030000000000000001000000",
         "00000024000000070000000000000002037478020274030000000000000000000001005a00000000"),
    Case("AddOffsetsToTxn native", 25, -1, lambda: txn.AddOffsetsToTxnRequest("tx", 4, 1, "g"),
         aot.AddOffsetsToTxn("tx", 4, 1, "g"), aot.AddOffsetsToTxnResult(FENCED),
         "0000000e95190007a16394a274780401a167",
         "00000006930700925a00"),
    Case("AddOffsetsToTxn v0", v.ADD_OFFSETS_TO_TXN, 0,
         kio(v.ADD_OFFSETS_TO_TXN, 0, transactional_id="tx", producer_id=4, producer_epoch=1,
             group_id="g"),
         aot.AddOffsetsToTxn("tx", 4, 1, "g"), aot.AddOffsetsToTxnResult(FENCED),
         "00000022001900000000000700076f64726164656b0002747800000000000000040001000167",
         "0000000a0000000700000000002f"),
    Case("AddOffsetsToTxn v4", v.ADD_OFFSETS_TO_TXN, 4,
         kio(v.ADD_OFFSETS_TO_TXN, 4, transactional_id="tx", producer_id=4, producer_epoch=1,
             group_id="g"),
         aot.AddOffsetsToTxn("tx", 4, 1, "g"), aot.AddOffsetsToTxnResult(FENCED),
         "00000022001900040000000700076f64726164656b0003747800000000000000040001026700",
         "0000000c000000070000000000005a00"),
    Case("EndTxn native", 26, -1, lambda: txn.EndTxnRequest("tx", 4, 1, True),
         end_txn.EndTxn("tx", 4, 1, True), end_txn.EndTxnResult(FENCED),
         "0000000d951a0007a16394a274780401c3",
         "00000006930700925a00"),
    Case("EndTxn v0", v.END_TXN, 0,
         kio(v.END_TXN, 0, transactional_id="tx", producer_id=4, producer_epoch=1,
             committed=False),
         end_txn.EndTxn("tx", 4, 1, False), end_txn.EndTxnResult(FENCED),
         "00000020001a00000000000700076f64726164656b000274780000000000000004000100",
         "0000000a0000000700000000002f"),
    Case("EndTxn v4", v.END_TXN, 4,
         kio(v.END_TXN, 4, transactional_id="tx", producer_id=4, producer_epoch=1,
             committed=True),
         end_txn.EndTxn("tx", 4, 1, True), end_txn.EndTxnResult(FENCED),
         "00000021001a00040000000700076f64726164656b00037478000000000000000400010100",
         "0000000c000000070000000000005a00"),
    Case("EndTxn v5", v.END_TXN, 5,
         kio(v.END_TXN, 5, transactional_id="tx", producer_id=4, producer_epoch=1,
             committed=True),
         end_txn.EndTxn("tx", 4, 1, True, 2), end_txn.EndTxnResult(0, 4, 2),
         "00000021001a00050000000700076f64726164656b00037478000000000000000400010100",
         "0000001600000007000000000000000000000000000004000200"),
    Case("TxnOffsetCommit native", 28, -1,
         lambda: txn.TxnOffsetCommitRequest("tx", "g", 4, 1, [txn.TxnOffsetCommitTopic(
             "t", [txn.TxnOffsetCommitPartition(0, 5, "m", 2)])], 3, "m1", "i1"),
         toc.TxnOffsetCommit("tx", "g", 4, 1, (("t", (toc.OffsetToCommit(0, 5, "m", 2),)),),
                             3, "m1", "i1"),
         COMMITTED,
         "00000020951c0007a16398a27478a16704019192a17491940005a16d0203a26d31a26931",
         "0000000d930700929192a1749192005a00"),
    Case("TxnOffsetCommit v0", v.TXN_OFFSET_COMMIT, 0,
         kio(v.TXN_OFFSET_COMMIT, 0, transactional_id="tx", group_id="g", producer_id=4,
             producer_epoch=1, topics=many(partition_offset)),
         toc.TxnOffsetCommit("tx", "g", 4, 1, (("t", (toc.OffsetToCommit(0, 5, "m"),)),)),
         COMMITTED,
         "0000003c001c00000000000700076f64726164656b0002747800016700000000000000040001000000010001740000000100000000000000000000000500016d",
         "000000190000000700000000000000010001740000000100000000002f"),
    Case("TxnOffsetCommit v4", v.TXN_OFFSET_COMMIT, 4,
         kio(v.TXN_OFFSET_COMMIT, 4, transactional_id="tx", group_id="g", producer_id=4,
             producer_epoch=1, generation_id=3, member_id="m1", group_instance_id=None,
             topics=many(lambda cls: partition_offset(cls, committed_leader_epoch=2))),
         toc.TxnOffsetCommit("tx", "g", 4, 1, (("t", (toc.OffsetToCommit(0, 5, "m", 2),)),),
                             3, "m1", None),
         COMMITTED,
         "00000042001c00040000000700076f64726164656b0003747802670000000000000004000100000003036d31000202740200000000000000000000000500000002026d000000",
         "000000160000000700000000000202740200000000005a000000"),
    Case("TxnOffsetCommit v5", v.TXN_OFFSET_COMMIT, 5,
         kio(v.TXN_OFFSET_COMMIT, 5, transactional_id="tx", group_id="g", producer_id=4,
             producer_epoch=1, generation_id=3, member_id="m1", group_instance_id=None,
             topics=many(lambda cls: partition_offset(cls, committed_leader_epoch=2))),
         toc.TxnOffsetCommit("tx", "g", 4, 1, (("t", (toc.OffsetToCommit(0, 5, "m", 2),)),),
                             3, "m1", None, 2),
         COMMITTED,
         "00000042001c00050000000700076f64726164656b0003747802670000000000000004000100000003036d31000202740200000000000000000000000500000002026d000000",
         "000000160000000700000000000202740200000000005a000000"),
    Case("WriteTxnMarkers native", 27, -1,
         lambda: txn_markers.WriteTxnMarkersRequest([txn_markers.TxnMarker(
             4, 1, True, 3, [txn_markers.TxnMarkerTopic("t", [0, 1])])]),
         wtm.WriteTxnMarkers((wtm.Marker(4, 1, True, 3, TX_TOPICS),)), MARKED,
         "00000014951b0007a1639191950401c3039192a174920001",
         "00000012930700919192049192a17492920000920106"),
    Case("WriteTxnMarkers v1", v.WRITE_TXN_MARKERS, 1,
         kio(v.WRITE_TXN_MARKERS, 1, markers=many(marker)),
         wtm.WriteTxnMarkers((wtm.Marker(4, 1, True, 3, TX_TOPICS),)), MARKED,
         "00000031001b00010000000700076f64726164656b0002000000000000000400010102027403000000000000000100000000030000",
         "000000230000000700020000000000000004020274030000000000000000000001000600000000"),
    Case("WriteTxnMarkers v2", v.WRITE_TXN_MARKERS, 2,
         kio(v.WRITE_TXN_MARKERS, 2, markers=many(marker)),
         wtm.WriteTxnMarkers((wtm.Marker(4, 1, True, 3, TX_TOPICS),)), MARKED,
         "00000032001b00020000000700076f64726164656b000200000000000000040001010202740300000000000000010000000003020000",
         "000000230000000700020000000000000004020274030000000000000000000001000600000000"),
    Case("ListTransactions native", 66, -1,
         lambda: txn.ListTransactionsRequest(["Ongoing", "Bogus"], [4], 1000),
         lt.ListTransactions(("Ongoing", "Bogus"), (4,), 1000), LISTED,
         "0000001b95420007a1639392a74f6e676f696e67a5426f6775739104cd03e8",
         "0000001b930700940091a5426f6775739193a2747804a74f6e676f696e6700"),
    Case("ListTransactions v0", v.LIST_TRANSACTIONS, 0,
         kio(v.LIST_TRANSACTIONS, 0, state_filters=("Ongoing", "Bogus"),
             producer_id_filters=(4,)),
         lt.ListTransactions(("Ongoing", "Bogus"), (4,)), LISTED,
         "0000002b004200000000000700076f64726164656b0003084f6e676f696e6706426f67757302000000000000000400",
         "0000002800000007000000000000000206426f677573020374780000000000000004084f6e676f696e670000"),
    Case("ListTransactions v1", v.LIST_TRANSACTIONS, 1,
         kio(v.LIST_TRANSACTIONS, 1, state_filters=("Ongoing", "Bogus"),
             producer_id_filters=(4,), duration_filter=1000),
         lt.ListTransactions(("Ongoing", "Bogus"), (4,), 1000), LISTED,
         "00000033004200010000000700076f64726164656b0003084f6e676f696e6706426f67757302000000000000000400000000000003e800",
         "0000002800000007000000000000000206426f677573020374780000000000000004084f6e676f696e670000"),
    Case("ListTransactions v2", v.LIST_TRANSACTIONS, 2,
         kio(v.LIST_TRANSACTIONS, 2, state_filters=("Ongoing", "Bogus"),
             producer_id_filters=(4,), duration_filter=1000, transactional_id_pattern="t.*"),
         lt.ListTransactions(("Ongoing", "Bogus"), (4,), 1000, "t.*"), LISTED,
         "00000037004200020000000700076f64726164656b0003084f6e676f696e6706426f67757302000000000000000400000000000003e804742e2a00",
         "0000002800000007000000000000000206426f677573020374780000000000000004084f6e676f696e670000"),
    Case("DescribeProducers native", 61, -1,
         lambda: txn.DescribeProducersRequest([txn.TxnTopic("t", [0, 1])]),
         dp.DescribeProducers(TX_TOPICS), PRODUCERS,
         "0000000e953d0007a163919192a174920001",
         "00000029930700929192a17492940000c09196040109cd03e8026494011dac6e6f2052656164206f6e20749000"),
    Case("DescribeProducers v0", v.DESCRIBE_PRODUCERS, 0,
         kio(v.DESCRIBE_PRODUCERS, 0, topics=many(lambda cls: make(
             kio_nested(cls, "TopicRequest"), name="t", partition_indexes=(0, 1)))),
         dp.DescribeProducers(TX_TOPICS), PRODUCERS,
         "00000020003d00000000000700076f64726164656b000202740300000000000000010000",
         "000000520000000700000000000202740300000000000000020000000000000004000000010000000900000000000003e8000000020000000000000064000000000001001d0d6e6f2052656164206f6e207401000000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
