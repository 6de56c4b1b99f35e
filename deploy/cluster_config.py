"""The settings files the local cluster's brokers read, in the broker's TOML format.

`broker.toml` holds what every broker shares: its host, the ZooKeeper session timeout and the
cluster's `broker_settings` (broker/config.py's names, or Kafka's dotted ones such as
`listener.name.<l>.sasl.enabled.mechanisms`, which `setting_line` quotes; JSON scalars are
TOML scalars). A broker with something of its own gets `broker-<id>.toml` instead
(`config_path`): its own host (a network namespace's), listeners of its own
(deploy/cluster_listeners.py: `own_listeners` picks a port for each and names them), or, on a
secure cluster, its certificate and SASL_SSL listeners (`write_secure_broker_config`, 0600,
from deploy/cluster_security.py's layout).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deploy.cluster_brokers import free_ports
from deploy.cluster_listeners import Listeners, listener_names, listener_settings
from deploy.cluster_state import BrokerProc


def config_path(dir: Path, proc: BrokerProc, secure: bool) -> Path:
    """broker-<id>.toml for a broker with its own host (netns) or its own certificate and
    listeners (secure), else the shared file."""
    own = proc.host or secure or proc.listener_ports
    return dir / (f"broker-{proc.id}.toml" if own else "broker.toml")


# What a development cluster's brokers get unless its settings say otherwise, as Kafka's own
# config/server.properties (its quickstart) has it: an empty group's first rebalance at once
# (Kafka's broker default, and odradek's, waits 3 s for more members, so `odradek consume
# --group` would wait that long for its first record)
LOCAL_DEFAULTS: dict[str, Any] = {"group_initial_rebalance_delay_ms": 0}


def write_broker_config(
    path: Path, host: str, session_timeout_ms: int, settings: dict[str, Any]
) -> None:
    """Settings shared by every broker of a cluster (or, at a broker-<id>.toml, one broker's
    own host and listeners beside them)."""
    text = (
        "# Written by `odradek cluster up`: settings shared by this cluster's brokers.\n"
        f'host = "{host}"\n'
        f"zookeeper_session_timeout_ms = {session_timeout_ms}\n"
    )
    settings = {**LOCAL_DEFAULTS, **settings}
    text += "".join(setting_line(name, value) for name, value in settings.items())
    path.write_text(text)


def setting_line(name: str, value: Any) -> str:
    """One TOML line. JSON scalars are TOML scalars, and a quoted key keeps Kafka's dotted
    names ("ssl.client.auth", "listener.name.<l>.*") whole: unquoted, TOML makes them tables."""
    return f"{json.dumps(name) if '.' in name else name} = {json.dumps(value)}\n"


def own_listeners(
    proc: BrokerProc,
    host: str,
    listeners: Listeners,
    native_listeners: Listeners,
    used: set[int],
    port_host: str,
) -> dict[str, str]:
    """A port for each of the listeners given (free on `port_host`, none in `used`; recorded in
    `proc`, the first of each door as its `port` / `kafka_port`), and the settings naming them
    for its broker-<id>.toml."""
    names = listener_names(listeners, native_listeners)
    ports = free_ports(port_host, len(names), used)
    proc.listener_ports = dict(zip(names, ports, strict=True))
    if native_listeners:
        proc.port = proc.listener_ports[next(iter(native_listeners))]
    if listeners:
        proc.kafka_port = proc.listener_ports[next(iter(listeners))]
    return listener_settings(host, listeners, native_listeners,
                             proc.listener_ports, proc.kafka_port)  # fmt: skip


def write_secure_broker_config(
    path: Path,
    proc: BrokerProc,
    host: str,
    session_timeout_ms: int,
    broker_settings: dict[str, Any],
    layout: Any,
) -> None:
    """broker-<id>.toml: the shared settings, its listeners and its security settings
    (`layout`: cluster_security.SecureLayout)."""
    from deploy import cluster_security

    settings: dict[str, Any] = {
        "host": host,
        "zookeeper_session_timeout_ms": session_timeout_ms,
        **LOCAL_DEFAULTS,
        **broker_settings,
        "native_listeners": f"{cluster_security.LISTENER}://{host}:{proc.port}",
        **layout.broker_settings(proc.id),
    }
    text = "# Written by `odradek cluster up --secure`: this broker's settings (0600).\n"
    text += "".join(setting_line(k, v) for k, v in settings.items())
    cluster_security.write_private(path, text)
