"""EndTxn: commit or abort the producer's open transaction. Answered once the coordinator has
written PrepareCommit / PrepareAbort; the markers go to every partition in the background
(WriteTxnMarkers), and the id's next transaction waits for them (CONCURRENT_TRANSACTIONS,
retriable).

Refusals: without Write on the transactional id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED; no
transaction coordinator here: COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.txn_common import code_of, txn_refusal
from broker.session import Session
from protocol.errors import OdradekError

API = "EndTxn"


@dataclass(frozen=True, slots=True)
class EndTxn:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


@dataclass(frozen=True, slots=True)
class EndTxnResult:
    error_code: int


async def run(ctx: BrokerContext, session: Session, req: EndTxn) -> EndTxnResult:
    refused = txn_refusal(ctx, session, req.transactional_id, API)
    if refused:
        return EndTxnResult(refused)
    try:
        answer = await ctx.transactions.end_txn(
            req.transactional_id, req.producer_id, req.producer_epoch, req.committed
        )
    except OdradekError as exc:
        answer = exc.code
    return EndTxnResult(code_of(answer))
