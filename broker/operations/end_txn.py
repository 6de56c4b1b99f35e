"""EndTxn: commit or abort the producer's open transaction. Answered once the coordinator has
written PrepareCommit / PrepareAbort; the markers go to every partition in the background
(WriteTxnMarkers), and the id's next transaction waits for them (CONCURRENT_TRANSACTIONS,
retriable).

Transaction version 2 (KIP-890 part 2, Kafka's EndTxn v5+, `txn_version` 2): the coordinator
bumps the producer's epoch at every end and the answer carries the producer id and epoch for
its next transaction (coordinator/transaction/end_v2.py); below, the epoch stays and the answer
carries none (-1, -1).

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
    txn_version: int = 0  # the client's transaction.version: 2 from EndTxn v5


@dataclass(frozen=True, slots=True)
class EndTxnResult:
    error_code: int
    producer_id: int = -1  # TV2: the producer's id and epoch from now on
    producer_epoch: int = -1


async def run(ctx: BrokerContext, session: Session, req: EndTxn) -> EndTxnResult:
    refused = txn_refusal(ctx, session, req.transactional_id, API)
    if refused:
        return EndTxnResult(refused)
    try:
        answer = await ctx.transactions.end_txn(
            req.transactional_id, req.producer_id, req.producer_epoch, req.committed,
            req.txn_version,
        )  # fmt: skip
    except OdradekError as exc:
        answer = exc.code
    if isinstance(answer, int):
        return EndTxnResult(answer)
    return EndTxnResult(code_of(answer.error), answer.producer_id, answer.producer_epoch)
