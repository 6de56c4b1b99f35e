"""CreateAcls: add ACL bindings in ZooKeeper (each resource pattern's set rewritten
conditionally, every broker told: broker/security/acl_admin.py). One result per creation, in
order: a creation that is not valid (a principal without a type, an ANY or UNKNOWN code, a
MATCH pattern) is INVALID_REQUEST saying why, and the others go on; a ZooKeeper failure is
UNKNOWN_SERVER_ERROR for the creations of that resource pattern.

Refusals of the whole request, each creation's error: no authorizer configured is
SECURITY_DISABLED, no Alter on the Cluster CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import acl_admin, rules
from broker.session import Session
from protocol.acl import AclBinding
from protocol.api.acls import AclBindingData, binding_of
from protocol.errors import OdradekError

API = "CreateAcls"


@dataclass(frozen=True, slots=True)
class CreateAcls:
    creations: tuple[AclBindingData, ...]  # Kafka's codes as ints, "User:alice" principals


@dataclass(frozen=True, slots=True)
class Created:
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class CreateAclsResult:
    results: tuple[Created, ...]  # one per creation, in order


async def run(ctx: BrokerContext, session: Session, req: CreateAcls) -> CreateAclsResult:
    refused = acl_admin.refusal(ctx, session, rules.ALTER, API)
    if refused is not None:
        return CreateAclsResult(tuple(Created(refused.code, refused.message)
                                      for _ in req.creations))  # fmt: skip
    assert ctx.authorizer is not None  # refusal says SECURITY_DISABLED without one
    errors = await acl_admin.create(ctx.authorizer, session, [_parse(c) for c in req.creations])
    return CreateAclsResult(
        tuple(Created(0) if e is None else Created(e.code, e.message) for e in errors)
    )


def _parse(data: AclBindingData) -> AclBinding | OdradekError:
    try:
        return binding_of(data)
    except OdradekError as exc:
        return exc
