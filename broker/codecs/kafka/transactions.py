"""The Kafka door's codecs of the transaction APIs (see broker/codecs/kafka/__init__.py).

Version differences that are wire shape stay here: InitProducerId v3+ carry the producer's id
and epoch (KIP-360), v6 KIP-939's two-phase commit; AddPartitionsToTxn v0-v3 name one
transaction, v4 (brokers only) several, with a top-level error code; ListTransactions v1 adds
the duration filter. KIP-588's PRODUCER_FENCED (90) is written INVALID_PRODUCER_EPOCH (47) to
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
    describe_transactions,
    end_txn,
    init_producer_id,
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
            bool(t.verify_only))
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


def _end_txn_in(request: KafkaRequest) -> end_txn.EndTxn:
    req = request.body
    return end_txn.EndTxn(
        req.transactional_id, int(req.producer_id), int(req.producer_epoch), bool(req.committed)
    )


def _end_txn_out(request: KafkaRequest, result: end_txn.EndTxnResult) -> Any:
    cls = response_class(v.END_TXN, _version(request))
    return make(cls, throttle_time=0, error_code=_fenced(result.error_code, request, 2))


END_TXN = Codec(_end_txn_in, _end_txn_out)
