"""ListTransactions (66): the transactional ids this broker coordinates, filtered by state
names (Kafka's, e.g. "Ongoing"), producer ids and a minimum open duration (KIP-994). A client
asks every broker and merges the answers."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.txn import ListedTransaction, ListTransactionsRequest, ListTransactionsResponse
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError


def handle(ctx: BrokerContext, request: Request, session: Session) -> ListTransactionsResponse:
    req: ListTransactionsRequest = request.body
    if ctx.transactions is None:
        return ListTransactionsResponse(CoordinatorNotAvailableError.code, [], [])
    rows, unknown = ctx.transactions.list_transactions(
        req.state_filters, req.producer_id_filters, req.duration_filter_ms
    )
    hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TXN_ID,
                          (r.transactional_id for r in rows), api="ListTransactions",
                          log_denied=False)  # fmt: skip
    return ListTransactionsResponse(0, list(unknown), [
        ListedTransaction(r.transactional_id, r.producer_id, r.state) for r in rows
        if r.transactional_id not in hidden
    ])  # fmt: skip
