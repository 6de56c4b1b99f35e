"""AddPartitionsToTxn (24): a transactional producer names the partitions its open transaction
writes to before it produces to them (KIP-98), so that the coordinator knows where to write the
markers. Sent to the id's transaction coordinator; one error code per partition."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers.txn_common import add_partitions_refusals, code_of, coordinator
from broker.session import Session
from protocol.api.txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    TxnPartitionResult,
    TxnTopicResult,
)
from protocol.codec import Request
from protocol.errors import OdradekError


async def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> AddPartitionsToTxnResponse:
    req: AddPartitionsToTxnRequest = request.body
    wanted = [(t.name, p) for t in req.topics for p in t.partitions]
    refused = add_partitions_refusals(ctx, session, req.transactional_id, wanted,
                                      req.verify_only)  # fmt: skip
    answer: dict[tuple[str, int], str] | dict[tuple[str, int], int] | int
    try:
        if refused:
            answer = refused
        else:
            answer = await coordinator(ctx).add_partitions(
                req.transactional_id, req.producer_id, req.producer_epoch, wanted,
                req.verify_only,
            )  # fmt: skip
    except OdradekError as exc:
        answer = exc.code
    return AddPartitionsToTxnResponse([
        TxnTopicResult(t.name, [
            TxnPartitionResult(p, code_of(answer if isinstance(answer, int)
                                          else answer[(t.name, p)]))
            for p in t.partitions])
        for t in req.topics
    ])  # fmt: skip
