"""The Kafka door's codecs of the transaction APIs (see broker/codecs/kafka/__init__.py)."""

from __future__ import annotations

import datetime
from typing import Any

from broker.codecs import Codec
from broker.operations import describe_transactions
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, nested, response_class

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
