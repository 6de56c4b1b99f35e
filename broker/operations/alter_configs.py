"""AlterConfigs and IncrementalAlterConfigs: change topics' config overrides and the dynamic
broker configs. One operation serves both of Kafka's APIs (33 and 44; the table's two rows
name this `run`): `incremental` says which, as the native door's AlterConfigs carries either
(protocol/api/admin.py).

Per resource, in the order asked, as Kafka's ZooKeeper-era brokers: a resource named twice in
one request is INVALID_REQUEST, both times (Kafka's rule); then AlterConfigs on the cluster for
a broker resource (CLUSTER_AUTHORIZATION_FAILED), on the topic for a topic resource
(TOPIC_AUTHORIZATION_FAILED). A broker resource names this broker (its dynamic configs,
/config/brokers/<id>) or is "" (the cluster default, /config/brokers/<default>), else it is
INVALID_REQUEST, as is any other resource type: see `_alter_broker`. A topic that does not
exist is UNKNOWN_TOPIC_OR_PARTITION. A topic's new override set is
`altered_config(current, changes, incremental, defaults)` (pure: INVALID_REQUEST for a
malformed change, INVALID_CONFIG for an unknown or refused config), then checked whole by
LogConfig (INVALID_CONFIG on a bad value, or a refused config with its reason). APPEND and
SUBTRACT take only LIST configs (protocol/topic_config.py: `cleanup.policy`): they add items
missing from, or remove items from, the topic's value (its override, else the broker's
default), as Kafka's ConfigAdminManager does. Unless `validate_only`, it is written to
/config/topics/<topic> with a change notification (coordinator/cluster/config_changes.py), and
every broker applies it to its logs of that topic.

A group resource (KIP-848's group configs) is broker/group_configs.py's, authorized on the
group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from broker import dynamic_config as dynamic
from broker import group_configs
from broker.config import BrokerConfig
from broker.context import BrokerContext
from broker.dynamic_apply import check_listener_tls
from broker.log.config import LogConfig
from broker.password_encoder import seal, unseal
from broker.security import rules
from broker.session import Session
from coordinator.cluster.zk_paths import DEFAULT_BROKER
from protocol.api.admin import (
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
)
from protocol.errors import (
    InvalidConfigError,
    InvalidRequestError,
    OdradekError,
    UnknownTopicOrPartitionError,
)
from protocol.topic_config import LIST_CONFIGS, lookup

log = logging.getLogger("odradek.broker.admin")
_OP_NAMES = {OP_APPEND: "append", OP_SUBTRACT: "subtract"}


@dataclass(frozen=True, slots=True)
class ConfigChange:
    name: str
    value: str | None  # None: left out of a whole-set replace; DELETE needs none
    op: int = OP_SET  # incremental only: OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT


@dataclass(frozen=True, slots=True)
class ConfigResource:
    resource_type: int  # RESOURCE_TOPIC (2) or RESOURCE_BROKER (4)
    resource_name: str
    changes: tuple[ConfigChange, ...]


@dataclass(frozen=True, slots=True)
class AlterConfigs:
    resources: tuple[ConfigResource, ...]
    validate_only: bool = False
    incremental: bool = False  # False: the changes listed replace the whole override set


@dataclass(frozen=True, slots=True)
class Altered:
    resource_type: int
    resource_name: str
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlterConfigsResult:
    results: tuple[Altered, ...]  # in the order asked


async def run(ctx: BrokerContext, session: Session, req: AlterConfigs) -> AlterConfigsResult:
    api = "IncrementalAlterConfigs" if req.incremental else "AlterConfigs"
    named = Counter((r.resource_type, r.resource_name) for r in req.resources)
    results = []
    for res in req.resources:
        try:
            if named[(res.resource_type, res.resource_name)] > 1:
                raise InvalidRequestError("duplicate resource in request")
            rules.check_config_resource(ctx, session, rules.ALTER_CONFIGS, res.resource_type,
                                        res.resource_name, api)  # fmt: skip
            await _alter(ctx, res, req.incremental, req.validate_only)
        except OdradekError as exc:
            results.append(Altered(res.resource_type, res.resource_name, exc.code, exc.message))
            continue
        results.append(Altered(res.resource_type, res.resource_name, 0))
    return AlterConfigsResult(tuple(results))


async def _alter(
    ctx: BrokerContext, res: ConfigResource, incremental: bool, validate_only: bool
) -> None:
    if res.resource_type == RESOURCE_GROUP:  # KIP-848 group configs
        changes = [(c.name, c.value, c.op) for c in res.changes]
        await group_configs.alter(ctx, res.resource_name, changes, incremental, validate_only)
        return
    if res.resource_type == RESOURCE_BROKER:
        return await _alter_broker(ctx, res, incremental, validate_only)
    if res.resource_type != RESOURCE_TOPIC:
        raise InvalidRequestError(f"resource type {res.resource_type} is not supported")
    topic = res.resource_name
    if not ctx.metadata.has_topic(topic):
        raise UnknownTopicOrPartitionError(f"topic {topic} does not exist")
    current = await ctx.topics.read_topic_config(topic)
    defaults = ctx.replicas.default_log_config
    new = altered_config(current, res.changes, incremental, defaults.to_properties())
    try:
        LogConfig.from_properties(new, base=defaults)
    except OdradekError as exc:
        raise InvalidConfigError(exc.message) from None
    if validate_only:
        return
    await ctx.topics.write_topic_config(topic, new)
    log.info("topic %s: config overrides now %s", topic, new)


async def _alter_broker(
    ctx: BrokerContext, res: ConfigResource, incremental: bool, validate_only: bool
) -> None:
    """A broker's (its id) or the cluster default's ("") dynamic configs: the new set's every
    name must change live and the settings it gives must hold (broker/dynamic_config.py);
    a listener's new keystore or truststore must load; a password is written encrypted with
    password.encoder.secret (broker/password_encoder.py). Written to /config/brokers/<entity>,
    every broker it concerns applies it (broker/dynamic_apply.py)."""
    me = str(ctx.config.broker_id)
    if res.resource_name not in ("", me):
        raise InvalidRequestError(f"Unexpected broker id, expected {me} or empty string, but "
                                  f"received {res.resource_name}")  # fmt: skip
    per_broker = res.resource_name == me
    entity = me if per_broker else DEFAULT_BROKER
    secret = ctx.static_config.password_encoder_secret
    layers = {e: unseal(await ctx.broker_configs.read_broker_config(e), secret)[0]
              for e in (DEFAULT_BROKER, me)}  # fmt: skip
    new = _altered_broker_config(layers[entity], res.changes, incremental, ctx.config)
    dynamic.check_names(new, per_broker)
    stored = seal(new, secret)  # its passwords encrypted, or refused without a secret
    layers[entity] = new
    config = dynamic.effective(ctx.static_config, layers[DEFAULT_BROKER], layers[me])
    check_listener_tls(config, dynamic.tls_listeners(new))
    if validate_only:
        return
    await ctx.broker_configs.write_broker_config(entity, stored)
    log.info("broker config %s: dynamic configs now %s", entity, sorted(new))


def _altered_broker_config(
    current: Mapping[str, str],
    changes: Sequence[ConfigChange],
    incremental: bool,
    in_effect: BrokerConfig,
) -> dict[str, str]:
    """`altered_config` on a broker's dynamic set: its topic defaults go by their topic config
    names there (so APPEND / SUBTRACT work on `log.cleanup.policy`, from the value in effect),
    and come back under their broker names."""
    to_topic = dynamic.TOPIC_DEFAULTS
    to_broker = {topic: broker for broker, topic in to_topic.items()}
    renamed = tuple(dataclasses.replace(c, name=to_topic.get(c.name, c.name)) for c in changes)
    out = altered_config({to_topic.get(k, k): v for k, v in current.items()}, renamed,
                         incremental, in_effect.default_log_config().to_properties())  # fmt: skip
    return {to_broker.get(k, k): v for k, v in out.items()}


def altered_config(
    current: Mapping[str, str],
    changes: Sequence[ConfigChange],
    incremental: bool,
    defaults: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The topic's new override set: `changes` alone (a whole-set replace, null values left
    out), or `current` with each change's op applied in order; `defaults` (the broker's topic
    defaults) is what APPEND and SUBTRACT start from where `current` has no override."""
    names = Counter(c.name for c in changes)
    if any(n > 1 for n in names.values()):
        raise InvalidRequestError("error due to duplicate config keys")
    if not incremental:
        return {c.name: c.value for c in changes if c.value is not None}
    out = dict(current)
    for c in changes:
        if c.op == OP_SET:
            if c.value is None:
                raise InvalidRequestError(f"SET {c.name} needs a value, not null")
            out[c.name] = c.value
        elif c.op == OP_DELETE:
            out.pop(c.name, None)
        elif c.op in _OP_NAMES:
            lookup(c.name)  # unknown or refused: InvalidConfigError
            if c.name not in LIST_CONFIGS:
                raise InvalidRequestError(
                    f"config value {_OP_NAMES[c.op]} is not allowed for config key: {c.name}"
                )
            start = out.get(c.name, (defaults or {}).get(c.name, ""))
            out[c.name] = _list_op(c.op, start, c.value or "")
        else:
            raise InvalidRequestError(f"config operation {c.op} for {c.name} is unknown")
    return out


def _list_op(op: int, current: str, value: str) -> str:
    """APPEND: `current`'s items then those of `value` it lacks; SUBTRACT: `current`'s items
    but those of `value` (comma-separated lists, items trimmed)."""
    have = [i.strip() for i in current.split(",") if i.strip()]
    given = [i.strip() for i in value.split(",") if i.strip()]
    if op == OP_APPEND:
        return ",".join(have + [i for i in given if i not in have])
    return ",".join(i for i in have if i not in given)
