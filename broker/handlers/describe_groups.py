"""DescribeGroups: state, generation, assignor and members with their partitions."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.group import DescribeGroupsRequest, DescribeGroupsResponse, GroupDescription
from protocol.codec import Request
from protocol.errors import NotCoordinatorError


def handle(ctx: BrokerContext, request: Request, session: Session) -> DescribeGroupsResponse:
    req: DescribeGroupsRequest = request.body
    if ctx.groups is None:
        code = NotCoordinatorError.code
        return DescribeGroupsResponse(
            [GroupDescription(code, g, "Dead", -1, "", []) for g in req.group_ids]
        )
    return ctx.groups.describe(req.group_ids)
