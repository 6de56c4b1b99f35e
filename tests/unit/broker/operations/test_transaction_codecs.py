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
from broker.operations import end_txn
from broker.operations import init_producer_id as ipi
from protocol.api import producer_ids, txn
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
         "0000001495180007a16395a2747804019192a174920001c2",
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
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
