"""The Kafka door's codecs of the transaction APIs (see broker/codecs/kafka/__init__.py).

Version differences that are wire shape stay here: InitProducerId v3+ carry the producer's id
and epoch (KIP-360), v6 KIP-939's two-phase commit; AddPartitionsToTxn v0-v3 name one
transaction, v4 (brokers only) several, with a top-level error code; v5 of AddPartitionsToTxn,
EndTxn and TxnOffsetCommit is transaction version 2 (KIP-890 part 2, `_txn_version`): EndTxn v5
answers the producer's next id and epoch; ListTransactions v1 adds the duration filter, v2
(KIP-1152) the transactional id pattern. KIP-588's PRODUCER_FENCED (90) is written
INVALID_PRODUCER_EPOCH (47) to
the versions before it: InitProducerId v0-v3, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
v0-v1, TxnOffsetCommit v0-v2.
"""

from __future__ import annotations

import datetime
from typing import Any

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
from protocol.errors import InvalidProducerEpochError, ProducerFencedError
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class


def _fenced(code: int, request: KafkaRequest, since: int) -> int:
    """`code` as a request version before KIP-588 (`since`) knows it."""
    if code == ProducerFencedError.code and request.header.api_version < since:
        return InvalidProducerEpochError.code
    return code


def _version(request: KafkaRequest) -> int:
    return int(request.header.api_version)


# ----- DescribeTransactions (65) --------------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _instant(ms: int) -> datetime.datetime:
    """transaction_start_time as kio's (not nullable) datetime_i64 wants it: -1 (no open
    transaction, as Kafka writes it for Empty and Complete* ids, or an error row) stays -1 on
    the wire, where `make` would turn the int -1 into None, which kio cannot write."""
    return _EPOCH + datetime.timedelta(milliseconds=ms)


def _describe_txns_in(request: KafkaRequest) -> describe_transactions.DescribeTransactions:
    return describe_transactions.DescribeTransactions(tuple(request.body.transactional_ids))


def _describe_txns_out(
    request: KafkaRequest, result: describe_transactions.DescribeTransactionsResult
) -> Any:
    cls = response_class(v.DESCRIBE_TRANSACTIONS, request.header.api_version)
    state_cls, topic_cls = nested(cls, "TransactionState"), nested(cls, "TopicData")
    states = tuple(
        make(
            state_cls, error_code=s.error_code, transactional_id=s.transactional_id,
            transaction_state=s.state, transaction_timeout=s.timeout_ms,
            transaction_start_time=_instant(s.start_ms), producer_id=s.producer_id,
            producer_epoch=s.producer_epoch,
            topics=tuple(make(topic_cls, topic=t, partitions=ps) for t, ps in s.topics),
        )
        for s in result.transaction_states
    )  # fmt: skip
    return make(cls, throttle_time=0, transaction_states=states)


DESCRIBE_TRANSACTIONS = Codec(_describe_txns_in, _describe_txns_out)


# ----- InitProducerId (22) --------------------------------------------------------------------


def _init_pid_in(request: KafkaRequest) -> init_producer_id.InitProducerId:
    req = request.body
    return init_producer_id.InitProducerId(
        req.transactional_id, millis(req.transaction_timeout),
        int(getattr(req, "producer_id", -1)), int(getattr(req, "producer_epoch", -1)),
        bool(getattr(req, "enable2_pc", False)), bool(getattr(req, "keep_prepared_txn", False)),
    )  # fmt: skip


def _init_pid_out(request: KafkaRequest, result: init_producer_id.InitProducerIdResult) -> Any:
    return make(
        response_class(v.INIT_PRODUCER_ID, _version(request)), throttle_time=0,
        error_code=_fenced(result.error_code, request, 4), producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
        ongoing_txn_producer_id=result.ongoing_txn_producer_id,
        ongoing_txn_producer_epoch=result.ongoing_txn_producer_epoch,
    )  # fmt: skip


INIT_PRODUCER_ID = Codec(_init_pid_in, _init_pid_out)

# ----- AddPartitionsToTxn (24) ----------------------------------------------------------------

BATCHED_FROM = 4  # v4: several transactions, sent by brokers only


def _add_parts_in(request: KafkaRequest) -> add_partitions_to_txn.AddPartitionsToTxn:
    req = request.body
    if _version(request) < BATCHED_FROM:
        one = add_partitions_to_txn.TxnPartitions(
            req.v3_and_below_transactional_id, int(req.v3_and_below_producer_id),
            int(req.v3_and_below_producer_epoch), _topics(req.v3_and_below_topics),
        )  # fmt: skip
        return add_partitions_to_txn.AddPartitionsToTxn((one,))
    return add_partitions_to_txn.AddPartitionsToTxn(tuple(
        add_partitions_to_txn.TxnPartitions(
            t.transactional_id, int(t.producer_id), int(t.producer_epoch), _topics(t.topics),
            bool(t.verify_only), _txn_version(request))
        for t in req.transactions
    ), from_broker=True)  # fmt: skip


def _topics(topics: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((t.name, tuple(int(p) for p in t.partitions)) for t in topics)


def _add_parts_out(
    request: KafkaRequest, result: add_partitions_to_txn.AddPartitionsToTxnResult
) -> Any:
    cls = response_class(v.ADD_PARTITIONS_TO_TXN, _version(request))
    topic_cls = nested(cls, "AddPartitionsToTxnTopicResult")
    part_cls = nested(cls, "AddPartitionsToTxnPartitionResult")

    def topics(added: add_partitions_to_txn.TxnPartitionsAdded) -> tuple[Any, ...]:
        return tuple(
            make(topic_cls, name=name, results_by_partition=tuple(
                make(part_cls, partition_index=p, partition_error_code=_fenced(code, request, 2))
                for p, code in parts))
            for name, parts in added.topics
        )  # fmt: skip

    if _version(request) < BATCHED_FROM:
        (one,) = result.transactions
        return make(cls, throttle_time=0, results_by_topic_v3_and_below=topics(one))
    result_cls = nested(cls, "AddPartitionsToTxnResult")
    return make(cls, throttle_time=0, error_code=result.error_code, results_by_transaction=tuple(
        make(result_cls, transactional_id=t.transactional_id, topic_results=topics(t))
        for t in result.transactions
    ))  # fmt: skip


ADD_PARTITIONS_TO_TXN = Codec(_add_parts_in, _add_parts_out)

# ----- AddOffsetsToTxn (25) -------------------------------------------------------------------


def _add_offsets_in(request: KafkaRequest) -> add_offsets_to_txn.AddOffsetsToTxn:
    req = request.body
    return add_offsets_to_txn.AddOffsetsToTxn(
        req.transactional_id, int(req.producer_id), int(req.producer_epoch), req.group_id
    )


def _add_offsets_out(
    request: KafkaRequest, result: add_offsets_to_txn.AddOffsetsToTxnResult
) -> Any:
    cls = response_class(v.ADD_OFFSETS_TO_TXN, _version(request))
    return make(cls, throttle_time=0, error_code=_fenced(result.error_code, request, 2))


ADD_OFFSETS_TO_TXN = Codec(_add_offsets_in, _add_offsets_out)

# ----- EndTxn (26) ----------------------------------------------------------------------------


TV2_FROM = 5  # EndTxn, AddPartitionsToTxn and TxnOffsetCommit v5: transaction version 2


def _txn_version(request: KafkaRequest) -> int:
    """Kafka's TransactionVersion.transactionVersionForEndTxn and friends: v5+ is TV2."""
    return 2 if _version(request) >= TV2_FROM else 0


def _end_txn_in(request: KafkaRequest) -> end_txn.EndTxn:
    req = request.body
    return end_txn.EndTxn(
        req.transactional_id, int(req.producer_id), int(req.producer_epoch), bool(req.committed),
        _txn_version(request),
    )  # fmt: skip


def _end_txn_out(request: KafkaRequest, result: end_txn.EndTxnResult) -> Any:
    cls = response_class(v.END_TXN, _version(request))
    return make(cls, throttle_time=0, error_code=_fenced(result.error_code, request, 2),
                producer_id=result.producer_id, producer_epoch=result.producer_epoch)  # fmt: skip


END_TXN = Codec(_end_txn_in, _end_txn_out)

# ----- TxnOffsetCommit (28) -------------------------------------------------------------------


def _txn_commit_in(request: KafkaRequest) -> txn_offset_commit.TxnOffsetCommit:
    req = request.body
    return txn_offset_commit.TxnOffsetCommit(
        req.transactional_id, req.group_id, int(req.producer_id), int(req.producer_epoch),
        tuple((t.name, tuple(txn_offset_commit.OffsetToCommit(
            int(p.partition_index), int(p.committed_offset), p.committed_metadata,
            int(getattr(p, "committed_leader_epoch", -1))) for p in t.partitions))
            for t in req.topics),
        int(getattr(req, "generation_id", -1)), getattr(req, "member_id", ""),
        getattr(req, "group_instance_id", None) or None, _txn_version(request),
    )  # fmt: skip


def _txn_commit_out(request: KafkaRequest, result: txn_offset_commit.TxnOffsetCommitResult) -> Any:
    cls = response_class(v.TXN_OFFSET_COMMIT, _version(request))
    topic_cls = nested(cls, "TxnOffsetCommitResponseTopic")
    part_cls = nested(cls, "TxnOffsetCommitResponsePartition")
    return make(cls, throttle_time=0, topics=tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(part_cls, partition_index=p, error_code=_fenced(code, request, 3))
            for p, code in parts))
        for name, parts in result.topics
    ))  # fmt: skip


TXN_OFFSET_COMMIT = Codec(_txn_commit_in, _txn_commit_out)

# ----- WriteTxnMarkers (27) -------------------------------------------------------------------


def _markers_in(request: KafkaRequest) -> write_txn_markers.WriteTxnMarkers:
    return write_txn_markers.WriteTxnMarkers(tuple(
        write_txn_markers.Marker(
            int(m.producer_id), int(m.producer_epoch), bool(m.transaction_result),
            int(m.coordinator_epoch),
            tuple((t.name, tuple(int(p) for p in t.partition_indexes)) for t in m.topics))
        for m in request.body.markers
    ))  # fmt: skip


def _markers_out(request: KafkaRequest, result: write_txn_markers.WriteTxnMarkersResult) -> Any:
    cls = response_class(v.WRITE_TXN_MARKERS, _version(request))
    result_cls = nested(cls, "WritableTxnMarkerResult")
    topic_cls = nested(cls, "WritableTxnMarkerTopicResult")
    part_cls = nested(cls, "WritableTxnMarkerPartitionResult")
    return make(cls, markers=tuple(
        make(result_cls, producer_id=m.producer_id, topics=tuple(
            make(topic_cls, name=name, partitions=tuple(
                make(part_cls, partition_index=p, error_code=code) for p, code in parts))
            for name, parts in m.topics))
        for m in result.markers
    ))  # fmt: skip


WRITE_TXN_MARKERS = Codec(_markers_in, _markers_out)

# ----- ListTransactions (66) ------------------------------------------------------------------


def _list_txns_in(request: KafkaRequest) -> list_transactions.ListTransactions:
    req = request.body
    return list_transactions.ListTransactions(
        tuple(req.state_filters), tuple(int(p) for p in req.producer_id_filters),
        int(getattr(req, "duration_filter", -1)), getattr(req, "transactional_id_pattern", None),
    )  # fmt: skip


def _list_txns_out(request: KafkaRequest, result: list_transactions.ListTransactionsResult) -> Any:
    cls = response_class(v.LIST_TRANSACTIONS, _version(request))
    state_cls = nested(cls, "TransactionState")
    return make(cls, throttle_time=0, error_code=result.error_code,
                unknown_state_filters=result.unknown_states, transaction_states=tuple(
                    make(state_cls, transactional_id=t.transactional_id,
                         producer_id=t.producer_id, transaction_state=t.state)
                    for t in result.transactions))  # fmt: skip


LIST_TRANSACTIONS = Codec(_list_txns_in, _list_txns_out)

# ----- DescribeProducers (61) -----------------------------------------------------------------


def _producers_in(request: KafkaRequest) -> describe_producers.DescribeProducers:
    return describe_producers.DescribeProducers(tuple(
        (t.name, tuple(int(p) for p in t.partition_indexes)) for t in request.body.topics
    ))  # fmt: skip


def _producers_out(
    request: KafkaRequest, result: describe_producers.DescribeProducersResult
) -> Any:
    cls = response_class(v.DESCRIBE_PRODUCERS, _version(request))
    topic_cls, part_cls = nested(cls, "TopicResponse"), nested(cls, "PartitionResponse")
    producer_cls = nested(cls, "ProducerState")
    return make(cls, throttle_time=0, topics=tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(part_cls, partition_index=p.partition, error_code=p.error_code,
                 error_message=p.error_message, active_producers=tuple(
                     make(producer_cls, **row._asdict()) for row in p.producers))
            for p in parts))
        for name, parts in result.topics
    ))  # fmt: skip


DESCRIBE_PRODUCERS = Codec(_producers_in, _producers_out)
