"""DescribeAcls (29): the ACL bindings a filter matches, from this broker's cache (which
follows ZooKeeper); needs Describe on the Cluster (broker/handlers/acls.py)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers import acls
from broker.session import Session
from protocol.api.acls import DescribeAclsRequest, DescribeAclsResponse, data_of, filter_of
from protocol.codec import Request
from protocol.errors import OdradekError


def handle(ctx: BrokerContext, request: Request, session: Session) -> DescribeAclsResponse:
    req: DescribeAclsRequest = request.body
    try:
        found = acls.describe(ctx.authorizer, session, filter_of(req.filter))
    except OdradekError as exc:
        return DescribeAclsResponse(exc.code, exc.message, [])
    return DescribeAclsResponse(0, None, [data_of(b) for b in found])
