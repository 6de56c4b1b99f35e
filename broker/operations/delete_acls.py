"""DeleteAcls: remove every ACL binding each filter matches (ZooKeeper, every broker told:
broker/security/acl_admin.py). One result per filter, in order, with the bindings it deleted
(a binding two filters match is under both, as Kafka reports it); a filter that is not valid
is INVALID_REQUEST saying why, and the others go on.

Refusals of the whole request, each filter's error: no authorizer configured is
SECURITY_DISABLED, no Alter on the Cluster CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import acl_admin, rules
from broker.session import Session
from protocol.api.acls import AclBindingData, AclFilterData, data_of, filter_of

API = "DeleteAcls"


@dataclass(frozen=True, slots=True)
class DeleteAcls:
    filters: tuple[AclFilterData, ...]


@dataclass(frozen=True, slots=True)
class FilterResult:
    error_code: int
    error_message: str | None = None
    deleted: tuple[AclBindingData, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteAclsResult:
    results: tuple[FilterResult, ...]  # one per filter, in order


async def run(ctx: BrokerContext, session: Session, req: DeleteAcls) -> DeleteAclsResult:
    refused = acl_admin.refusal(ctx, session, rules.ALTER, API)
    if refused is not None:
        return DeleteAclsResult(tuple(FilterResult(refused.code, refused.message)
                                      for _ in req.filters))  # fmt: skip
    assert ctx.authorizer is not None  # refusal says SECURITY_DISABLED without one
    results = await acl_admin.delete(ctx.authorizer, session, [filter_of(f) for f in req.filters])
    return DeleteAclsResult(tuple(
        FilterResult(0, None, tuple(data_of(b) for b in deleted)) if error is None
        else FilterResult(error.code, error.message)
        for error, deleted in results
    ))  # fmt: skip
