"""AddOffsetsToTxn (25): a transactional producer about to commit a group's offsets inside its
transaction (TxnOffsetCommit, consume-transform-produce) has the transaction coordinator add the
group's `__consumer_offsets` partition to the transaction, so that its marker ends the commit."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers.txn_common import code_of, coordinator, offsets_partitions, txn_group_refusal
from broker.session import Session
from protocol.api.txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from protocol.codec import Request
from protocol.errors import OdradekError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> AddOffsetsToTxnResponse:
    req: AddOffsetsToTxnRequest = request.body
    refused = txn_group_refusal(ctx, session, req.transactional_id, req.group_id,
                                "AddOffsetsToTxn")  # fmt: skip
    if refused:
        return AddOffsetsToTxnResponse(refused)
    try:
        answer = await coordinator(ctx).add_offsets(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id,
            offsets_partitions(ctx),
        )  # fmt: skip
    except OdradekError as exc:
        answer = exc.code
    return AddOffsetsToTxnResponse(code_of(answer))
