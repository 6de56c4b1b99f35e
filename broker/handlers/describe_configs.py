"""DescribeConfigs: a topic's effective configs (broker defaults merged with its ZooKeeper
overrides, `is_default` telling which is which), or this broker's own settings (read-only).
`config_names` None asks for every config."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from broker.config import BrokerConfig
from broker.context import BrokerContext
from protocol.api.admin import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    ConfigEntry,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from protocol.codec import Request
from protocol.errors import InvalidRequestError, OdradekError, UnknownTopicOrPartitionError


async def handle(ctx: BrokerContext, request: Request) -> DescribeConfigsResponse:
    req: DescribeConfigsRequest = request.body
    return DescribeConfigsResponse([await _describe(ctx, r) for r in req.resources])


async def _describe(ctx: BrokerContext, res: DescribeConfigsResource) -> DescribeConfigsResult:
    try:
        if res.resource_type == RESOURCE_TOPIC:
            entries = await _topic_entries(ctx, res.resource_name)
        elif res.resource_type == RESOURCE_BROKER:
            entries = _broker_entries(ctx.config, res.resource_name)
        else:
            raise InvalidRequestError(f"resource type {res.resource_type} is not supported")
    except OdradekError as exc:
        return DescribeConfigsResult(
            exc.code, exc.message, res.resource_type, res.resource_name, []
        )
    if res.config_names is not None:
        wanted = set(res.config_names)
        entries = [e for e in entries if e.name in wanted]
    return DescribeConfigsResult(0, None, res.resource_type, res.resource_name, entries)


async def _topic_entries(ctx: BrokerContext, topic: str) -> list[ConfigEntry]:
    if not ctx.metadata.has_topic(topic):
        raise UnknownTopicOrPartitionError(f"topic {topic} does not exist")
    overrides: Mapping[str, str] = await ctx.topics.read_topic_config(topic)
    values = ctx.replicas.default_log_config.to_properties()
    values.update(overrides)
    return [
        ConfigEntry(name, values[name], False, name not in overrides) for name in sorted(values)
    ]


def _broker_entries(config: BrokerConfig, name: str) -> list[ConfigEntry]:
    if name not in ("", str(config.broker_id)):
        raise InvalidRequestError(f"this is broker {config.broker_id}, not {name}")
    entries = []
    for f in dataclasses.fields(config):
        if f.name == "topic_defaults":
            continue
        value = getattr(config, f.name)
        is_default = f.default is not dataclasses.MISSING and value == f.default
        entries.append(ConfigEntry(f.name, str(value), True, is_default))
    return entries
