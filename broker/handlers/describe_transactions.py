"""DescribeTransactions (65): the coordinator's state of each transactional id it owns (state,
timeout, start time, producer id and epoch, partitions). An id this broker does not coordinate
gets NOT_COORDINATOR; an unknown one TRANSACTIONAL_ID_NOT_FOUND."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.txn_common import code_of
from broker.session import Session
from protocol.api.txn import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    TransactionDescription,
    TxnTopic,
)
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError


def handle(ctx: BrokerContext, request: Request, session: Session) -> DescribeTransactionsResponse:
    req: DescribeTransactionsRequest = request.body
    ids = list(req.transactional_ids)
    if ctx.transactions is None:
        rows: list[Any] = [(tid, CoordinatorNotAvailableError.code) for tid in ids]
    else:
        rows = list(ctx.transactions.describe(ids))
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
