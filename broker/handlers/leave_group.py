"""LeaveGroup: the member goes at once (no session timeout to wait for); a rebalance follows."""

from __future__ import annotations

from broker.context import BrokerContext
from protocol.api.group import LeaveGroupRequest, LeaveGroupResponse
from protocol.codec import Request
from protocol.errors import NotCoordinatorError


async def handle(ctx: BrokerContext, request: Request) -> LeaveGroupResponse:
    req: LeaveGroupRequest = request.body
    if ctx.groups is None:
        return LeaveGroupResponse(NotCoordinatorError.code)
    return LeaveGroupResponse(await ctx.groups.leave(req.group_id, req.member_id))
