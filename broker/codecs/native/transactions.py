"""The native door's codecs of the transaction APIs (see broker/codecs/native/__init__.py)."""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    describe_producers,
    describe_transactions,
    end_txn,
    init_producer_id,
    list_transactions,
    txn_offset_commit,
    write_txn_markers,
)
from protocol.api import producer_ids, txn, txn_markers
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
        req.txn_version,
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


# ----- TxnOffsetCommit ------------------------------------------------------------------------


def _txn_commit_in(request: Request) -> txn_offset_commit.TxnOffsetCommit:
    req: txn.TxnOffsetCommitRequest = request.body
    return txn_offset_commit.TxnOffsetCommit(
        req.transactional_id, req.group_id, req.producer_id, req.producer_epoch,
        tuple((t.name, tuple(txn_offset_commit.OffsetToCommit(
            p.partition, p.committed_offset, p.metadata, p.leader_epoch) for p in t.partitions))
            for t in req.topics),
        req.generation_id, req.member_id, req.group_instance_id,
    )  # fmt: skip


def _txn_commit_out(
    request: Request, result: txn_offset_commit.TxnOffsetCommitResult
) -> txn.TxnOffsetCommitResponse:
    return txn.TxnOffsetCommitResponse(_results(result.topics))


TXN_OFFSET_COMMIT = Codec(_txn_commit_in, _txn_commit_out)

# ----- WriteTxnMarkers ------------------------------------------------------------------------


def _markers_in(request: Request) -> write_txn_markers.WriteTxnMarkers:
    req: txn_markers.WriteTxnMarkersRequest = request.body
    return write_txn_markers.WriteTxnMarkers(tuple(
        write_txn_markers.Marker(m.producer_id, m.producer_epoch, m.commit, m.coordinator_epoch,
                                 tuple((t.name, tuple(t.partitions)) for t in m.topics))
        for m in req.markers
    ))  # fmt: skip


def _markers_out(
    request: Request, result: write_txn_markers.WriteTxnMarkersResult
) -> txn_markers.WriteTxnMarkersResponse:
    return txn_markers.WriteTxnMarkersResponse([
        txn_markers.TxnMarkerResult(m.producer_id, [
            txn_markers.TxnMarkerTopicResult(name, [
                txn_markers.TxnMarkerPartitionResult(p, code) for p, code in parts])
            for name, parts in m.topics])
        for m in result.markers
    ])  # fmt: skip


WRITE_TXN_MARKERS = Codec(_markers_in, _markers_out)

# ----- ListTransactions -----------------------------------------------------------------------


def _list_txns_in(request: Request) -> list_transactions.ListTransactions:
    req: txn.ListTransactionsRequest = request.body
    return list_transactions.ListTransactions(
        tuple(req.state_filters), tuple(req.producer_id_filters), req.duration_filter_ms
    )


def _list_txns_out(
    request: Request, result: list_transactions.ListTransactionsResult
) -> txn.ListTransactionsResponse:
    return txn.ListTransactionsResponse(result.error_code, list(result.unknown_states), [
        txn.ListedTransaction(t.transactional_id, t.producer_id, t.state)
        for t in result.transactions
    ])  # fmt: skip


LIST_TRANSACTIONS = Codec(_list_txns_in, _list_txns_out)

# ----- DescribeProducers ----------------------------------------------------------------------


def _producers_in(request: Request) -> describe_producers.DescribeProducers:
    req: txn.DescribeProducersRequest = request.body
    return describe_producers.DescribeProducers(
        tuple((t.name, tuple(t.partitions)) for t in req.topics)
    )


def _producers_out(
    request: Request, result: describe_producers.DescribeProducersResult
) -> txn.DescribeProducersResponse:
    return txn.DescribeProducersResponse([
        txn.DescribeProducersTopic(name, [
            txn.DescribeProducersPartition(p.partition, p.error_code, p.error_message,
                                           [txn.ProducerState(*row) for row in p.producers])
            for p in parts])
        for name, parts in result.topics
    ])  # fmt: skip


DESCRIBE_PRODUCERS = Codec(_producers_in, _producers_out)
