"""DescribeClientQuotas (KIP-546): the quota entities a filter selects, with their values,
ordered by entity path, each entity's values by key.

The filter is Kafka's (protocol/quota.py `check_filter`: a repeated or empty entity type, an ip
component with others, an unknown match type are INVALID_REQUEST; an unknown entity type too);
`strict` selects only entities with exactly the filtered types. An error is the whole
answer's, as in Kafka (the Kafka codec writes its entries as null).

Refusals: no DescribeConfigs on the Cluster is CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.alter_client_quotas import Entity
from broker.security import rules
from broker.session import Session
from protocol.errors import OdradekError
from protocol.quota import FilterComponent

API = "DescribeClientQuotas"


@dataclass(frozen=True, slots=True)
class DescribeClientQuotas:
    components: tuple[FilterComponent, ...]
    strict: bool = False


@dataclass(frozen=True, slots=True)
class Described:
    entity: Entity
    values: tuple[tuple[str, float], ...]  # (key, value) by key


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasResult:
    error_code: int
    error_message: str | None
    entries: tuple[Described, ...] = ()


async def run(
    ctx: BrokerContext, session: Session, req: DescribeClientQuotas
) -> DescribeClientQuotasResult:
    if not rules.allows(ctx, session, rules.DESCRIBE_CONFIGS, rules.CLUSTER, api=API):
        err = rules.refusal(session, rules.DESCRIBE_CONFIGS, rules.CLUSTER, "")
        return DescribeClientQuotasResult(err.code, err.message)
    try:
        found = await ctx.quota_store.describe(req.components, req.strict)
    except OdradekError as exc:
        return DescribeClientQuotasResult(exc.code, exc.message)
    entries = tuple(
        Described(tuple(entity.wire()), tuple(sorted(values.items())))
        for entity, values in sorted(found.items(), key=lambda kv: str(kv[0].entity_path))
    )
    return DescribeClientQuotasResult(0, None, entries)
