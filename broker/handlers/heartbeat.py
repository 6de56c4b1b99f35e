"""Heartbeat: GroupId, GroupGenerationId, ConsumerId -> ErrorCode (REBALANCE_IN_PROGRESS or
ILLEGAL_GENERATION tell the member to rejoin)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.group import HeartbeatRequest, HeartbeatResponse
from protocol.codec import Request
from protocol.errors import NotCoordinatorError


def handle(ctx: BrokerContext, request: Request, session: Session) -> HeartbeatResponse:
    req: HeartbeatRequest = request.body
    if ctx.groups is None:
        return HeartbeatResponse(NotCoordinatorError.code)
    return HeartbeatResponse(ctx.groups.heartbeat(req))
