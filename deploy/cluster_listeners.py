"""A local cluster's own listeners: `LocalCluster(listeners=..., native_listeners=...)`.

By default a broker has one native listener (PLAINTEXT on its `port`) and one Kafka listener
(PLAINTEXT on its `kafka_port`). Given listeners (an ordered `{name: security protocol}` per
door), each broker gets a free port for every listener (recorded in cluster.json as its
`listener_ports`) and a settings file of its own, broker-<id>.toml, that names them with their
ports (`listeners`, `native_listeners`) and maps each name to its protocol
(`listener_security_protocol_map`: Kafka's default entries, then these). The first listener of
a door is the one its `port` / `kafka_port` (and so `bootstrap` / `kafka_bootstrap`) point at;
a door given no listeners keeps its PLAINTEXT default on that port. Everything else a listener
needs (key stores, JAAS, mechanisms, `listener.name.<name>.*` overrides, the inter-broker
listener) is a broker setting like any other (`broker_settings`).

Pure: the names are checked and the settings made here, with no file or process work.
"""

from __future__ import annotations

import re

from protocol.errors import UsageError
from transport.security import SECURITY_PROTOCOLS

Listeners = dict[str, str]  # listener name -> security protocol, in order
DEFAULT_PROTOCOL_MAP = {p: p for p in SECURITY_PROTOCOLS}  # Kafka's own map
_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


def check_listeners(kafka: Listeners, native: Listeners) -> None:
    """One readable line for a name that is not Kafka's form, an unknown protocol, or a name
    used on both doors (a name is one entry of the shared protocol map, with one port)."""
    for door, listeners in (("listeners", kafka), ("native listeners", native)):
        for name, protocol in listeners.items():
            if not _NAME.fullmatch(name):
                raise UsageError(f"{door}: {name!r} is not a listener name (A-Z, 0-9 and _)")
            if protocol not in SECURITY_PROTOCOLS:
                raise UsageError(f"{door}: {name} has protocol {protocol!r}, not one of "
                                 f"{', '.join(SECURITY_PROTOCOLS)}")  # fmt: skip
    both = sorted(set(kafka) & set(native))
    if both:
        raise UsageError(f"listener name(s) {', '.join(both)} on both doors: give each its own")


def listener_names(kafka: Listeners, native: Listeners) -> list[str]:
    """Every name a broker needs a port for: the native door's, then the Kafka door's."""
    return [*native, *kafka]


def listener_settings(
    host: str, kafka: Listeners, native: Listeners, ports: dict[str, int], kafka_port: int
) -> dict[str, str]:
    """One broker's listener settings. `ports`: its port for each name; `kafka_port`: the
    Kafka door's PLAINTEXT default when `kafka` is empty (the native door's default needs no
    setting: the broker's `--port`)."""
    protocols = {**DEFAULT_PROTOCOL_MAP, **kafka, **native}
    given_kafka = kafka or {"PLAINTEXT": "PLAINTEXT"}
    kafka_ports = ports if kafka else {"PLAINTEXT": kafka_port}
    settings = {
        "listeners": ",".join(f"{n}://{host}:{kafka_ports[n]}" for n in given_kafka),
        "listener_security_protocol_map": ",".join(f"{n}:{p}" for n, p in protocols.items()),
    }
    if native:
        settings["native_listeners"] = ",".join(f"{n}://{host}:{ports[n]}" for n in native)
    return settings
