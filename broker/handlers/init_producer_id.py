"""InitProducerId: a producer id and epoch for an idempotent producer, from any broker.

The broker's `ProducerIdManager` (coordinator/cluster/producer_ids.py) decides and hands the id out
of its ZooKeeper-claimed block; a refusal (a transactional id, a malformed id/epoch pair, no block
to be had) is answered in the body with its code and message."""

from __future__ import annotations

from broker.context import BrokerContext
from protocol.api.producer_ids import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError, OdradekError


async def handle(ctx: BrokerContext, request: Request) -> InitProducerIdResponse:
    req: InitProducerIdRequest = request.body
    if ctx.producer_ids is None:
        return refusal(CoordinatorNotAvailableError("this broker hands out no producer ids"))
    try:
        producer_id, epoch = await ctx.producer_ids.init_producer_id(
            req.transactional_id, req.producer_id, req.producer_epoch
        )
    except OdradekError as exc:
        return refusal(exc)
    return InitProducerIdResponse(0, producer_id, epoch)


def refusal(exc: OdradekError) -> InitProducerIdResponse:
    return InitProducerIdResponse(exc.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, exc.message)
