"""InitProducerId: a producer id and epoch.

Without a transactional id (an idempotent producer), from any broker: the broker's
`ProducerIdManager` (coordinator/cluster/producer_ids.py) decides and hands the id out of its
ZooKeeper-claimed block. With one, at the id's transaction coordinator (FindCoordinator key
type 1): the id's producer id at a new epoch, fencing older producers of the id, whose open
transaction is aborted first (CONCURRENT_TRANSACTIONS until it is), and KIP-939's two-phase
commit (enable_2pc, keep_prepared_txn). A refusal is answered in the body with its code and
message."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers.txn_common import code_of, coordinator, producer_id_refusal
from broker.session import Session
from coordinator.transaction.txn import InitAnswer
from protocol.api.producer_ids import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError, OdradekError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> InitProducerIdResponse:
    req: InitProducerIdRequest = request.body
    refused = producer_id_refusal(ctx, session, req.transactional_id)
    if refused:
        return InitProducerIdResponse(refused, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    if req.transactional_id is not None:
        return await _transactional(ctx, req)
    if ctx.producer_ids is None:
        return refusal(CoordinatorNotAvailableError("this broker hands out no producer ids"))
    try:
        producer_id, epoch = await ctx.producer_ids.init_producer_id(
            None, req.producer_id, req.producer_epoch
        )
    except OdradekError as exc:
        return refusal(exc)
    return InitProducerIdResponse(0, producer_id, epoch)


async def _transactional(ctx: BrokerContext, req: InitProducerIdRequest) -> InitProducerIdResponse:
    assert req.transactional_id is not None
    try:
        answer: InitAnswer | int = await coordinator(ctx).init_producer_id(
            req.transactional_id, req.transaction_timeout_ms, req.producer_id,
            req.producer_epoch, req.enable_2pc, req.keep_prepared_txn,
        )  # fmt: skip
    except OdradekError as exc:
        return refusal(exc)
    if isinstance(answer, int):
        return InitProducerIdResponse(answer, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    return InitProducerIdResponse(
        code_of(answer.error), answer.producer_id, answer.producer_epoch, None, 0,
        answer.ongoing_txn_producer_id, answer.ongoing_txn_producer_epoch,
    )  # fmt: skip


def refusal(exc: OdradekError) -> InitProducerIdResponse:
    return InitProducerIdResponse(exc.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, exc.message)
