"""The native door's codecs of the config APIs (see broker/codecs/__init__.py).

The native AlterConfigs carries both of Kafka's alter APIs: its `incremental` flag says whether
the configs listed replace the topic's whole override set or are operations on it. Its
DescribeConfigs entries carry `is_default` (odradek's own field) with Kafka's source.
"""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import alter_configs, describe_configs
from protocol.api import admin
from protocol.codec import Request

# ----- DescribeConfigs ------------------------------------------------------------------------


def _describe_in(request: Request) -> describe_configs.DescribeConfigs:
    req: admin.DescribeConfigsRequest = request.body
    resources = tuple(
        describe_configs.ConfigResource(
            r.resource_type, r.resource_name,
            None if r.config_names is None else tuple(r.config_names),
        )
        for r in req.resources
    )  # fmt: skip
    return describe_configs.DescribeConfigs(
        resources, req.include_synonyms, req.include_documentation
    )


def _describe_out(
    request: Request, result: describe_configs.DescribeConfigsResult
) -> admin.DescribeConfigsResponse:
    return admin.DescribeConfigsResponse([
        admin.DescribeConfigsResult(r.error_code, r.error_message, r.resource_type,
                                    r.resource_name, list(r.configs))
        for r in result.results
    ])  # fmt: skip


DESCRIBE_CONFIGS = Codec(_describe_in, _describe_out)

# ----- AlterConfigs (whole set or incremental) ------------------------------------------------


def _alter_in(request: Request) -> alter_configs.AlterConfigs:
    req: admin.AlterConfigsRequest = request.body
    resources = tuple(
        alter_configs.ConfigResource(
            r.resource_type, r.resource_name,
            tuple(alter_configs.ConfigChange(c.name, c.value, c.op) for c in r.configs),
        )
        for r in req.resources
    )  # fmt: skip
    return alter_configs.AlterConfigs(resources, req.validate_only, req.incremental)


def _alter_out(
    request: Request, result: alter_configs.AlterConfigsResult
) -> admin.AlterConfigsResponse:
    return admin.AlterConfigsResponse([
        admin.AlterConfigsResult(r.error_code, r.error_message, r.resource_type, r.resource_name)
        for r in result.results
    ])  # fmt: skip


ALTER_CONFIGS = Codec(_alter_in, _alter_out)
