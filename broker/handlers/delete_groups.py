"""DeleteGroups: only a group without members (else NON_EMPTY_GROUP); writes tombstones for
the group and its offsets."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import DeletedGroup, DeleteGroupsRequest, DeleteGroupsResponse
from protocol.codec import Request
from protocol.errors import GroupAuthorizationFailedError, NotCoordinatorError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> DeleteGroupsResponse:
    req: DeleteGroupsRequest = request.body
    refused = rules.denied(ctx, session, rules.DELETE, rules.GROUP, req.group_ids,
                           api="DeleteGroups")  # fmt: skip
    allowed = [g for g in req.group_ids if g not in refused]
    if ctx.groups is None:
        deleted = {g: DeletedGroup(g, NotCoordinatorError.code) for g in allowed}
    elif not refused:
        return DeleteGroupsResponse(await ctx.groups.delete(req.group_ids))
    else:
        deleted = {d.group_id: d for d in await ctx.groups.delete(allowed)} if allowed else {}
    code = GroupAuthorizationFailedError.code
    return DeleteGroupsResponse([deleted[g] if g in deleted else DeletedGroup(g, code)
                                 for g in req.group_ids])  # fmt: skip
