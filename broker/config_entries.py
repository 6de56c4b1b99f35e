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
from collections.abc import Mapping
from pathlib import Path

from broker.config import BrokerConfig
from protocol.api.admin import (
    SOURCE_DEFAULT_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    SOURCE_TOPIC_CONFIG,
    TYPE_BOOLEAN,
    TYPE_INT,
    TYPE_LONG,
    TYPE_PASSWORD,
    TYPE_STRING,
    TYPE_UNKNOWN,
    ConfigEntry,
    ConfigSynonym,
)
from protocol.errors import InvalidRequestError
from protocol.topic_config import CONTROLLER, IN_EFFECT, TOPIC_CONFIGS, TopicConfigDef

UNCLEAN = "unclean.leader.election.enable"


def topic_entries(
    config: BrokerConfig, overrides: Mapping[str, str], synonyms: bool
) -> list[ConfigEntry]:
    """A topic's entries (pure): every config in effect, plus any override the registry does
    not know (written before it, e.g. odradek's `fsync`), shown as stored."""
    broker_values = _broker_topic_values(config)
    in_file = set_in_file(config)
    entries = []
    for name in sorted({*IN_EFFECT, *overrides}):
        row = TOPIC_CONFIGS.get(name)
        found = []  # (name, value, source): where the value may come from, first wins
        if name in overrides:
            found.append((name, overrides[name], SOURCE_TOPIC_CONFIG))
        if row is not None:
            broker_name = row.broker_name or name
            if name in in_file:
                found.append((broker_name, broker_values[name], SOURCE_STATIC_BROKER_CONFIG))
            found.append((broker_name, row.default, SOURCE_DEFAULT_CONFIG))
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


def broker_entries(config: BrokerConfig, name: str, synonyms: bool) -> list[ConfigEntry]:
    """This broker's settings, then the topic defaults it gives, by Kafka's names (pure)."""
    if name not in ("", str(config.broker_id)):
        raise InvalidRequestError(f"this is broker {config.broker_id}, not {name}")
    entries = {}
    for field, default in _FIELD_DEFAULTS.items():
        value = getattr(config, field)
        kafka_name = BROKER_NAMES.get(field, field.replace("_", "."))
        static = field in config.explicit or value != default
        shown_default = None if default is _NO_DEFAULT else _setting_text(default)
        if field in SENSITIVE_SETTINGS:  # as Kafka's PASSWORD configs: flagged, never shown
            entries[kafka_name] = _broker_entry(kafka_name, None, None, static, TYPE_PASSWORD,
                                                None, synonyms, sensitive=True)  # fmt: skip
            continue
        entries[kafka_name] = _broker_entry(
            kafka_name,
            _setting_text(value),
            shown_default,
            static,
            _type_of(value, kafka_name),
            None,
            synonyms,
        )
    in_file = set_in_file(config)
    values = _broker_topic_values(config)
    for topic_name in IN_EFFECT:
        row = TOPIC_CONFIGS[topic_name]
        if row.broker_name is None or row.reader == CONTROLLER:  # the controller's: above
            continue
        entries[row.broker_name] = _broker_entry(
            row.broker_name, values[topic_name], row.default, topic_name in in_file,
            row.type_code, _topic_default_doc(row), synonyms,
        )  # fmt: skip
    return sorted(entries.values(), key=lambda e: e.name)


def _topic_default_doc(row: TopicConfigDef) -> str:
    return f"The default of topic config {row.name}: {row.doc}"


def _broker_entry(name: str, value: str | None, default: str | None, static: bool,
                  kind: int, doc: str | None, synonyms: bool,
                  sensitive: bool = False) -> ConfigEntry:  # fmt: skip
    source = SOURCE_STATIC_BROKER_CONFIG if static else SOURCE_DEFAULT_CONFIG
    found = [ConfigSynonym(name, value, SOURCE_STATIC_BROKER_CONFIG)] if static else []
    found.append(ConfigSynonym(name, default, SOURCE_DEFAULT_CONFIG))
    return ConfigEntry(name, value, True, not static, source, kind, sensitive,
                       found if synonyms else [], doc)  # fmt: skip


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
