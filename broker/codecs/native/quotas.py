"""The native door's codecs of the client quota APIs (see broker/codecs/native/__init__.py):
protocol/api/quotas.py's messages carry Kafka's fields, so these only change containers
(an entity's parts to (type, name) pairs, values to (key, value) pairs)."""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import alter_client_quotas as alter
from broker.operations import describe_client_quotas as describe
from protocol.api import quotas
from protocol.codec import Request
from protocol.quota import FilterComponent


def _entity(parts: list[quotas.QuotaEntityPart]) -> alter.Entity:
    return tuple((p.entity_type, p.entity_name) for p in parts)


def _parts(entity: alter.Entity) -> list[quotas.QuotaEntityPart]:
    return [quotas.QuotaEntityPart(t, n) for t, n in entity]


# ----- AlterClientQuotas ----------------------------------------------------------------------


def _alter_in(request: Request) -> alter.AlterClientQuotas:
    req: quotas.AlterClientQuotasRequest = request.body
    return alter.AlterClientQuotas(tuple(
        alter.Alteration(_entity(e.entity),
                         tuple(alter.Op(op.key, op.value, op.remove) for op in e.ops))
        for e in req.entries
    ), req.validate_only)  # fmt: skip


def _alter_out(
    request: Request, result: alter.AlterClientQuotasResult
) -> quotas.AlterClientQuotasResponse:
    return quotas.AlterClientQuotasResponse([
        quotas.AlterClientQuotasResult(e.error_code, e.error_message, _parts(e.entity))
        for e in result.entries
    ])  # fmt: skip


ALTER_CLIENT_QUOTAS = Codec(_alter_in, _alter_out)

# ----- DescribeClientQuotas -------------------------------------------------------------------


def _describe_in(request: Request) -> describe.DescribeClientQuotas:
    req: quotas.DescribeClientQuotasRequest = request.body
    components = tuple(
        FilterComponent(c.entity_type, c.match_type, c.match) for c in req.components
    )
    return describe.DescribeClientQuotas(components, req.strict)


def _describe_out(
    request: Request, result: describe.DescribeClientQuotasResult
) -> quotas.DescribeClientQuotasResponse:
    return quotas.DescribeClientQuotasResponse(result.error_code, result.error_message, [
        quotas.DescribedQuotas(_parts(e.entity), [quotas.QuotaValue(k, v) for k, v in e.values])
        for e in result.entries
    ])  # fmt: skip


DESCRIBE_CLIENT_QUOTAS = Codec(_describe_in, _describe_out)
