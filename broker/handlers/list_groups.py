"""ListGroups: the groups this broker coordinates (a client asks every broker)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import ListGroupsRequest, ListGroupsResponse
from protocol.codec import Request


def handle(ctx: BrokerContext, request: Request, session: Session) -> ListGroupsResponse:
    req: ListGroupsRequest = request.body
    if ctx.groups is None:
        return ListGroupsResponse(0, [])
    groups = ctx.groups.list_groups(req.states)
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.DESCRIBE, rules.CLUSTER, api="ListGroups", log_denied=False
    ):
        return ListGroupsResponse(0, groups)
    hidden = rules.denied(
        ctx,
        session,
        rules.DESCRIBE,
        rules.GROUP,
        (g.group_id for g in groups),
        api="ListGroups",
        log_denied=False,
    )
    return ListGroupsResponse(0, [g for g in groups if g.group_id not in hidden])
