"""DescribeTransactions (65): the coordinator's state of each transactional id it owns (state,
timeout, start time, producer id and epoch, partitions). An id this broker does not coordinate
gets NOT_COORDINATOR; an unknown one TRANSACTIONAL_ID_NOT_FOUND."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from broker.context import BrokerContext
from broker.handlers.txn_common import code_of
from broker.security import rules
from broker.session import Session
from protocol.api.txn import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    TransactionDescription,
    TxnTopic,
)
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError, TransactionalIdAuthorizationFailedError


def hidden_topics(ctx: BrokerContext, session: Session, row: Any) -> Any:
    """A described transaction without the topics the principal may not Describe (Kafka
    leaves them out of DescribeTransactions); rows that are errors pass as they are."""
    if ctx.authorizer is None or isinstance(row, tuple) or not row.topics:
        return row
    hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, (t for t, _ in row.topics),
                          api="DescribeTransactions", log_denied=False)  # fmt: skip
    if not hidden:
        return row
    return replace(row, topics=tuple((t, ps) for t, ps in row.topics if t not in hidden))


def handle(ctx: BrokerContext, request: Request, session: Session) -> DescribeTransactionsResponse:
    req: DescribeTransactionsRequest = request.body
    ids = list(req.transactional_ids)
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TXN_ID, ids,
                           api="DescribeTransactions")  # fmt: skip
    rows: list[Any] = [(tid, TransactionalIdAuthorizationFailedError.code) for tid in refused]
    ids = [tid for tid in ids if tid not in refused]
    if ctx.transactions is None:
        rows += [(tid, CoordinatorNotAvailableError.code) for tid in ids]
    elif ids:
        rows += [hidden_topics(ctx, session, row) for row in ctx.transactions.describe(ids)]
    out = []
    for row in rows:
        if isinstance(row, tuple):
            out.append(TransactionDescription(row[1], row[0], "", 0, -1, -1, -1, []))
            continue
        out.append(TransactionDescription(
            code_of(row.error), row.transactional_id, row.state, row.timeout_ms, row.start_ms,
            row.producer_id, row.producer_epoch, [TxnTopic(t, list(ps)) for t, ps in row.topics],
        ))  # fmt: skip
    return DescribeTransactionsResponse(out)
