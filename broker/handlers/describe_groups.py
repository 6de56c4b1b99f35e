"""DescribeGroups: state, generation, assignor and members with their partitions."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import DescribeGroupsRequest, DescribeGroupsResponse, GroupDescription
from protocol.codec import Request
from protocol.errors import GroupAuthorizationFailedError, NotCoordinatorError


def handle(ctx: BrokerContext, request: Request, session: Session) -> DescribeGroupsResponse:
    req: DescribeGroupsRequest = request.body
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.GROUP, req.group_ids,
                           api="DescribeGroups")  # fmt: skip
    allowed = [g for g in req.group_ids if g not in refused]
    if ctx.groups is None:
        code = NotCoordinatorError.code
        found = {g: GroupDescription(code, g, "Dead", -1, "", []) for g in allowed}
    elif not refused:
        return ctx.groups.describe(req.group_ids)
    else:
        found = {d.group_id: d for d in ctx.groups.describe(allowed).groups} if allowed else {}
    code = GroupAuthorizationFailedError.code
    return DescribeGroupsResponse([found[g] if g in found else GroupDescription(
        code, g, "", -1, "", []) for g in req.group_ids])  # fmt: skip
