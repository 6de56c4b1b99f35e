"""DescribeConfigs: a topic's effective configs (broker defaults merged with its ZooKeeper
overrides), or this broker's own settings (read-only). `config_names` None asks for every
config.

A topic's configs are the registry's rows in effect (protocol/topic_config.py), answered as
Kafka answers them. A value comes from the topic's override (DYNAMIC_TOPIC_CONFIG, 1), else
from the broker's config file, where its `[topic_defaults]` sets it (STATIC_BROKER_CONFIG, 4),
else it is the built-in default (DEFAULT_CONFIG, 5). With `include_synonyms` each entry lists
those places in that order, under their own names (the topic config's name for the override,
the broker setting's, e.g. `log.cleanup.policy`, for the other two). Types and docs are the
registry's; no topic config is sensitive; a topic config is never read-only. `is_default` (odradek's
own field) is true where the topic has no override of its own.

A broker's settings are listed under Kafka's broker config names where Kafka has the setting
(`num.partitions`, ...), else as the setting's name with dots for underscores; its topic
defaults under their broker names (`log.cleanup.policy`, `message.max.bytes`, ...). Given in
its config file or as a flag (or differing from the default) is STATIC_BROKER_CONFIG, else
DEFAULT_CONFIG; all read-only (odradek has no dynamic broker configs, so DYNAMIC_BROKER_CONFIG
is never answered). A secret (sasl.jaas.config, ssl.*.password, ssl.keystore.key) is answered
as Kafka answers a PASSWORD config: is_sensitive, with a null value.
"""

from __future__ import annotations

import dataclasses

from broker.config_entries import broker_entries, topic_entries
from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.admin import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from protocol.codec import Request
from protocol.errors import InvalidRequestError, OdradekError, UnknownTopicOrPartitionError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> DescribeConfigsResponse:
    req: DescribeConfigsRequest = request.body
    return DescribeConfigsResponse([await _describe(ctx, req, r, session) for r in req.resources])


async def _describe(
    ctx: BrokerContext, req: DescribeConfigsRequest, res: DescribeConfigsResource, session: Session
) -> DescribeConfigsResult:
    try:
        rules.check_config_resource(ctx, session, rules.DESCRIBE_CONFIGS, res.resource_type,
                                    res.resource_name, "DescribeConfigs")  # fmt: skip
        if res.resource_type == RESOURCE_TOPIC:
            if not ctx.metadata.has_topic(res.resource_name):
                raise UnknownTopicOrPartitionError(f"topic {res.resource_name} does not exist")
            overrides = await ctx.topics.read_topic_config(res.resource_name)
            entries = topic_entries(ctx.config, overrides, req.include_synonyms)
        elif res.resource_type == RESOURCE_BROKER:
            entries = broker_entries(ctx.config, res.resource_name, req.include_synonyms)
        else:
            raise InvalidRequestError(f"resource type {res.resource_type} is not supported")
    except OdradekError as exc:
        return DescribeConfigsResult(
            exc.code, exc.message, res.resource_type, res.resource_name, []
        )
    if res.config_names is not None:
        wanted = set(res.config_names)
        entries = [e for e in entries if e.name in wanted]
    if not req.include_documentation:
        entries = [dataclasses.replace(e, documentation=None) for e in entries]
    return DescribeConfigsResult(0, None, res.resource_type, res.resource_name, entries)
