"""IncrementalAlterConfigs (44), v0-v1: the native AlterConfigs applying each config's
operation (SET 0, DELETE 1; APPEND 2 and SUBTRACT 3 only on list configs, `cleanup.policy`,
else INVALID_REQUEST) to the topic's overrides, answered in Kafka's shape."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import alter_configs as native
from broker.handlers.kafka._adapt import as_native
from broker.handlers.kafka.alter_configs import answer
from broker.session import Session
from protocol.api.admin import (
    ALTER_CONFIGS,
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from protocol.kafka.codec import KafkaRequest
from protocol.kafka.versions import INCREMENTAL_ALTER_CONFIGS


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    resources = [
        AlterConfigsResource(
            r.resource_type,
            r.resource_name,
            [AlterableConfig(c.name, c.value, c.config_operation) for c in r.configs],
        )
        for r in req.resources
    ]
    native_req = AlterConfigsRequest(resources, bool(req.validate_only), incremental=True)
    result = native.handle(ctx, as_native(ALTER_CONFIGS, native_req, request), session)
    version = request.header.api_version
    return then(result, lambda r: answer(INCREMENTAL_ALTER_CONFIGS, version, r))
