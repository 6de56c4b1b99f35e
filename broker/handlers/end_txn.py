"""EndTxn (26): commit or abort the producer's open transaction. Answered once the coordinator
has written PrepareCommit / PrepareAbort; the markers go to every partition in the background,
and the id's next transaction waits for them (CONCURRENT_TRANSACTIONS, retriable)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers.txn_common import code_of, coordinator, txn_refusal
from broker.session import Session
from protocol.api.txn import EndTxnRequest, EndTxnResponse
from protocol.codec import Request
from protocol.errors import OdradekError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> EndTxnResponse:
    req: EndTxnRequest = request.body
    refused = txn_refusal(ctx, session, req.transactional_id, "EndTxn")
    if refused:
        return EndTxnResponse(refused)
    try:
        answer = await coordinator(ctx).end_txn(
            req.transactional_id, req.producer_id, req.producer_epoch, req.committed
        )
    except OdradekError as exc:
        answer = exc.code
    return EndTxnResponse(code_of(answer))
