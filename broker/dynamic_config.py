"""Dynamic broker configs, as Kafka's DynamicBrokerConfig keeps them in ZooKeeper mode (pure).

A broker's settings come from four places; the first that sets one wins (`effective`):

    per-broker dynamic    /config/brokers/<id>         DYNAMIC_BROKER_CONFIG (2)
    cluster default       /config/brokers/<default>    DYNAMIC_DEFAULT_BROKER_CONFIG (3)
    static                its config file or flags     STATIC_BROKER_CONFIG (4)
    built-in default                                   DEFAULT_CONFIG (5)

Both znodes hold Kafka names (`log.retention.ms`, `log.cleaner.threads`, ...). What may change
live (`kind_of`), each applied by broker/dynamic_apply.py without a restart:

    topic default   the broker name of a topic config in effect (`message.max.bytes`,
                    `log.retention.ms`, `log.segment.bytes`, `log.cleanup.policy`, ...): the
                    default every topic without its own override takes (Kafka's
                    DynamicLogConfig); it lands in BrokerConfig.topic_defaults
    setting         LIVE_SETTINGS: the log cleaner's (`log.cleaner.threads`, its buffer, I/O
                    rate and backoff), `max.connections` and the controller's
                    `unclean.leader.election.enable`; a BrokerConfig field
    listener TLS    `listener.name.<l>.ssl.<keystore or truststore setting>` (TLS_RELOADABLE):
                    the listener's TLS is rebuilt and new connections use it. Per broker only
                    (Kafka: "broker id must be specified"); unprefixed ssl.* are refused, as
                    Kafka refuses them ("only per-listener using the listener prefix")

Any other broker setting is refused with INVALID_REQUEST: "<name> cannot be updated
dynamically; it needs a broker restart"; a name that is no broker setting is INVALID_CONFIG; a
bad value is INVALID_CONFIG with BrokerConfig's own line (the whole effective config is built
and checked, `effective`). Secrets (`*.password`, `ssl.keystore.key`) are stored encrypted with
the broker's password.encoder.secret, as Kafka stores them (broker/password_encoder.py), and
described as Kafka describes a PASSWORD: is_sensitive, null value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from broker.config import LISTENER_PREFIX, BrokerConfig
from protocol.api.admin import (
    SOURCE_DEFAULT_CONFIG,
    SOURCE_DYNAMIC_BROKER_CONFIG,
    SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
)
from protocol.errors import InvalidConfigError, InvalidRequestError, OdradekError
from protocol.topic_config import CONTROLLER, IN_EFFECT, TOPIC_CONFIGS

TOPIC_DEFAULT, SETTING, LISTENER_TLS = "topic default", "setting", "listener TLS"

# BrokerConfig field -> Kafka's broker config name, where it is not the field with dots.
BROKER_NAMES: dict[str, str] = {
    "broker_id": "broker.id",
    "log_dir": "log.dir",
    "host": "host.name",
    "zookeeper": "zookeeper.connect",
    "zookeeper_connect_timeout_ms": "zookeeper.connection.timeout.ms",
}
_NOT_SETTINGS = ("topic_defaults", "listener_settings", "explicit")
# Kafka name -> BrokerConfig field, for every broker setting
FIELD_OF: dict[str, str] = {
    BROKER_NAMES.get(f.name, f.name.replace("_", ".")): f.name
    for f in dataclasses.fields(BrokerConfig)
    if f.name not in _NOT_SETTINGS
}
# the broker name of each topic config in effect whose default a broker gives -> the topic
# config (the controller's, unclean.leader.election.enable, is a live setting below)
TOPIC_DEFAULTS: dict[str, str] = {
    TOPIC_CONFIGS[n].broker_name or n: n
    for n in IN_EFFECT
    if TOPIC_CONFIGS[n].broker_name is not None and TOPIC_CONFIGS[n].reader != CONTROLLER
}
LIVE_SETTINGS = frozenset({
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms", "max.connections",
    "unclean.leader.election.enable",
})  # fmt: skip
TLS_RELOADABLE = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
})  # fmt: skip
SECRET_SUFFIXES = (".password", "ssl.keystore.key", "password.encoder.secret")


def is_secret(name: str) -> bool:
    return name.endswith(SECRET_SUFFIXES)


def kind_of(name: str, per_broker: bool) -> str:
    """TOPIC_DEFAULT, SETTING or LISTENER_TLS: how `name` changes live; else the error
    AlterConfigs answers (see the module docstring)."""
    if name in TOPIC_DEFAULTS:
        return TOPIC_DEFAULT
    if name in LIVE_SETTINGS:
        return SETTING
    if name.startswith(LISTENER_PREFIX):
        _, _, setting = name.removeprefix(LISTENER_PREFIX).partition(".")
        if setting in TLS_RELOADABLE:
            if not per_broker:
                raise InvalidRequestError(f"{name}: cannot be updated at the cluster default, "
                                          "a broker id must be specified")  # fmt: skip
            return LISTENER_TLS
        raise InvalidRequestError(f"{name} cannot be updated dynamically; it needs a broker "
                                  "restart")  # fmt: skip
    if name in TLS_RELOADABLE:
        raise InvalidRequestError(
            f"{name}: security configs can be updated dynamically only "
            f"per listener, with the prefix {LISTENER_PREFIX}<listener>."
        )
    if name in FIELD_OF or name in TOPIC_CONFIGS:
        raise InvalidRequestError(f"{name} cannot be updated dynamically; it needs a broker "
                                  "restart")  # fmt: skip
    raise InvalidConfigError(f"unknown broker config {name}")


def check_names(configs: Mapping[str, str], per_broker: bool) -> None:
    """Every name of a new per-broker (or cluster default) set may change live."""
    for name in configs:
        kind_of(name, per_broker)


def tls_listeners(configs: Mapping[str, str]) -> set[str]:
    """The listeners (upper case) whose TLS settings a dynamic set names."""
    out = set()
    for name in configs:
        listener, _, setting = name.removeprefix(LISTENER_PREFIX).partition(".")
        if name.startswith(LISTENER_PREFIX) and setting in TLS_RELOADABLE:
            out.add(listener.upper())
    return out


def effective(
    static: BrokerConfig, cluster_default: Mapping[str, str], per_broker: Mapping[str, str]
) -> BrokerConfig:
    """The broker's settings in effect: `static` with the cluster default's values over it,
    then this broker's own (pure). InvalidConfigError, in one line, on a value BrokerConfig
    refuses; names that cannot change live are skipped (written past AlterConfigs' checks)."""
    topic_defaults = dict(static.topic_defaults)
    listeners = {k: dict(v) for k, v in static.listener_settings.items()}
    fields: dict[str, Any] = {}
    for layer, is_broker in ((cluster_default, False), (per_broker, True)):
        for name, value in layer.items():
            try:
                kind = kind_of(name, is_broker)
            except OdradekError:
                continue
            if kind == TOPIC_DEFAULT:
                topic_defaults[TOPIC_DEFAULTS[name]] = value
            elif kind == SETTING:
                fields[FIELD_OF[name]] = _typed(name, value, getattr(static, FIELD_OF[name]))
            else:
                listener, _, setting = name.removeprefix(LISTENER_PREFIX).partition(".")
                listeners.setdefault(listener.upper(), {})[setting.replace(".", "_")] = value
    try:
        return dataclasses.replace(static, topic_defaults=topic_defaults,
                                   listener_settings=listeners, **fields)  # fmt: skip
    except OdradekError as exc:
        raise InvalidConfigError(exc.message) from None


def _typed(name: str, value: str, like: object) -> object:
    """`value` (a config's text) as the type of the setting's current value `like`."""
    if isinstance(like, bool):
        if value.lower() not in ("true", "false"):
            raise InvalidConfigError(f"{name} must be true or false, got {value!r}")
        return value.lower() == "true"
    if isinstance(like, int):
        try:
            return int(value)
        except ValueError:
            raise InvalidConfigError(f"{name} must be an integer, got {value!r}") from None
    return value


def sources(
    name: str,
    static_value: str | None,
    default_value: str | None,
    is_static: bool,
    cluster_default: Mapping[str, str],
    per_broker: Mapping[str, str] | None,
) -> list[tuple[str | None, int]]:
    """Where broker config `name`'s value may come from, the winner first: (value, source)
    for each place that sets it (pure). `per_broker` None: the cluster default resource,
    which has no per-broker layer."""
    found: list[tuple[str | None, int]] = []
    if per_broker is not None and name in per_broker:
        found.append((per_broker[name], SOURCE_DYNAMIC_BROKER_CONFIG))
    if name in cluster_default:
        found.append((cluster_default[name], SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG))
    if is_static:
        found.append((static_value, SOURCE_STATIC_BROKER_CONFIG))
    found.append((default_value, SOURCE_DEFAULT_CONFIG))
    return found
