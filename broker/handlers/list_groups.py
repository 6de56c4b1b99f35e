"""ListGroups: the groups this broker coordinates (a client asks every broker)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.group import ListGroupsRequest, ListGroupsResponse
from protocol.codec import Request


def handle(ctx: BrokerContext, request: Request, session: Session) -> ListGroupsResponse:
    req: ListGroupsRequest = request.body
    if ctx.groups is None:
        return ListGroupsResponse(0, [])
    return ListGroupsResponse(0, ctx.groups.list_groups(req.states))
