"""The config entries DescribeConfigs answers (pure functions of the broker's config and a
topic's overrides), which CreateTopics (Kafka v5+) answers too for a new topic.

A topic's configs are the registry's rows in effect (protocol/topic_config.py), answered as
Kafka answers them. A value comes from the topic's override (DYNAMIC_TOPIC_CONFIG, 1), else
from the broker's config file, where its `[topic_defaults]` sets it (STATIC_BROKER_CONFIG, 4),
else it is the built-in default (DEFAULT_CONFIG, 5). With `include_synonyms` each entry lists
those places in that order, under their own names (the topic config's name for the override,
the broker setting's, e.g. `log.cleanup.policy`, for the other two). Types and docs are the
registry's; no topic config is sensitive; a topic config is never read-only. `is_default` (odradek's
own field) is true where the topic has no override of its own.

With the dynamic broker configs (broker/dynamic_config.py) a topic default may also come from
this broker's dynamic config (DYNAMIC_BROKER_CONFIG, 2) or the cluster default
(DYNAMIC_DEFAULT_BROKER_CONFIG, 3), between the override and the file, as Kafka lists them.

A broker's settings are listed under Kafka's broker config names where Kafka has the setting
(`num.partitions`, ...), else as the setting's name with dots for underscores; its topic
defaults under their broker names (`log.cleanup.policy`, `message.max.bytes`, ...), and its
listeners' own ssl.* settings as `listener.name.<l>.ssl.*`. Each value is the first of: the
broker's dynamic config, the cluster default, its config file or flags (or differing from the
default: STATIC_BROKER_CONFIG), the built-in default (DEFAULT_CONFIG). A config that can change
live is not read-only; the others are. The "" resource (the cluster default) lists only what the
cluster default sets, as Kafka does. A secret (sasl.jaas.config, ssl.*.password,
ssl.keystore.key) is answered as Kafka answers a PASSWORD config: is_sensitive, with a null
value (its synonyms too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from broker import dynamic_config as dynamic
from broker.config import LISTENER_PREFIX, BrokerConfig
from protocol.api.admin import (
    SOURCE_DEFAULT_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    SOURCE_TOPIC_CONFIG,
    TYPE_BOOLEAN,
    TYPE_INT,
    TYPE_LIST,
    TYPE_LONG,
    TYPE_PASSWORD,
    TYPE_STRING,
    TYPE_UNKNOWN,
    ConfigEntry,
    ConfigSynonym,
)
from protocol.errors import InvalidRequestError, OdradekError
from protocol.topic_config import CONTROLLER, IN_EFFECT, TOPIC_CONFIGS, TopicConfigDef

UNCLEAN = "unclean.leader.election.enable"


def topic_entries(
    config: BrokerConfig,
    overrides: Mapping[str, str],
    synonyms: bool,
    cluster_default: Mapping[str, str] | None = None,
    per_broker: Mapping[str, str] | None = None,
) -> list[ConfigEntry]:
    """A topic's entries (pure): every config in effect, plus any override the registry does
    not know (written before it, e.g. odradek's `fsync`), shown as stored. `config` is the
    broker's static config; `cluster_default` and `per_broker` its dynamic layers (Kafka
    names, broker/dynamic_config.py), which come between the override and the file."""
    broker_values = _broker_topic_values(config)
    in_file = set_in_file(config)
    entries = []
    for name in sorted({*IN_EFFECT, *overrides}):
        row = TOPIC_CONFIGS.get(name)
        found: list[tuple[str, str | None, int]] = []  # (name, value, source): first wins
        if name in overrides:
            found.append((name, overrides[name], SOURCE_TOPIC_CONFIG))
        if row is not None:
            broker_name = row.broker_name or name
            static = broker_values[name] if name in in_file else None
            layers = dynamic.sources(broker_name, static, row.default, name in in_file,
                                     cluster_default or {}, per_broker or {})  # fmt: skip
            if broker_name not in dynamic.TOPIC_DEFAULTS:  # the controller's: file or default
                layers = [f for f in layers if f[1] >= SOURCE_STATIC_BROKER_CONFIG]
            found += [(broker_name, value, source) for value, source in layers]
        _, value, source = found[0]
        entries.append(ConfigEntry(
            name, value, False, source != SOURCE_TOPIC_CONFIG, source,
            row.type_code if row is not None else TYPE_UNKNOWN, False,
            [ConfigSynonym(*f) for f in found] if synonyms else [],
            row.doc if row is not None else None,
        ))  # fmt: skip
    return entries


def _broker_topic_values(config: BrokerConfig) -> dict[str, str]:
    """{topic config: the value this broker gives topics that do not override it}."""
    values = config.default_log_config().to_properties()
    values[UNCLEAN] = _text(config.unclean_leader_election_enable)
    return values


def set_in_file(config: BrokerConfig) -> set[str]:
    """The topic configs whose default the broker's config sets."""
    names = {n for n in config.topic_defaults if TOPIC_CONFIGS.get(n, None) is not None}
    if "fsync" in config.topic_defaults:
        names.add("flush.messages")
    field = "unclean_leader_election_enable"
    if field in config.explicit or getattr(config, field) != _FIELD_DEFAULTS[field]:
        names.add(UNCLEAN)
    return names


LONG_SETTINGS = frozenset(
    {"connections.max.idle.ms", "log.retention.check.interval.ms", "replica.lag.time.max.ms",
     "controlled.shutdown.retry.backoff.ms", "leader.imbalance.check.interval.seconds"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Row:
    """A broker config as its file and the built-in defaults give it."""

    static: str | None  # the file's value (None: not in the file, or no text)
    default: str | None
    in_file: bool
    kind: int
    doc: str | None = None
    sensitive: bool = False


def broker_entries(
    config: BrokerConfig,
    name: str,
    synonyms: bool,
    cluster_default: Mapping[str, str] | None = None,
    per_broker: Mapping[str, str] | None = None,
) -> list[ConfigEntry]:
    """The broker resource `name` (pure): this broker's ("<id>") settings, then the topic
    defaults it gives, by Kafka's names, each from the first of its dynamic config, the
    cluster default, its file and the built-in default that sets it; or, for "" (the cluster
    default, as Kafka answers it), only the configs the cluster default sets. `config` is
    the static config; a config that can change live is not read-only."""
    if name not in ("", str(config.broker_id)):
        raise InvalidRequestError(f"this is broker {config.broker_id}, not {name}")
    cluster = dict(cluster_default or {})
    mine = None if name == "" else dict(per_broker or {})
    rows = _rows(config)
    names = set(cluster) if mine is None else {*rows, *cluster, *mine}
    entries = []
    for kafka_name in sorted(names):
        row = rows.get(kafka_name) or _Row(None, None, False, TYPE_STRING,
                                            sensitive=dynamic.is_secret(kafka_name))  # fmt: skip
        found = dynamic.sources(kafka_name, row.static, row.default, row.in_file, cluster, mine)
        if row.sensitive:  # as Kafka's PASSWORD configs: flagged, never shown
            found = [(None, source) for _, source in found]
        value, source = found[0]
        try:
            dynamic.kind_of(kafka_name, mine is not None)
            read_only = False
        except OdradekError:
            read_only = True
        entries.append(ConfigEntry(
            kafka_name, value, read_only, source == SOURCE_DEFAULT_CONFIG, source,
            TYPE_PASSWORD if row.sensitive else row.kind, row.sensitive,
            [ConfigSynonym(kafka_name, v, s) for v, s in found] if synonyms else [], row.doc,
        ))  # fmt: skip
    return entries


def _rows(config: BrokerConfig) -> dict[str, _Row]:
    """Every broker setting and topic default by Kafka's name, as `config` (static) gives it."""
    rows = {}
    for field, default in _FIELD_DEFAULTS.items():
        value = getattr(config, field)
        kafka_name = dynamic.BROKER_NAMES.get(field, field.replace("_", "."))
        static = field in config.explicit or value != default
        shown_default = None if default is _NO_DEFAULT else _setting_text(default)
        sensitive = field in SENSITIVE_SETTINGS
        rows[kafka_name] = _Row(_setting_text(value) if static else None, shown_default, static,
                                _type_of(value, kafka_name), None, sensitive)  # fmt: skip
    in_file = set_in_file(config)
    values = _broker_topic_values(config)
    for topic_name in IN_EFFECT:
        row = TOPIC_CONFIGS[topic_name]
        if row.broker_name is None or row.reader == CONTROLLER:  # the controller's: above
            continue
        static = topic_name in in_file
        rows[row.broker_name] = _Row(values[topic_name] if static else None, row.default,
                                     static, row.type_code, _topic_default_doc(row))  # fmt: skip
    for listener, own in config.listener_settings.items():
        for field, value in own.items():
            if field.startswith("ssl_"):
                kafka_name = f"{LISTENER_PREFIX}{listener.lower()}.{field.replace('_', '.')}"
                rows[kafka_name] = _Row(value, None, True, TYPE_STRING,
                                        sensitive=dynamic.is_secret(kafka_name))  # fmt: skip
    return rows


def _topic_default_doc(row: TopicConfigDef) -> str:
    return f"The default of topic config {row.name}: {row.doc}"


def _type_of(value: object, name: str) -> int:
    if isinstance(value, bool):
        return TYPE_BOOLEAN
    if isinstance(value, int):
        return TYPE_LONG if name in LONG_SETTINGS else TYPE_INT
    if isinstance(value, str | Path):
        return TYPE_STRING
    if isinstance(value, tuple):  # log.dirs
        return TYPE_LIST
    return TYPE_UNKNOWN


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):  # log.dirs, as Kafka shows a list
        return ",".join(map(str, value))
    return str(value)


def _setting_text(value: object) -> str | None:
    """A broker setting as Kafka shows it: an empty string (no listener, ...) is null."""
    return None if value in ("", ()) else _text(value)


_NO_DEFAULT = object()  # broker_id, log_dir: always set, never a default
# Settings holding a secret (Kafka's PASSWORD type: sasl.jaas.config, the ssl passwords and
# inline keys): described with a null value and is_sensitive, as Kafka describes them.
# BrokerConfig keeps a secret out of its repr (repr=False), which marks it here too.
SENSITIVE_SETTINGS = frozenset(
    f.name
    for f in dataclasses.fields(BrokerConfig)
    if not f.repr or f.name.endswith("_password") or f.name == "ssl_keystore_key"
)
# BrokerConfig field -> its built-in default.
_FIELD_DEFAULTS: dict[str, object] = {
    f.name: (f.default if f.default is not dataclasses.MISSING else _NO_DEFAULT)
    for f in dataclasses.fields(BrokerConfig)
    if f.name not in ("topic_defaults", "listener_settings", "explicit")
}
