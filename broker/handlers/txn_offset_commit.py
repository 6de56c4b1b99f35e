"""TxnOffsetCommit (28): a transactional producer commits a group's offsets inside its
transaction (KIP-98, with KIP-447's generation and member id checked as OffsetCommit checks
them). Sent to the group's coordinator, which appends them to `__consumer_offsets` as part of
the transaction: they become the group's offsets with the COMMIT marker, and are dropped at
ABORT. One error code for all the partitions."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.txn import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnPartitionResult,
    TxnTopicResult,
)
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> TxnOffsetCommitResponse:
    req: TxnOffsetCommitRequest = request.body
    offsets = [
        (t.name, p.partition, p.committed_offset, p.metadata, p.leader_epoch)
        for t in req.topics for p in t.partitions
    ]  # fmt: skip
    if ctx.groups is None:
        code = CoordinatorNotAvailableError.code
    else:
        code = await ctx.groups.txn_commit(
            req.group_id, req.producer_id, req.producer_epoch, req.generation_id,
            req.member_id, offsets, req.group_instance_id,
        )  # fmt: skip
    return TxnOffsetCommitResponse([
        TxnTopicResult(t.name, [TxnPartitionResult(p.partition, code) for p in t.partitions])
        for t in req.topics
    ])  # fmt: skip
