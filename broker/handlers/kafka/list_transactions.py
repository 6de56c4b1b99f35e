"""ListTransactions (66), v0-v1: the transactional ids this broker coordinates, filtered by
state names (Kafka's, e.g. "Ongoing"), producer ids and (v1, KIP-994) a minimum open duration.
An admin client asks every broker and merges the answers (kafka-transactions.sh list)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import CoordinatorNotAvailableError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import LIST_TRANSACTIONS


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    cls = response_class(LIST_TRANSACTIONS, request.header.api_version)
    if ctx.transactions is None:
        return make(cls, throttle_time=0, error_code=CoordinatorNotAvailableError.code,
                    unknown_state_filters=(), transaction_states=())  # fmt: skip
    rows, unknown = ctx.transactions.list_transactions(
        req.state_filters, req.producer_id_filters, int(getattr(req, "duration_filter", -1))
    )
    hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TXN_ID,
                          (r.transactional_id for r in rows), api="ListTransactions",
                          log_denied=False)  # fmt: skip
    rows = [r for r in rows if r.transactional_id not in hidden]
    state_cls = nested(cls, "TransactionState")
    return make(cls, throttle_time=0, error_code=0, unknown_state_filters=tuple(unknown),
                transaction_states=tuple(
                    make(state_cls, transactional_id=r.transactional_id,
                         producer_id=r.producer_id, transaction_state=r.state)
                    for r in rows))  # fmt: skip
