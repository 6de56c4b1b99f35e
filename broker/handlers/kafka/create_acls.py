"""CreateAcls (30), v1-v3 as Kafka 4.0: the native CreateAcls (broker/handlers/
create_acls.py) answered in Kafka's shape, one result per creation."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import create_acls as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.acls import CREATE_ACLS, AclBindingData, CreateAclsRequest, CreateAclsResponse
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    creations = [
        AclBindingData(
            int(c.resource_type),
            c.resource_name,
            int(c.resource_pattern_type),
            c.principal,
            c.host,
            int(c.operation),
            int(c.permission_type),
        )
        for c in request.body.creations
    ]
    native_req = CreateAclsRequest(creations)
    result = native.handle(ctx, as_native(CREATE_ACLS, native_req, request), session)
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: CreateAclsResponse) -> Any:
    cls = response_class(CREATE_ACLS.key, version)
    result_cls = nested(cls, "AclCreationResult")
    results = tuple(
        make(result_cls, error_code=r.error_code, error_message=r.error_message)
        for r in resp.results
    )
    return make(cls, throttle_time=0, results=results)
