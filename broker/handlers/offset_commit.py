"""OffsetCommit: validated against the member's generation, appended to the group's offsets
partition, answered once replicated."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    PartitionResult,
    TopicResult,
)
from protocol.codec import Request
from protocol.errors import (
    GroupAuthorizationFailedError,
    NotCoordinatorError,
    TopicAuthorizationFailedError,
)


async def handle(ctx: BrokerContext, request: Request, session: Session) -> OffsetCommitResponse:
    req: OffsetCommitRequest = request.body
    group_code, refused = refusals(ctx, session, req.group_id, (t.name for t in req.topics))
    if group_code or ctx.groups is None:
        code = group_code or NotCoordinatorError.code
        return OffsetCommitResponse([
            TopicResult(t.name, [PartitionResult(p.partition, code) for p in t.partitions])
            for t in req.topics
        ])  # fmt: skip
    if not refused:
        return await ctx.groups.commit(req)
    allowed = [t for t in req.topics if t.name not in refused]
    resp = await ctx.groups.commit(replace(req, topics=allowed)) if allowed else None
    code = TopicAuthorizationFailedError.code
    return OffsetCommitResponse([*(resp.topics if resp is not None else ()), *(
        TopicResult(t.name, [PartitionResult(p.partition, code) for p in t.partitions])
        for t in req.topics if t.name in refused
    )])  # fmt: skip


def refusals(
    ctx: BrokerContext, session: Session, group_id: str, topics: Iterable[str],
    api: str = "OffsetCommit",
) -> tuple[int, frozenset[str]]:  # fmt: skip
    """Kafka's checks for committing offsets (both doors): Read on the group, first (its
    refusal's code, else 0), then Read on each topic (the topics refused)."""
    if ctx.authorizer is None:
        return 0, rules.NOTHING
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, group_id, api=api):
        return GroupAuthorizationFailedError.code, rules.NOTHING
    return 0, rules.denied(ctx, session, rules.READ, rules.TOPIC, topics, api=api)
