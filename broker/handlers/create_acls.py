"""CreateAcls (30): add ACL bindings in ZooKeeper (each resource pattern's set rewritten
conditionally, every broker told); needs Alter on the Cluster (broker/handlers/acls.py). One
result per creation, in order; a refusal of the whole request is every creation's error."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers import acls
from broker.session import Session
from protocol.acl import AclBinding
from protocol.api.acls import (
    AclBindingData,
    AclResult,
    CreateAclsRequest,
    CreateAclsResponse,
    binding_of,
)
from protocol.codec import Request
from protocol.errors import OdradekError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> CreateAclsResponse:
    req: CreateAclsRequest = request.body
    creations = [_parse(c) for c in req.creations]
    try:
        errors = await acls.create(ctx.authorizer, session, creations)
    except OdradekError as exc:
        return CreateAclsResponse([AclResult(exc.code, exc.message) for _ in creations])
    return CreateAclsResponse(
        [AclResult(0) if e is None else AclResult(e.code, e.message) for e in errors]
    )


def _parse(data: AclBindingData) -> AclBinding | OdradekError:
    try:
        return binding_of(data)
    except OdradekError as exc:
        return exc
