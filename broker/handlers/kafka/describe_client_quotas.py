"""DescribeClientQuotas (48), v0-v1: the native DescribeClientQuotas (broker/handlers/
describe_client_quotas.py), answered in Kafka's shape (entries null on an error, as Kafka)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import describe_client_quotas as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.quotas import (
    DESCRIBE_CLIENT_QUOTAS,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    QuotaFilterComponent,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    components = [
        QuotaFilterComponent(c.entity_type, int(c.match_type), c.match) for c in req.components
    ]
    native_req = DescribeClientQuotasRequest(components, bool(req.strict))
    result = native.handle(ctx, as_native(DESCRIBE_CLIENT_QUOTAS, native_req, request), session)
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: DescribeClientQuotasResponse) -> Any:
    cls = response_class(DESCRIBE_CLIENT_QUOTAS.key, version)
    entry_cls = nested(cls, "EntryData")
    entity_cls, value_cls = nested(cls, "EntityData"), nested(cls, "ValueData")
    entries = None
    if resp.error_code == 0:
        entries = tuple(
            make(
                entry_cls,
                entity=tuple(
                    make(entity_cls, entity_type=p.entity_type, entity_name=p.entity_name)
                    for p in e.entity
                ),
                values=tuple(make(value_cls, key=v.key, value=v.value) for v in e.values),
            )
            for e in resp.entries
        )
    return make(
        cls,
        throttle_time=resp.throttle_time_ms,
        error_code=resp.error_code,
        error_message=resp.error_message,
        entries=entries,
    )
