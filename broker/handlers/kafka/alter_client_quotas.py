"""AlterClientQuotas (49), v0-v1: the native AlterClientQuotas (broker/handlers/
alter_client_quotas.py), answered in Kafka's shape (each entry's error and its entity)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import alter_client_quotas as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.quotas import (
    ALTER_CLIENT_QUOTAS,
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    QuotaAlteration,
    QuotaEntityPart,
    QuotaOp,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    entries = [
        QuotaAlteration(
            [QuotaEntityPart(e.entity_type, e.entity_name) for e in entry.entity],
            [QuotaOp(op.key, float(op.value), bool(op.remove)) for op in entry.ops],
        )
        for entry in req.entries
    ]
    native_req = AlterClientQuotasRequest(entries, bool(req.validate_only))
    result = native.handle(ctx, as_native(ALTER_CLIENT_QUOTAS, native_req, request), session)
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: AlterClientQuotasResponse) -> Any:
    cls = response_class(ALTER_CLIENT_QUOTAS.key, version)
    entry_cls, entity_cls = nested(cls, "EntryData"), nested(cls, "EntityData")
    entries = tuple(
        make(
            entry_cls,
            error_code=e.error_code,
            error_message=e.error_message,
            entity=tuple(
                make(entity_cls, entity_type=p.entity_type, entity_name=p.entity_name)
                for p in e.entity
            ),
        )
        for e in resp.entries
    )
    return make(cls, throttle_time=resp.throttle_time_ms, entries=entries)
