"""The Kafka door's codecs of the config APIs (see broker/codecs/kafka/__init__.py).

Version differences that are wire shape stay here: DescribeConfigs v3+ carry
`include_documentation` in the request and each entry's type and documentation in the answer
(v1-v2 have neither; Kafka's v0, with is_default instead of a source, is not served).
AlterConfigs (33) replaces a topic's whole override set; IncrementalAlterConfigs (44) carries
each config's operation; both ask the same operation and answer the same fields.
ListConfigResources (74): v0 (ListClientMetricsResources) has no resource types and answers
none; v1 names the types wanted and answers each resource's type.
"""

from __future__ import annotations

from typing import Any

from broker.codecs import Codec
from broker.operations import alter_configs, describe_configs, list_config_resources
from protocol.api.admin import ConfigEntry
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, nested, response_class

# ----- DescribeConfigs (32) -------------------------------------------------------------------


def _describe_in(request: KafkaRequest) -> describe_configs.DescribeConfigs:
    req = request.body
    resources = tuple(
        describe_configs.ConfigResource(
            r.resource_type, r.resource_name,
            None if r.configuration_keys is None else tuple(r.configuration_keys),
        )
        for r in req.resources
    )  # fmt: skip
    return describe_configs.DescribeConfigs(
        resources, bool(req.include_synonyms),
        bool(getattr(req, "include_documentation", False)),  # v3+
    )  # fmt: skip


def _describe_out(request: KafkaRequest, result: describe_configs.DescribeConfigsResult) -> Any:
    cls = response_class(v.DESCRIBE_CONFIGS, request.header.api_version)
    result_cls = nested(cls, "DescribeConfigsResult")
    return make(cls, throttle_time=0, results=tuple(
        make(result_cls, error_code=r.error_code, error_message=r.error_message,
             resource_type=r.resource_type, resource_name=r.resource_name,
             configs=tuple(_entry(cls, e) for e in r.configs))
        for r in result.results
    ))  # fmt: skip


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


DESCRIBE_CONFIGS = Codec(_describe_in, _describe_out)

# ----- AlterConfigs (33) and IncrementalAlterConfigs (44) -------------------------------------


def _alter_in(request: KafkaRequest) -> alter_configs.AlterConfigs:
    req = request.body
    resources = tuple(
        alter_configs.ConfigResource(
            r.resource_type, r.resource_name,
            tuple(alter_configs.ConfigChange(c.name, c.value) for c in r.configs),
        )
        for r in req.resources
    )  # fmt: skip
    return alter_configs.AlterConfigs(resources, bool(req.validate_only), incremental=False)


def _incremental_in(request: KafkaRequest) -> alter_configs.AlterConfigs:
    req = request.body
    resources = tuple(
        alter_configs.ConfigResource(
            r.resource_type, r.resource_name,
            tuple(alter_configs.ConfigChange(c.name, c.value, c.config_operation)
                  for c in r.configs),
        )
        for r in req.resources
    )  # fmt: skip
    return alter_configs.AlterConfigs(resources, bool(req.validate_only), incremental=True)


def _alter_out(request: KafkaRequest, result: alter_configs.AlterConfigsResult) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    result_cls = nested(cls, "AlterConfigsResourceResponse")
    return make(cls, throttle_time=0, responses=tuple(
        make(result_cls, error_code=r.error_code, error_message=r.error_message,
             resource_type=r.resource_type, resource_name=r.resource_name)
        for r in result.results
    ))  # fmt: skip


ALTER_CONFIGS = Codec(_alter_in, _alter_out)
INCREMENTAL_ALTER_CONFIGS = Codec(_incremental_in, _alter_out)

# ----- ListConfigResources (74) ---------------------------------------------------------------


def _list_in(request: KafkaRequest) -> list_config_resources.ListConfigResources:
    if request.header.api_version == 0:
        return list_config_resources.ListConfigResources(client_metrics_only=True)
    types = tuple(int(t) for t in request.body.resource_types)
    return list_config_resources.ListConfigResources(types)


def _list_out(
    request: KafkaRequest, result: list_config_resources.ListConfigResourcesResult
) -> Any:
    cls = response_class(v.LIST_CONFIG_RESOURCES, request.header.api_version)
    resource_cls = nested(cls, "ConfigResource")
    return make(cls, throttle_time=0, error_code=result.error_code, config_resources=tuple(
        make(resource_cls, resource_name=name, resource_type=kind)
        for name, kind in result.resources
    ))  # fmt: skip


LIST_CONFIG_RESOURCES = Codec(_list_in, _list_out)
