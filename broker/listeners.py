"""Listeners, Kafka's NAME://host:port with NAME's security protocol, read from the strings
of Kafka's `listeners`, `advertised.listeners` and `listener.security.protocol.map` settings
(and the native door's own `native_listeners`): pure parsing, UsageError with one line on a
mistake. broker/config.py checks a whole config's listeners with these.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.errors import UsageError
from transport.security import SECURITY_PROTOCOLS


@dataclass(frozen=True, slots=True)
class Listener:
    """One listener: Kafka's NAME://host:port with NAME's security protocol."""

    name: str
    host: str
    port: int
    security_protocol: str


def parse_protocol_map(value: str) -> dict[str, str]:
    """Kafka's listener.security.protocol.map: "NAME:PROTOCOL,..." -> {NAME: PROTOCOL}."""
    out: dict[str, str] = {}
    for item in (i.strip() for i in value.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            raise UsageError(f"listener_security_protocol_map: {item!r} is not NAME:PROTOCOL "
                             f"with PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}")  # fmt: skip
        if name in out:
            raise UsageError(f"listener_security_protocol_map names {name} twice")
        out[name] = protocol
    return out


def parse_listeners(value: str, setting: str, protocols: dict[str, str]) -> tuple[Listener, ...]:
    """ "NAME://host:port,..." -> Listeners (names unique, each in the protocol map)."""
    out: list[Listener] = []
    for item in (i.strip() for i in value.split(",")):
        if not item:
            continue
        scheme, sep, rest = item.partition("://")
        host, colon, port = rest.rpartition(":")
        name = scheme.strip().upper()
        if not sep or not name or not colon or not port.isdigit():
            raise UsageError(f"{setting}: {item!r} is not NAME://host:port")
        if not 0 <= int(port) <= 65535:
            raise UsageError(f"{setting}: port {port} is not in 0..65535")
        # a listener named after a protocol has that protocol unless the map says otherwise
        protocol = protocols.get(name, name if name in SECURITY_PROTOCOLS else "")
        if not protocol:
            raise UsageError(f"{setting}: listener {name} has no security protocol in "
                             "listener_security_protocol_map")  # fmt: skip
        if any(listener.name == name for listener in out):
            raise UsageError(f"{setting} names listener {name} twice")
        out.append(Listener(name, host.strip("[]"), int(port), protocol))
    return tuple(out)
