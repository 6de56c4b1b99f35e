"""OffsetFetch: a group's committed offsets (-1 where nothing is committed).

ACLs (`authorized`, shared with the Kafka door's OffsetFetch): Describe on the group first
(GROUP_AUTHORIZATION_FAILED), then Describe on each topic: a named topic refused answers
TOPIC_AUTHORIZATION_FAILED for each of its partitions, and the all-partitions answer leaves
out the topics the principal may not describe, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import FetchedOffset, FetchedTopic, OffsetFetchRequest, OffsetFetchResponse
from protocol.codec import Request
from protocol.errors import (
    GroupAuthorizationFailedError,
    NotCoordinatorError,
    TopicAuthorizationFailedError,
)

API = "OffsetFetch"


def handle(ctx: BrokerContext, request: Request, session: Session) -> OffsetFetchResponse:
    req: OffsetFetchRequest = request.body
    return authorized(ctx, session, req, lambda r: _fetch(ctx, r))


def _fetch(ctx: BrokerContext, req: OffsetFetchRequest) -> OffsetFetchResponse:
    if ctx.groups is None:
        return OffsetFetchResponse(NotCoordinatorError.code, [])
    return ctx.groups.fetch_offsets(req)


def authorized(
    ctx: BrokerContext,
    session: Session,
    req: OffsetFetchRequest,
    fetch: Callable[[OffsetFetchRequest], OffsetFetchResponse],
) -> OffsetFetchResponse:
    """`fetch(req)` within the principal's rights (see the module docstring)."""
    if ctx.authorizer is None:
        return fetch(req)
    if not rules.allows(ctx, session, rules.DESCRIBE, rules.GROUP, req.group_id, api=API):
        return OffsetFetchResponse(GroupAuthorizationFailedError.code, [])
    if req.topics is None:
        resp = fetch(req)
        names = (t.name for t in resp.topics)
        hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, names, api=API,
                              log_denied=False)  # fmt: skip
        return replace(resp, topics=[t for t in resp.topics if t.name not in hidden])
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC,
                           (t.topic for t in req.topics), api=API)  # fmt: skip
    if not refused:
        return fetch(req)
    resp = fetch(replace(req, topics=[t for t in req.topics if t.topic not in refused]))
    code = TopicAuthorizationFailedError.code
    return replace(resp, topics=list(resp.topics) + [
        FetchedTopic(t.topic, [FetchedOffset(p, -1, None, code) for p in t.partitions])
        for t in req.topics if t.topic in refused
    ])  # fmt: skip
