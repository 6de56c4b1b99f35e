"""DescribeAcls: the ACL bindings a filter matches, from this broker's cache (which follows
ZooKeeper), in a stable order (resource type, name, pattern type, principal, host, operation,
permission); the Kafka codec groups them by resource pattern.

Refusals, each the whole request's (broker/security/acl_admin.py): no authorizer configured is
SECURITY_DISABLED, no Describe on the Cluster CLUSTER_AUTHORIZATION_FAILED; a filter that is
not valid (an unknown code, a LITERAL/PREFIXED name of "") is INVALID_REQUEST saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import acl_admin, rules
from broker.session import Session
from protocol.api.acls import AclBindingData, AclFilterData, data_of, filter_of
from protocol.errors import OdradekError

API = "DescribeAcls"


@dataclass(frozen=True, slots=True)
class DescribeAcls:
    filter: AclFilterData  # Kafka's codes as ints; a None name, principal or host: any


@dataclass(frozen=True, slots=True)
class DescribeAclsResult:
    error_code: int
    error_message: str | None
    bindings: tuple[AclBindingData, ...] = ()


def run(ctx: BrokerContext, session: Session, req: DescribeAcls) -> DescribeAclsResult:
    refused = acl_admin.refusal(ctx, session, rules.DESCRIBE, API)
    if refused is not None:
        return DescribeAclsResult(refused.code, refused.message)
    assert ctx.authorizer is not None  # refusal says SECURITY_DISABLED without one
    try:
        found = acl_admin.describe(ctx.authorizer, filter_of(req.filter))
    except OdradekError as exc:
        return DescribeAclsResult(exc.code, exc.message)
    return DescribeAclsResult(0, None, tuple(data_of(b) for b in found))
