"""AlterConfigs (33), v0-v2: the native AlterConfigs replacing each topic's whole override set
with the configs listed (null values left out), answered in Kafka's shape. Broker resources are
INVALID_REQUEST, per resource (no dynamic broker configs). IncrementalAlterConfigs shares
`answer`."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import alter_configs as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.admin import (
    ALTER_CONFIGS,
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResponse,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import ALTER_CONFIGS as ALTER_CONFIGS_KEY


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    resources = [
        AlterConfigsResource(
            r.resource_type, r.resource_name, [AlterableConfig(c.name, c.value) for c in r.configs]
        )
        for r in req.resources
    ]
    native_req = AlterConfigsRequest(resources, bool(req.validate_only), incremental=False)
    result = native.handle(ctx, as_native(ALTER_CONFIGS, native_req, request), session)
    version = request.header.api_version
    return then(result, lambda r: answer(ALTER_CONFIGS_KEY, version, r))


def answer(api_key: int, version: int, resp: AlterConfigsResponse) -> Any:
    """The Kafka response of AlterConfigs or IncrementalAlterConfigs (the same fields)."""
    cls = response_class(api_key, version)
    result_cls = nested(cls, "AlterConfigsResourceResponse")
    responses = tuple(
        make(
            result_cls,
            error_code=r.error_code,
            error_message=r.error_message,
            resource_type=r.resource_type,
            resource_name=r.resource_name,
        )
        for r in resp.results
    )
    return make(cls, throttle_time=0, responses=responses)
