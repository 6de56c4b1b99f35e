"""DescribeConfigs (32), v1-v4: the native DescribeConfigs, answered in Kafka's shape.

Topic (2) and broker (4) resources; config_source, read-only and sensitive flags, synonyms
(when include_synonyms), and config_type and documentation (v3+, documentation when
include_documentation) as the native entries give them (broker/handlers/describe_configs.py,
from the registry protocol/topic_config.py). A null or empty key list asks for every config.
"""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import describe_configs as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.admin import (
    DESCRIBE_CONFIGS,
    ConfigEntry,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    resources = [
        DescribeConfigsResource(
            r.resource_type,
            r.resource_name,
            list(r.configuration_keys) if r.configuration_keys else None,
        )
        for r in request.body.resources
    ]
    body = request.body
    native_req = DescribeConfigsRequest(
        resources,
        bool(body.include_synonyms),
        bool(getattr(body, "include_documentation", False)),  # v3+
    )
    result = native.handle(ctx, as_native(DESCRIBE_CONFIGS, native_req, request), session)
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: DescribeConfigsResponse) -> Any:
    cls = response_class(DESCRIBE_CONFIGS.key, version)
    result_cls = nested(cls, "DescribeConfigsResult")
    results = tuple(
        make(
            result_cls,
            error_code=r.error_code,
            error_message=r.error_message,
            resource_type=r.resource_type,
            resource_name=r.resource_name,
            configs=tuple(_entry(cls, e) for e in r.configs),
        )
        for r in resp.results
    )
    return make(cls, throttle_time=0, results=results)


def _entry(cls: Any, e: ConfigEntry) -> Any:
    synonym_cls = nested(cls, "DescribeConfigsSynonym")
    synonyms = tuple(
        make(synonym_cls, name=s.name, value=s.value, source=s.source) for s in e.synonyms
    )
    return make(
        nested(cls, "DescribeConfigsResourceResult"), name=e.name, value=e.value,
        read_only=e.read_only, config_source=e.source, is_sensitive=e.is_sensitive,
        synonyms=synonyms, config_type=e.config_type, documentation=e.documentation,
    )  # fmt: skip
