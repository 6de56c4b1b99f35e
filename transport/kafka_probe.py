"""Is this address a Kafka listener? Asked when a native connection is lost before any answer.

A native client pointed at a broker's Kafka port (an easy mistake: both are printed by
`cluster up`) writes a msgpack frame; the Kafka door reads its first bytes as an unknown API
key and closes the connection without a word, as Kafka does. The client then knows only
"connection lost". `probe(host, port)` asks the same address, on a new plaintext connection,
what any Kafka broker answers: ApiVersions v0 in Kafka's framing (int32 length, int32
correlation id, then the body). When that comes back, the address is a Kafka listener; an
odradek broker also answers DescribeConfigs of itself (`host.name`, `port`,
`native.listeners`, `native.advertised.listeners`, `listener.security.protocol.map`), which
names its native listeners: `native` says them for a person, `native_plaintext` is the
host:port its PLAINTEXT native listener advertises (`plaintext_native`, pure), for a program
that takes a Kafka listener's address and needs the native one (the Spark connector's
`kafka.bootstrap.servers`). Its broker id is not known here, and the "" broker resource is
the cluster default's dynamic configs (Kafka's meaning), so the probe asks Metadata for the
broker ids (at most BROKERS_MAX) and describes them all: only the broker answering serves its
own, the others are answered with an error. `wrong_door(...)` is the one-line sentence for
the user.

A secured Kafka listener is probed with the caller's `security` (a `SecurityConfig`: TLS,
then SASL on the Kafka door's SaslHandshake v1 / SaslAuthenticate v2 after ApiVersions, as a
Kafka client logs in), and `native_same` is then the native listener with the same security
protocol. A refused login is raised (SaslAuthenticationFailedError and the rest of
transport/sasl.py's AUTHENTICATION_ERRORS): a wrong password must fail, not read as "not Kafka".

Bounds: one connection, three requests (and the login's), PROBE_TIMEOUT_S in all, answers of at
most ANSWER_BYTES_MAX; any other failure means "not known to be Kafka" (None).

Kafka's codec (protocol/kafka/codec.py, kio's ~900 schema modules, and Hypothesis when it is
installed) is imported when a probe runs, not with this module: every client imports this one
(client/cluster.py), and loading kio at `import client` doubled a client's start-up CPU
(0.5 -> 0.9 s, docs/benchmarks.md "Issue 32: before and after") for an error path.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from protocol.kafka.versions import API_VERSIONS, DESCRIBE_CONFIGS, METADATA
from transport.sasl import AUTHENTICATION_ERRORS, run_exchange, security_client
from transport.security import PLAINTEXT_CONFIG, SecurityConfig

PROBE_TIMEOUT_S = 3.0
ANSWER_BYTES_MAX = 1 << 20
RESOURCE_BROKER = 4
NATIVE_KEYS = ("host.name", "port", "native.listeners", "native.advertised.listeners",
               "listener.security.protocol.map")  # fmt: skip
UNBOUND_HOSTS = ("", "0.0.0.0", "::")  # a listener on every interface advertises `host.name`
BROKERS_MAX = 100  # broker resources described at most
SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION = 17, 1
SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION = 36, 2


@dataclass(frozen=True)
class KafkaListener:
    address: str
    native: str | None  # the broker's native listeners, when it said them
    native_plaintext: str | None = None  # host:port of its PLAINTEXT native listener
    native_same: str | None = None  # ... of its native listener of the probe's protocol


async def probe(
    host: str, port: int, security: SecurityConfig = PLAINTEXT_CONFIG
) -> KafkaListener | None:
    """A KafkaListener when host:port answers Kafka's ApiVersions (None: it does not)."""
    from protocol.kafka import codec  # here, not at import: see the module's docstring

    context = security.make_ssl_context()
    tls: dict[str, object] = {} if context is None else {"ssl": context, "server_hostname": host}
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            reader, writer = await asyncio.open_connection(host, port, **tls)  # type: ignore[arg-type]
            try:
                versions = codec.make(codec.request_class(API_VERSIONS, 0))
                writer.write(codec.encode_request(API_VERSIONS, 0, 1, versions, "odradek-probe"))
                corr, _ = codec.decode_response(API_VERSIONS, 0, await _frame(reader))
                if corr != 1:
                    return None
                if security.sasl:
                    await _login(codec, reader, writer, security, f"{host}:{port}")
                values = await _native_settings(codec, reader, writer)
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
    except AUTHENTICATION_ERRORS:
        raise
    except Exception:  # refused, timed out, closed, not Kafka's bytes: not known to be Kafka
        return None
    same = native_address(values, security.security_protocol)
    return KafkaListener(f"{host}:{port}", _said(values), plaintext_native(values), same)


async def _login(
    codec: ModuleType, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
    security: SecurityConfig, where: str,
) -> None:  # fmt: skip
    """SASL on the Kafka door, as a Kafka client: SaslHandshake, then SaslAuthenticate."""
    correlation = iter(range(100, 100 + 2 * 8))

    async def call(api_key: int, version: int, **fields: object) -> Any:
        body = codec.make(codec.request_class(api_key, version), **fields)
        writer.write(codec.encode_request(api_key, version, next(correlation), body,
                                          "odradek-probe"))  # fmt: skip
        return codec.decode_response(api_key, version, await _frame(reader))[1]

    async def handshake(mechanism: str) -> tuple[int, list[str]]:
        hello = await call(SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION, mechanism=mechanism)
        return int(hello.error_code), list(hello.mechanisms)

    async def step(token: bytes) -> tuple[int, str | None, bytes, int]:
        answer = await call(SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION, auth_bytes=token)
        return int(answer.error_code), answer.error_message, answer.auth_bytes, 0

    await run_exchange(security_client(security), where, handshake, step)


async def _frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    if not 4 <= size <= ANSWER_BYTES_MAX:
        raise ValueError(f"a frame of {size} bytes")
    return await reader.readexactly(size)


async def _native_settings(
    codec: ModuleType, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> dict[str, str | None]:
    """The NATIVE_KEYS settings an odradek broker describes for itself ({}: not said)."""
    try:
        asked = codec.make(codec.request_class(METADATA, 1), topics=())
        writer.write(codec.encode_request(METADATA, 1, 2, asked, "odradek-probe"))
        _, meta = codec.decode_response(METADATA, 1, await _frame(reader))
        cls = codec.request_class(DESCRIBE_CONFIGS, 1)
        resources = tuple(
            codec.make(codec.nested(cls, "DescribeConfigsResource"),
                       resource_type=RESOURCE_BROKER, resource_name=str(b.node_id),
                       configuration_keys=NATIVE_KEYS)
            for b in meta.brokers[:BROKERS_MAX]
        )  # fmt: skip
        body = codec.make(cls, resources=resources, include_synonyms=False)
        writer.write(codec.encode_request(DESCRIBE_CONFIGS, 1, 3, body, "odradek-probe"))
        _, resp = codec.decode_response(DESCRIBE_CONFIGS, 1, await _frame(reader))
    except Exception:  # a Kafka broker that is not odradek, or one that wants a login first
        return {}
    return {c.name: c.value for r in resp.results if r.error_code == 0 for c in r.configs}


def _said(values: dict[str, str | None]) -> str | None:
    return (
        values.get("native.advertised.listeners")
        or values.get("native.listeners")
        or (f"port {values['port']}" if values.get("port") else None)
    )


def _listeners(value: str) -> list[tuple[str, str, int]]:
    """ "NAME://host:port,..." -> [(NAME, host, port)]; items that are not so are passed over
    (the broker checked its own settings when it started)."""
    out = []
    for item in (i.strip() for i in value.split(",")):
        scheme, sep, rest = item.partition("://")
        host, colon, port = rest.rpartition(":")
        if sep and colon and port.isdigit():
            out.append((scheme.strip().upper(), host, int(port)))
    return out


def plaintext_native(values: dict[str, str | None]) -> str | None:
    """host:port that the broker's first PLAINTEXT native listener advertises (below)."""
    return native_address(values, "PLAINTEXT")


def native_address(values: dict[str, str | None], security_protocol: str) -> str | None:
    """host:port that the broker's first native listener of `security_protocol` advertises,
    from its described settings (broker/config.py `advertised`'s rule: the advertised listener
    of that name, else the listener, on `host.name` when it binds every interface); None when
    it has no such listener, or the settings do not say (a port picked at start, 0)."""
    host = values.get("host.name") or ""
    port = values.get("port")
    listeners = values.get("native.listeners") or (f"PLAINTEXT://{host}:{port}" if port else "")
    protocols = dict(
        (name.strip().upper(), protocol.strip().upper())
        for name, _, protocol in (
            i.partition(":")
            for i in (values.get("listener.security.protocol.map") or "").split(",")
        )
    )
    advertised = {
        n: (h, p) for n, h, p in _listeners(values.get("native.advertised.listeners") or "")
    }
    for name, bound_host, bound_port in _listeners(listeners):
        if protocols.get(name, name) != security_protocol:
            continue
        at_host, at_port = advertised.get(name, (bound_host, bound_port))
        at_host = host if at_host in UNBOUND_HOSTS else at_host
        return f"{at_host}:{at_port}" if at_host and at_port > 0 else None
    return None


def wrong_door(listener: KafkaListener) -> str:
    """The sentence for a native command pointed at a Kafka listener."""
    head = (f"{listener.address} is a Kafka listener (it answered Kafka's ApiVersions), not "
            "odradek's native port that this command speaks")  # fmt: skip
    if listener.native:
        return f"{head}: this broker's native listener is {listener.native}"
    return (f"{head}: use the broker's native port (its `port` or `native_listeners` setting; "
            "`odradek cluster status` lists both for a local cluster)")  # fmt: skip
