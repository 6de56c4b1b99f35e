"""LeaveGroup: the member goes at once (no session timeout to wait for); a rebalance follows.
Member id "" with a group instance id removes that static member (KIP-345, an admin's removal);
a static member's own id with another member's instance id gets FENCED_INSTANCE_ID."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import LeaveGroupRequest, LeaveGroupResponse
from protocol.codec import Request
from protocol.errors import GroupAuthorizationFailedError, NotCoordinatorError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> LeaveGroupResponse:
    req: LeaveGroupRequest = request.body
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api="LeaveGroup"):
        return LeaveGroupResponse(GroupAuthorizationFailedError.code)
    if ctx.groups is None:
        return LeaveGroupResponse(NotCoordinatorError.code)
    return LeaveGroupResponse(
        await ctx.groups.leave(req.group_id, req.member_id, req.group_instance_id)
    )
