"""DescribeTransactions (65), v0: the coordinator's state of each transactional id it owns
(state, timeout, start time, producer id and epoch, partitions), as kafka-transactions.sh
describe shows it. An id this broker does not coordinate gets NOT_COORDINATOR; an unknown one
TRANSACTIONAL_ID_NOT_FOUND."""

from __future__ import annotations

import datetime
from typing import Any

from broker.context import BrokerContext
from broker.handlers.describe_transactions import hidden_topics
from broker.handlers.kafka._txn import code_of
from broker.security import rules
from broker.session import Session
from protocol.errors import CoordinatorNotAvailableError, TransactionalIdAuthorizationFailedError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import DESCRIBE_TRANSACTIONS

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _instant(ms: int) -> datetime.datetime:
    """transaction_start_time as kio's (not nullable) datetime_i64 wants it: -1 (no open
    transaction, as Kafka writes it for Empty and Complete* ids, or an error row) stays -1 on
    the wire, where codec.make would turn the int -1 into None, which kio cannot write."""
    return _EPOCH + datetime.timedelta(milliseconds=ms)


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    version = request.header.api_version
    cls = response_class(DESCRIBE_TRANSACTIONS, version)
    state_cls = nested(cls, "TransactionState")
    topic_cls = nested(cls, "TopicData")
    ids = list(request.body.transactional_ids)
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TXN_ID, ids,
                           api="DescribeTransactions")  # fmt: skip
    rows: list[Any] = [(tid, TransactionalIdAuthorizationFailedError.code) for tid in refused]
    ids = [tid for tid in ids if tid not in refused]
    if ctx.transactions is None:
        rows += [(tid, CoordinatorNotAvailableError.code) for tid in ids]
    elif ids:
        rows += [hidden_topics(ctx, session, row) for row in ctx.transactions.describe(ids)]
    states = []
    for row in rows:
        if isinstance(row, tuple):
            states.append(make(state_cls, error_code=row[1], transactional_id=row[0],
                               transaction_state="", transaction_timeout=0,
                               transaction_start_time=_instant(-1), producer_id=-1,
                               producer_epoch=-1, topics=()))  # fmt: skip
            continue
        states.append(make(
            state_cls, error_code=code_of(row.error, "DescribeTransactions", version),
            transactional_id=row.transactional_id, transaction_state=row.state,
            transaction_timeout=row.timeout_ms, transaction_start_time=_instant(row.start_ms),
            producer_id=row.producer_id, producer_epoch=row.producer_epoch,
            topics=tuple(make(topic_cls, topic=t, partitions=ps) for t, ps in row.topics),
        ))  # fmt: skip
    return make(cls, throttle_time=0, transaction_states=tuple(states))
