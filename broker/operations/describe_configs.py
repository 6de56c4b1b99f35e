"""DescribeConfigs: a topic's effective configs (broker defaults merged with its ZooKeeper
overrides), or this broker's own settings, or the cluster default's dynamic configs (the ""
broker resource), per resource in the order asked. The dynamic broker configs are read from
ZooKeeper (/config/brokers/<id>, /config/brokers/<default>) on each request, so a describe
right after an alter shows it.

The entries are broker/config_entries.py's (pure: where each value comes from, its synonyms,
type, documentation and sensitivity). Per resource: DescribeConfigs on the cluster for a broker
resource (CLUSTER_AUTHORIZATION_FAILED), on the topic for a topic resource
(TOPIC_AUTHORIZATION_FAILED); a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION; a
broker resource naming another broker, or a resource type odradek has no configs for, is
INVALID_REQUEST. `config_names` None or empty asks for every config (Kafka's rule); synonyms
and documentation are answered only when asked.

A group resource (KIP-848's group configs) is broker/group_configs.py's, authorized on the
group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from broker import group_configs
from broker.config_entries import broker_entries, topic_entries
from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.cluster.zk_paths import DEFAULT_BROKER
from protocol.api.admin import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC, ConfigEntry
from protocol.errors import InvalidRequestError, OdradekError, UnknownTopicOrPartitionError

API = "DescribeConfigs"


@dataclass(frozen=True, slots=True)
class ConfigResource:
    resource_type: int  # RESOURCE_TOPIC (2) or RESOURCE_BROKER (4)
    resource_name: str
    config_names: tuple[str, ...] | None = None  # None or empty: every config


@dataclass(frozen=True, slots=True)
class DescribeConfigs:
    resources: tuple[ConfigResource, ...]
    include_synonyms: bool = False
    include_documentation: bool = False


@dataclass(frozen=True, slots=True)
class Described:
    resource_type: int
    resource_name: str
    error_code: int
    error_message: str | None = None
    configs: tuple[ConfigEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeConfigsResult:
    results: tuple[Described, ...]  # in the order asked


async def run(ctx: BrokerContext, session: Session, req: DescribeConfigs) -> DescribeConfigsResult:
    return DescribeConfigsResult(tuple([await _describe(ctx, session, req, r)
                                        for r in req.resources]))  # fmt: skip


async def _describe(
    ctx: BrokerContext, session: Session, req: DescribeConfigs, res: ConfigResource
) -> Described:
    try:
        rules.check_config_resource(ctx, session, rules.DESCRIBE_CONFIGS, res.resource_type,
                                    res.resource_name, API)  # fmt: skip
        entries = await _entries(ctx, res, req.include_synonyms)
    except OdradekError as exc:
        return Described(res.resource_type, res.resource_name, exc.code, exc.message)
    if res.config_names:
        wanted = set(res.config_names)
        entries = [e for e in entries if e.name in wanted]
    if not req.include_documentation:
        entries = [dataclasses.replace(e, documentation=None) for e in entries]
    return Described(res.resource_type, res.resource_name, 0, None, tuple(entries))


async def _entries(ctx: BrokerContext, res: ConfigResource, synonyms: bool) -> list[ConfigEntry]:
    mine = str(ctx.config.broker_id)
    if res.resource_type == RESOURCE_TOPIC:
        if not ctx.metadata.has_topic(res.resource_name):
            raise UnknownTopicOrPartitionError(f"topic {res.resource_name} does not exist")
        overrides = await ctx.topics.read_topic_config(res.resource_name)
        return topic_entries(ctx.static_config, overrides, synonyms, *await _dynamic_layers(ctx))
    if res.resource_type == RESOURCE_BROKER:
        layers = await _dynamic_layers(ctx) if res.resource_name in ("", mine) else ({}, {})
        return broker_entries(ctx.static_config, res.resource_name, synonyms, *layers)
    if res.resource_type == RESOURCE_GROUP:  # KIP-848 group configs
        return await group_configs.describe(ctx, res.resource_name, synonyms)
    raise InvalidRequestError(f"resource type {res.resource_type} is not supported")


async def _dynamic_layers(ctx: BrokerContext) -> tuple[dict[str, str], dict[str, str]]:
    """(cluster default, this broker's) dynamic configs, as ZooKeeper has them now."""
    return (await ctx.broker_configs.read_broker_config(DEFAULT_BROKER),
            await ctx.broker_configs.read_broker_config(str(ctx.config.broker_id)))  # fmt: skip
