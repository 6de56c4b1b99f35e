"""AlterClientQuotas (KIP-546): set or remove quotas of users, client ids or both, per entry.

Each entry is checked as Kafka's ZooKeeper-era broker does (protocol/quota.py: an empty entity,
an unknown or repeated entity type, an empty name, an unknown key or a byte rate that is not a
whole positive number is INVALID_REQUEST with why) and then, unless `validate_only`, written by
the quota store (`ctx.quota_store`, broker/quota/store.py: ZooKeeper, with a change
notification every broker follows within a second). An entry's failure does not stop the
others; one result per entry, in order, naming its entity as asked.

Refusals: no AlterConfigs on the Cluster is CLUSTER_AUTHORIZATION_FAILED for every entry
(Kafka's rule).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import OdradekError
from protocol.quota import entity_from_wire

API = "AlterClientQuotas"
log = logging.getLogger("odradek.broker.quotas")

Entity = tuple[tuple[str, str | None], ...]  # (entity type, name; None: the default)


@dataclass(frozen=True, slots=True)
class Op:
    key: str
    value: float
    remove: bool = False


@dataclass(frozen=True, slots=True)
class Alteration:
    entity: Entity
    ops: tuple[Op, ...]


@dataclass(frozen=True, slots=True)
class AlterClientQuotas:
    entries: tuple[Alteration, ...]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class Altered:
    error_code: int
    error_message: str | None
    entity: Entity


@dataclass(frozen=True, slots=True)
class AlterClientQuotasResult:
    entries: tuple[Altered, ...]  # one per entry, in order


async def run(
    ctx: BrokerContext, session: Session, req: AlterClientQuotas
) -> AlterClientQuotasResult:
    if not rules.allows(ctx, session, rules.ALTER_CONFIGS, rules.CLUSTER, api=API):
        err = rules.refusal(session, rules.ALTER_CONFIGS, rules.CLUSTER, "")
        return AlterClientQuotasResult(
            tuple(Altered(err.code, err.message, e.entity) for e in req.entries)
        )
    results = [await _alter(ctx, entry, req.validate_only, session) for entry in req.entries]
    return AlterClientQuotasResult(tuple(results))


async def _alter(
    ctx: BrokerContext, entry: Alteration, validate_only: bool, session: Session
) -> Altered:
    try:
        entity = entity_from_wire(entry.entity)
        ops = [(op.key, None if op.remove else float(op.value)) for op in entry.ops]
        await ctx.quota_store.alter(entity, ops, validate_only)
    except OdradekError as exc:
        return Altered(exc.code, exc.message, entry.entity)
    if not validate_only:
        log.info("%s altered the quotas of %s: %s", session.principal, entity, ops)
    return Altered(0, None, entry.entity)
