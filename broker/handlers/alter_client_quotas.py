"""AlterClientQuotas (49): set or remove quotas of users, client ids or both, per entry.

Each entry is checked as Kafka's ZooKeeper-era broker does (protocol/quota.py: an empty entity,
an unknown or repeated entity type, an empty name, an unknown key or a byte rate that is not a
whole positive number is INVALID_REQUEST with why) and then, unless `validate_only`, written by
the quota store (ZooKeeper, with a change notification every broker follows within a second).
An entry's failure does not stop the others. ACLs: AlterConfigs on the cluster, else every
entry is CLUSTER_AUTHORIZATION_FAILED (Kafka's rule).
"""

from __future__ import annotations

import logging

from broker.context import BrokerContext
from broker.quota.store import QuotaStore
from broker.security import rules
from broker.session import Session
from protocol.api.quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    AlterClientQuotasResult,
    QuotaAlteration,
)
from protocol.codec import Request
from protocol.errors import OdradekError, UnknownServerError
from protocol.quota import entity_from_wire

log = logging.getLogger("odradek.broker.quotas")


def store_of(ctx: BrokerContext) -> QuotaStore:
    if ctx.quota_store is None:
        raise UnknownServerError("client quotas are not served: the broker has no quota store")
    return ctx.quota_store


async def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> AlterClientQuotasResponse:
    req: AlterClientQuotasRequest = request.body
    if not rules.allows(ctx, session, rules.ALTER_CONFIGS, rules.CLUSTER, api="AlterClientQuotas"):
        err = rules.refusal(session, rules.ALTER_CONFIGS, rules.CLUSTER, "")
        return AlterClientQuotasResponse(
            [AlterClientQuotasResult(err.code, err.message, e.entity) for e in req.entries]
        )
    results = [await _alter(ctx, entry, req.validate_only, session) for entry in req.entries]
    return AlterClientQuotasResponse(results)


async def _alter(
    ctx: BrokerContext, entry: QuotaAlteration, validate_only: bool, session: Session
) -> AlterClientQuotasResult:
    try:
        entity = entity_from_wire((p.entity_type, p.entity_name) for p in entry.entity)
        ops = [(op.key, None if op.remove else float(op.value)) for op in entry.ops]
        await store_of(ctx).alter(entity, ops, validate_only)
    except OdradekError as exc:
        return AlterClientQuotasResult(exc.code, exc.message, entry.entity)
    if not validate_only:
        log.info("%s altered the quotas of %s: %s", session.principal, entity, ops)
    return AlterClientQuotasResult(0, None, entry.entity)
