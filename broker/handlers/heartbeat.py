"""Heartbeat: GroupId, GroupGenerationId, ConsumerId -> ErrorCode (REBALANCE_IN_PROGRESS or
ILLEGAL_GENERATION tell the member to rejoin)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import HeartbeatRequest, HeartbeatResponse
from protocol.codec import Request
from protocol.errors import GroupAuthorizationFailedError, NotCoordinatorError


def handle(ctx: BrokerContext, request: Request, session: Session) -> HeartbeatResponse:
    req: HeartbeatRequest = request.body
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api="Heartbeat"):
        return HeartbeatResponse(GroupAuthorizationFailedError.code)
    if ctx.groups is None:
        return HeartbeatResponse(NotCoordinatorError.code)
    return HeartbeatResponse(ctx.groups.heartbeat(req))
