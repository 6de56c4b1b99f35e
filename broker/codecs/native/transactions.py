"""The native door's codecs of the transaction APIs (see broker/codecs/native/__init__.py)."""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    describe_transactions,
    end_txn,
    init_producer_id,
)
from protocol.api import producer_ids, txn
from protocol.codec import Request

# ----- DescribeTransactions -------------------------------------------------------------------


def _describe_txns_in(request: Request) -> describe_transactions.DescribeTransactions:
    req: txn.DescribeTransactionsRequest = request.body
    return describe_transactions.DescribeTransactions(tuple(req.transactional_ids))


def _describe_txns_out(
    request: Request, result: describe_transactions.DescribeTransactionsResult
) -> txn.DescribeTransactionsResponse:
    return txn.DescribeTransactionsResponse([
        txn.TransactionDescription(
            s.error_code, s.transactional_id, s.state, s.timeout_ms, s.start_ms, s.producer_id,
            s.producer_epoch, [txn.TxnTopic(t, list(ps)) for t, ps in s.topics],
        )
        for s in result.transaction_states
    ])  # fmt: skip


DESCRIBE_TRANSACTIONS = Codec(_describe_txns_in, _describe_txns_out)


# ----- InitProducerId -------------------------------------------------------------------------


def _init_pid_in(request: Request) -> init_producer_id.InitProducerId:
    req: producer_ids.InitProducerIdRequest = request.body
    return init_producer_id.InitProducerId(
        req.transactional_id, req.transaction_timeout_ms, req.producer_id, req.producer_epoch,
        req.enable_2pc, req.keep_prepared_txn,
    )  # fmt: skip


def _init_pid_out(
    request: Request, result: init_producer_id.InitProducerIdResult
) -> producer_ids.InitProducerIdResponse:
    return producer_ids.InitProducerIdResponse(
        result.error_code, result.producer_id, result.producer_epoch, result.error_message, 0,
        result.ongoing_txn_producer_id, result.ongoing_txn_producer_epoch,
    )  # fmt: skip


INIT_PRODUCER_ID = Codec(_init_pid_in, _init_pid_out)

# ----- AddPartitionsToTxn ---------------------------------------------------------------------


def _add_parts_in(request: Request) -> add_partitions_to_txn.AddPartitionsToTxn:
    req: txn.AddPartitionsToTxnRequest = request.body
    return add_partitions_to_txn.AddPartitionsToTxn((add_partitions_to_txn.TxnPartitions(
        req.transactional_id, req.producer_id, req.producer_epoch,
        tuple((t.name, tuple(t.partitions)) for t in req.topics), req.verify_only,
    ),))  # fmt: skip


def _add_parts_out(
    request: Request, result: add_partitions_to_txn.AddPartitionsToTxnResult
) -> txn.AddPartitionsToTxnResponse:
    (one,) = result.transactions  # the native door asks for one, never from_broker
    return txn.AddPartitionsToTxnResponse(_results(one.topics))


def _results(
    topics: tuple[tuple[str, tuple[tuple[int, int], ...]], ...],
) -> list[txn.TxnTopicResult]:
    return [txn.TxnTopicResult(name, [txn.TxnPartitionResult(p, code) for p, code in parts])
            for name, parts in topics]  # fmt: skip


ADD_PARTITIONS_TO_TXN = Codec(_add_parts_in, _add_parts_out)

# ----- AddOffsetsToTxn ------------------------------------------------------------------------


def _add_offsets_in(request: Request) -> add_offsets_to_txn.AddOffsetsToTxn:
    req: txn.AddOffsetsToTxnRequest = request.body
    return add_offsets_to_txn.AddOffsetsToTxn(
        req.transactional_id, req.producer_id, req.producer_epoch, req.group_id
    )


def _add_offsets_out(
    request: Request, result: add_offsets_to_txn.AddOffsetsToTxnResult
) -> txn.AddOffsetsToTxnResponse:
    return txn.AddOffsetsToTxnResponse(result.error_code)


ADD_OFFSETS_TO_TXN = Codec(_add_offsets_in, _add_offsets_out)

# ----- EndTxn ---------------------------------------------------------------------------------


def _end_txn_in(request: Request) -> end_txn.EndTxn:
    req: txn.EndTxnRequest = request.body
    return end_txn.EndTxn(req.transactional_id, req.producer_id, req.producer_epoch,
                          req.committed)  # fmt: skip


def _end_txn_out(request: Request, result: end_txn.EndTxnResult) -> txn.EndTxnResponse:
    return txn.EndTxnResponse(result.error_code)


END_TXN = Codec(_end_txn_in, _end_txn_out)
