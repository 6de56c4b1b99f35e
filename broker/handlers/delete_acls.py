"""DeleteAcls (31): remove every ACL binding each filter matches (ZooKeeper, every broker
told); needs Alter on the Cluster (broker/handlers/acls.py). One result per filter, with the
bindings it deleted; a refusal of the whole request is every filter's error."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers import acls
from broker.session import Session
from protocol.acl import AclBindingFilter
from protocol.api.acls import (
    AclFilterData,
    DeleteAclsFilterResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
    data_of,
    filter_of,
)
from protocol.codec import Request
from protocol.errors import OdradekError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> DeleteAclsResponse:
    req: DeleteAclsRequest = request.body
    filters = [_parse(f) for f in req.filters]
    try:
        results = await acls.delete(ctx.authorizer, session, filters)
    except OdradekError as exc:
        return DeleteAclsResponse(
            [DeleteAclsFilterResult(exc.code, exc.message, []) for _ in filters]
        )
    return DeleteAclsResponse(
        [
            DeleteAclsFilterResult(0, None, [data_of(b) for b in deleted])
            if error is None
            else DeleteAclsFilterResult(error.code, error.message, [])
            for error, deleted in results
        ]
    )


def _parse(data: AclFilterData) -> AclBindingFilter | OdradekError:
    try:
        return filter_of(data)
    except OdradekError as exc:
        return exc
