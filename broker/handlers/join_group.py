"""JoinGroup: answered when the rebalance the member takes part in completes (seed 000)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import JoinGroupRequest, JoinGroupResponse
from protocol.codec import Request
from protocol.errors import GroupAuthorizationFailedError, NotCoordinatorError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> JoinGroupResponse:
    req: JoinGroupRequest = request.body
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api="JoinGroup"):
        return JoinGroupResponse(GroupAuthorizationFailedError.code, -1, req.member_id, [])
    if ctx.groups is None:
        return JoinGroupResponse(NotCoordinatorError.code, -1, req.member_id, [])
    return await ctx.groups.join(req)
