"""OffsetCommit: validated against the member's generation, appended to the group's offsets
partition, answered once replicated."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.group import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    PartitionResult,
    TopicResult,
)
from protocol.codec import Request
from protocol.errors import NotCoordinatorError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> OffsetCommitResponse:
    req: OffsetCommitRequest = request.body
    if ctx.groups is None:
        code = NotCoordinatorError.code
        return OffsetCommitResponse([
            TopicResult(t.name, [PartitionResult(p.partition, code) for p in t.partitions])
            for t in req.topics
        ])  # fmt: skip
    return await ctx.groups.commit(req)
