"""The `kafka.`-prefixed security options, as Spark's Kafka source takes them, and the rest refused.

Spark users pass Kafka client properties with a `kafka.` prefix (Spark's Kafka integration
guide, "Security"):

    .option("kafka.security.protocol", "SASL_SSL")
    .option("kafka.sasl.mechanism", "SCRAM-SHA-512")
    .option("kafka.sasl.jaas.config",
            'org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="alice" password="alice-secret";')
    .option("kafka.ssl.truststore.location", "/etc/odradek/ca.pem")
    .option("kafka.ssl.truststore.type", "PEM")

`security_props(opts)` takes every such option out of the (lower-cased) option map, checks
them against each other with the rules of Kafka tools' `--command-config` (deploy/
command_config.py: the same properties, the same one-line refusals) and returns them as a
sorted tuple of (property, value) pairs: plain strings, so they travel to the executors inside
the pickled options and input partitions, as Spark's own source ships them. librdkafka's
names, which PySpark users also know, are taken too: `ssl.ca.location` (a PEM CA file: the
truststore) and `sasl.username` + `sasl.password` (instead of a JAAS value).

`client_options(props)` is what a client of this process needs (kafka-python's keyword names,
with a ready `ssl_context`); made once per process and set of properties, since reading the
truststore and building a TLS context costs more than a task's whole read of a small range.
`security_config(props)` is the same as a `SecurityConfig`, for a `client.cluster.Cluster`.

Every other `kafka.` option is refused by `check_kafka_options` with its reason (Spark's guide
lists some as not settable; others have no meaning for a native client), or, when no such
Kafka property exists, with the nearest known name (difflib).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from client.command_config import SUPPORTED, command_config
from protocol.errors import UsageError
from transport.security import SecurityConfig

Props = tuple[tuple[str, str], ...]
PREFIX = "kafka."
SOURCE = "the kafka.* security options"
# kafka.-prefixed options handled elsewhere (options.py): not security properties
HANDLED_ELSEWHERE = ("bootstrap.servers", "isolation.level", "group.id")
LIBRDKAFKA = ("ssl.ca.location", "sasl.username", "sasl.password")

# Kafka client properties a Spark user may pass that this connector refuses, with the reason.
REFUSED: dict[str, str] = {
    "auto.offset.reset": "set the option 'startingOffsets' instead (Spark's Kafka source "
    "refuses it too)",
    "enable.auto.commit": "offsets live in Spark's checkpoint; a streaming query commits each "
    "finished micro-batch's end to its group for monitoring, not on a timer (Spark's Kafka "
    "source refuses it too)",
    "key.deserializer": "keys are always read as binary (Spark's Kafka source refuses it too)",
    "value.deserializer": "values are always read as binary (Spark's Kafka source refuses it too)",
    "key.serializer": "keys are always written as binary (Spark's Kafka sink refuses it too)",
    "value.serializer": "values are always written as binary (Spark's Kafka sink refuses it too)",
    "interceptor.classes": "Java interceptors cannot run in a Python client (Spark's Kafka "
    "source refuses it too)",
    "sasl.kerberos.service.name": "GSSAPI (Kerberos) is not supported: use SCRAM or PLAIN",
    "sasl.login.callback.handler.class": "Java callback handlers cannot run in a Python client",
    "sasl.client.callback.handler.class": "Java callback handlers cannot run in a Python client",
    "ssl.protocol": "TLS versions are negotiated by Python's ssl module (TLS 1.2 and 1.3)",
    "ssl.enabled.protocols": "TLS versions are negotiated by Python's ssl module (TLS 1.2 and 1.3)",
    "ssl.cipher.suites": "cipher suites are Python's ssl module's defaults",
    "ssl.keymanager.algorithm": "a Java key manager setting; Python's ssl module has none",
    "ssl.trustmanager.algorithm": "a Java trust manager setting; Python's ssl module has none",
    "ssl.secure.random.implementation": "a Java setting; Python's ssl module has none",
    "client.id": "each task names itself; a shared client id is not supported",
    "max.poll.records": "each task reads its whole offset range; use maxOffsetsPerTrigger",
    "fetch.max.bytes": "use the option 'fetchMaxBytes'",
    "max.partition.fetch.bytes": "use the option 'fetchMaxBytes'",
    "acks": "use the option 'acks'",
    "linger.ms": "use the option 'lingerMs'",
    "batch.size": "use the option 'batchSize'",
    "transactional.id": "use exactlyOnce=true with 'transactionalIdPrefix'",
    "request.timeout.ms": "the connector's clients use 30000 ms; not configurable",
    "compression.type": "the sink writes uncompressed batches; not configurable",
}
KNOWN = tuple(sorted({*SUPPORTED, *LIBRDKAFKA, *HANDLED_ELSEWHERE, *REFUSED}))


def _librdkafka(props: dict[str, str]) -> dict[str, str]:
    """librdkafka's names turned into the Java client's (the ones command_config reads)."""
    out = dict(props)
    if "ssl.ca.location" in out:
        if "ssl.truststore.location" in out:
            raise UsageError("give kafka.ssl.ca.location or kafka.ssl.truststore.location")
        out["ssl.truststore.location"] = out.pop("ssl.ca.location")
        out.setdefault("ssl.truststore.type", "PEM")
    user, password = out.pop("sasl.username", None), out.pop("sasl.password", None)
    if user is None and password is None:
        return out
    if user is None or password is None:
        raise UsageError("kafka.sasl.username and kafka.sasl.password go together")
    if "sasl.jaas.config" in out:
        raise UsageError("give kafka.sasl.jaas.config or kafka.sasl.username/password")
    mechanism = out.get("sasl.mechanism", "").strip().upper()
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    quoted = password.replace("\\", "\\\\").replace('"', '\\"')
    out["sasl.jaas.config"] = (f'org.apache.kafka.common.security.{module} required '
                               f'username="{user}" password="{quoted}";')  # fmt: skip
    return out


def check_kafka_options(names: Iterable[str]) -> None:
    """Each `kafka.` option name (lower-case, prefix included) must be one the connector
    honours; UsageError with the reason, or the nearest known one, for the first that is not."""
    for name in sorted(names):
        prop = name[len(PREFIX) :]
        if prop in REFUSED:
            raise UsageError(f"option '{name}' is not supported: {REFUSED[prop]}")
        if prop not in KNOWN:
            near = difflib.get_close_matches(prop, KNOWN, n=1, cutoff=0.6)
            hint = f" (did you mean 'kafka.{near[0]}'?)" if near else ""
            raise UsageError(f"unknown option '{name}'{hint}")


def security_props(opts: Mapping[str, str]) -> Props:
    """The checked security properties among `opts` (lower-case names), without the prefix."""
    given = [k for k in opts if k.startswith(PREFIX)]
    check_kafka_options(given)
    props = {
        k[len(PREFIX) :]: v
        for k, v in opts.items()
        if k.startswith(PREFIX) and k[len(PREFIX) :] not in HANDLED_ELSEWHERE
    }
    props = _librdkafka(props)
    command_config(props, SOURCE)  # one line on the first inconsistency, before anything runs
    return tuple(sorted(props.items()))


def client_options(props: Props) -> dict[str, Any]:
    """Keyword arguments for the native client (kafka-python's names): {} for plaintext. The
    truststore and keystore files are read here, on the process that connects."""
    return dict(_client_options(props))


@lru_cache(maxsize=16)
def _client_options(props: Props) -> dict[str, Any]:
    if not props:
        return {}
    return command_config(dict(props), SOURCE).client_options()


def security_config(props: Props) -> SecurityConfig:
    return SecurityConfig.from_options(client_options(props))


def security_protocol(props: Props) -> str:
    return dict(props).get("security.protocol", "PLAINTEXT").strip().upper()
