"""Per-listener settings: Kafka's `listener.name.<listener>.<setting>` keys, for broker/config.py.

A listener may have its own TLS settings (its `ssl.*` ones), SASL mechanisms and one JAAS per
mechanism (`listener.name.<l>.<mechanism>.sasl.jaas.config`). TOML reads an unquoted dotted key
as nested tables, so `flatten_listener_table` gives those their dotted names back;
`listener_settings` turns the keys (or a `{listener: {setting: value}}` table) into
`{LISTENER: {field: value}}`, each value checked by the caller's `coerce` and each name by its
`per_listener` set, with one UsageError line for a setting that cannot be set per listener.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from broker.security.sasl import MECHANISMS as SASL_MECHANISMS
from protocol.errors import UsageError

LISTENER_PREFIX = "listener.name."
JAAS_SUFFIX = ".sasl.jaas.config"
Coerce = Callable[[str, Any, str], Any]


def per_listener_field(
    setting: str, where: str, listener: str, per_listener: frozenset[str]
) -> str:
    """The BrokerConfig field a listener.name.<listener>.<setting> key sets."""
    mechanism = setting.removesuffix(JAAS_SUFFIX)
    if mechanism != setting and mechanism.upper() in SASL_MECHANISMS:
        return "sasl_jaas_config"
    name = setting.replace(".", "_")
    key = f"{where}: {LISTENER_PREFIX}{listener.lower()}.{setting}"
    if name == "sasl_jaas_config":
        raise UsageError(f"{key}: name the mechanism, as Kafka does: {LISTENER_PREFIX}"
                         f"{listener.lower()}.<mechanism>{JAAS_SUFFIX} (mechanisms: "
                         f"{', '.join(m.lower() for m in SASL_MECHANISMS)})")  # fmt: skip
    if not listener or name not in per_listener:
        raise UsageError(f"{key}: only a listener's ssl.* settings (ssl.client.auth, "
                         f"ssl.keystore.location, ...), sasl.enabled.mechanisms and "
                         f"<mechanism>{JAAS_SUFFIX} may be set per listener")  # fmt: skip
    return name


def flatten_listener_table(raw: Mapping[str, Any]) -> dict[str, Any]:
    """TOML reads an unquoted `listener.name.internal.ssl.client.auth = ...` as nested tables
    under "listener"; give those their dotted names back (other keys pass as they are)."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        else:
            out[prefix] = value

    for name, value in raw.items():
        if name == "listener" and isinstance(value, Mapping):
            walk(name, value)
        else:
            out[name] = value
    return out


def listener_settings(
    value: Any, where: str, coerce: Coerce, per_listener: frozenset[str]
) -> dict[str, dict[str, str]]:
    """listener.name.<listener>.<setting> keys (or a {listener: {setting: value}} map) as
    {LISTENER: {field: value}}; UsageError for a setting that is not per listener."""
    if not isinstance(value, Mapping):
        raise UsageError(f"{where}: listener_settings must be a table")
    out: dict[str, dict[str, str]] = {}
    for key, setting_value in value.items():
        if isinstance(setting_value, Mapping):  # {listener: {setting: value}}
            pairs = [(str(key), str(k), v) for k, v in setting_value.items()]
        else:
            listener, _, setting = str(key).removeprefix(LISTENER_PREFIX).partition(".")
            pairs = [(listener, setting, setting_value)]
        for listener, setting, v in pairs:
            name = per_listener_field(setting, where, listener, per_listener)
            own = out.setdefault(listener.upper(), {})
            value = coerce(name, v, where)
            if name == "sasl_jaas_config" and own.get(name):  # one per mechanism: all of them
                value = f"{own[name]} {value}"
            own[name] = value
    return out
