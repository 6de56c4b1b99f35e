"""DescribeClientQuotas (48): the quota entities a filter selects, with their values.

The filter is Kafka's (protocol/quota.py `check_filter`: a repeated or empty entity type, an ip
component with others, an unknown match type are INVALID_REQUEST; an unknown entity type too).
An error is the whole response's, as in Kafka. ACLs: DescribeConfigs on the cluster (else
CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers.alter_client_quotas import store_of
from broker.security import rules
from broker.session import Session
from protocol.api.quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribedQuotas,
    QuotaEntityPart,
    QuotaValue,
)
from protocol.codec import Request
from protocol.errors import OdradekError
from protocol.quota import FilterComponent


async def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> DescribeClientQuotasResponse:
    req: DescribeClientQuotasRequest = request.body
    api = "DescribeClientQuotas"
    if not rules.allows(ctx, session, rules.DESCRIBE_CONFIGS, rules.CLUSTER, api=api):
        err = rules.refusal(session, rules.DESCRIBE_CONFIGS, rules.CLUSTER, "")
        return DescribeClientQuotasResponse(err.code, err.message, [])
    components = [FilterComponent(c.entity_type, c.match_type, c.match) for c in req.components]
    try:
        found = await store_of(ctx).describe(components, req.strict)
    except OdradekError as exc:
        return DescribeClientQuotasResponse(exc.code, exc.message, [])
    entries = [
        DescribedQuotas(
            [QuotaEntityPart(t, n) for t, n in entity.wire()],
            [QuotaValue(k, v) for k, v in sorted(values.items())],
        )
        for entity, values in sorted(found.items(), key=lambda kv: str(kv[0].entity_path))
    ]
    return DescribeClientQuotasResponse(0, None, entries)
