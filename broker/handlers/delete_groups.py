"""DeleteGroups: only a group without members (else NON_EMPTY_GROUP); writes tombstones for
the group and its offsets."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.group import DeletedGroup, DeleteGroupsRequest, DeleteGroupsResponse
from protocol.codec import Request
from protocol.errors import NotCoordinatorError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> DeleteGroupsResponse:
    req: DeleteGroupsRequest = request.body
    if ctx.groups is None:
        return DeleteGroupsResponse(
            [DeletedGroup(g, NotCoordinatorError.code) for g in req.group_ids]
        )
    return DeleteGroupsResponse(await ctx.groups.delete(req.group_ids))
