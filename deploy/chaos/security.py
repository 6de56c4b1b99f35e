"""How chaos's clients log in: `--command-config FILE`, else the --dir cluster's own.

`configure(cluster, path)` runs once per `chaos run|faults`, before any client is made: with
`--command-config FILE` it reads FILE (client/command_config.py, as every other odradek command
does); without it, a secure local cluster (`cluster up --secure`) gives its admin's
client.properties (`LocalCluster.client_options`), a plaintext one gives nothing. Every client
chaos makes then takes its settings from here: `native()` for client.Producer/Consumer/Admin
(kafka-python's names), `librdkafka()` for the confluent-kafka workloads (librdkafka's names:
security.protocol, sasl.*, ssl.ca.pem). The settings stay in memory; nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from client.command_config import CommandConfig, load_command_config
from protocol.errors import UsageError

_native: dict[str, Any] = {}
_librdkafka: dict[str, Any] = {}
_path: Path | None = None  # the file they came from, for clients in processes of their own


def configure(cluster: Any, command_config: Path | None) -> None:
    """Set the settings of this run's clients (see the module's docstring)."""
    global _native, _librdkafka, _path
    _path = cluster.client_properties_path if command_config is None else command_config
    config = None if _path is None else load_command_config(_path)
    if config is None:
        _native, _librdkafka = {}, {}
        return
    _native = config.client_options()
    _librdkafka = librdkafka_conf(config)


def command_config_path() -> Path | None:
    """The client properties file the settings came from (None: a plaintext cluster)."""
    return _path


def native() -> dict[str, Any]:
    """Keyword arguments for client.Producer/Consumer/Admin ({} on a plaintext cluster)."""
    return dict(_native)


def librdkafka() -> dict[str, Any]:
    """confluent-kafka properties ({} on a plaintext cluster)."""
    return dict(_librdkafka)


def librdkafka_conf(config: CommandConfig) -> dict[str, Any]:
    """A CommandConfig in librdkafka's names; a keystore (mTLS) is refused with one line."""
    if config.security_protocol == "PLAINTEXT":
        return {}
    conf: dict[str, Any] = {"security.protocol": config.security_protocol}
    if config.uses_sasl:
        conf["sasl.mechanism"] = config.sasl_mechanism
        conf["sasl.username"] = config.sasl_username
        conf["sasl.password"] = config.sasl_password
    if config.uses_tls:
        if config.keystore_location or config.keystore_certificate_chain:
            raise UsageError(
                "chaos: a client keystore (mTLS) is not supported for the confluent-kafka "
                "workloads; use --workload native"
            )
        trusted = config.trusted_pem()
        if trusted is not None:
            conf["ssl.ca.pem"] = trusted
        if not config.check_hostname:
            conf["ssl.endpoint.identification.algorithm"] = "none"
    return conf
