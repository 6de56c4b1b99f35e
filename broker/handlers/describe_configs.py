"""DescribeConfigs: a topic's effective configs (broker defaults merged with its ZooKeeper
overrides, `is_default` telling which is which), or this broker's own settings (read-only).
`config_names` None asks for every config.

Names and sources are Kafka's, so Kafka tools read them as they read Kafka's: a topic's value
comes from its override (TOPIC_CONFIG), the broker's [topic_defaults] (STATIC_BROKER_CONFIG)
or the built-in default (DEFAULT_CONFIG). A broker's settings are listed under Kafka's broker
config names where Kafka has the setting (`num.partitions`, `message.max.bytes` for the
topic default `max.message.bytes`, ...), else as the setting's name with dots for underscores;
set in its config file means STATIC_BROKER_CONFIG, else DEFAULT_CONFIG. Types are Kafka's
where it has the config, else told from the Python type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from broker.config import BrokerConfig
from broker.context import BrokerContext
from broker.log.config import CONTROLLER_BOOL_CONFIGS, LogConfig
from protocol.api.admin import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    SOURCE_TOPIC_CONFIG,
    TYPE_BOOLEAN,
    TYPE_INT,
    TYPE_LONG,
    TYPE_STRING,
    TYPE_UNKNOWN,
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


# Topic config -> (Kafka's broker config for its default, Kafka's type).
TOPIC_CONFIGS: dict[str, tuple[str, int]] = {
    "segment.bytes": ("log.segment.bytes", TYPE_INT),
    "segment.ms": ("log.roll.ms", TYPE_LONG),
    "index.interval.bytes": ("log.index.interval.bytes", TYPE_INT),
    "segment.index.bytes": ("log.index.size.max.bytes", TYPE_INT),
    "flush.messages": ("log.flush.interval.messages", TYPE_LONG),
    "flush.ms": ("log.flush.interval.ms", TYPE_LONG),
    "retention.ms": ("log.retention.ms", TYPE_LONG),
    "retention.bytes": ("log.retention.bytes", TYPE_LONG),
    "max.message.bytes": ("message.max.bytes", TYPE_INT),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms", TYPE_LONG),
    "min.insync.replicas": ("min.insync.replicas", TYPE_INT),
    "unclean.leader.election.enable": ("unclean.leader.election.enable", TYPE_BOOLEAN),
}
UNCLEAN = "unclean.leader.election.enable"
assert set(TOPIC_CONFIGS) == {*LogConfig().to_properties(), *CONTROLLER_BOOL_CONFIGS}

# BrokerConfig field -> Kafka's broker config name, where Kafka has that setting.
BROKER_NAMES: dict[str, str] = {
    "broker_id": "broker.id",
    "log_dir": "log.dir",
    "host": "host.name",
    "zookeeper": "zookeeper.connect",
    "zookeeper_connect_timeout_ms": "zookeeper.connection.timeout.ms",
}  # the others are Kafka's already with dots for underscores, or odradek's own
LONG_SETTINGS = frozenset(
    {"connections.max.idle.ms", "log.retention.check.interval.ms", "replica.lag.time.max.ms",
     "controlled.shutdown.retry.backoff.ms", "leader.imbalance.check.interval.seconds"}
)  # fmt: skip


def _type_of(value: object, name: str) -> int:
    if isinstance(value, bool):
        return TYPE_BOOLEAN
    if isinstance(value, int):
        return TYPE_LONG if name in LONG_SETTINGS else TYPE_INT
    if isinstance(value, str | Path):
        return TYPE_STRING
    return TYPE_UNKNOWN


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _setting_text(value: object) -> str | None:
    """A broker setting as Kafka shows it: an empty string (no listener, ...) is null."""
    return None if value == "" else _text(value)


async def _topic_entries(ctx: BrokerContext, topic: str) -> list[ConfigEntry]:
    if not ctx.metadata.has_topic(topic):
        raise UnknownTopicOrPartitionError(f"topic {topic} does not exist")
    overrides: Mapping[str, str] = await ctx.topics.read_topic_config(topic)
    defaults = ctx.replicas.default_log_config.to_properties()
    defaults[UNCLEAN] = _text(ctx.config.unclean_leader_election_enable)
    by_broker = _set_in_file(ctx.config)
    values = {**defaults, **overrides}
    entries = []
    for name in sorted(values):
        if name in overrides:
            source = SOURCE_TOPIC_CONFIG
        elif name in by_broker:
            source = SOURCE_STATIC_BROKER_CONFIG
        else:
            source = SOURCE_DEFAULT_CONFIG
        kind = TOPIC_CONFIGS.get(name, (name, TYPE_UNKNOWN))[1]
        entries.append(ConfigEntry(name, values[name], False, name not in overrides, source, kind))
    return entries


def _set_in_file(config: BrokerConfig) -> set[str]:
    """The topic configs whose default the broker's config sets."""
    names = set(config.topic_defaults)
    if "fsync" in names:
        names.add("flush.messages")
    if config.unclean_leader_election_enable != _FIELD_DEFAULTS["unclean_leader_election_enable"]:
        names.add(UNCLEAN)
    return names


def _broker_entries(config: BrokerConfig, name: str) -> list[ConfigEntry]:
    if name not in ("", str(config.broker_id)):
        raise InvalidRequestError(f"this is broker {config.broker_id}, not {name}")
    entries = []
    for field, default in _FIELD_DEFAULTS.items():
        value = getattr(config, field)
        kafka_name = BROKER_NAMES.get(field, field.replace("_", "."))
        entries.append(_broker_entry(kafka_name, _setting_text(value), value == default,
                                     _type_of(value, kafka_name)))  # fmt: skip
    by_file = _set_in_file(config)
    for topic_name, value in config.default_log_config().to_properties().items():
        kafka_name, kind = TOPIC_CONFIGS[topic_name]
        entries.append(_broker_entry(kafka_name, value, topic_name not in by_file, kind))
    return sorted(entries, key=lambda e: e.name)


def _broker_entry(name: str, value: str | None, is_default: bool, kind: int) -> ConfigEntry:
    source = SOURCE_DEFAULT_CONFIG if is_default else SOURCE_STATIC_BROKER_CONFIG
    return ConfigEntry(name, value, True, is_default, source, kind)


_NO_DEFAULT = object()  # broker_id, log_dir: always set, never a default
# BrokerConfig field -> its built-in default.
_FIELD_DEFAULTS: dict[str, object] = {
    f.name: (f.default if f.default is not dataclasses.MISSING else _NO_DEFAULT)
    for f in dataclasses.fields(BrokerConfig)
    if f.name != "topic_defaults"
}
