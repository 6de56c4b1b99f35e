"""SASL through both doors over a real socket: a SASL_PLAINTEXT listener's gate, PLAIN through
SaslHandshake v1 and SaslAuthenticate v0-v2, a failed exchange answered only after the failure
delay and then closed, an unsupported mechanism, SaslHandshake v0 refused, and KIP-368 expiry
and re-authentication on a manual clock."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from broker.context import BrokerContext
from broker.doors import Door, KafkaDoor, NativeDoor
from broker.security.sasl import SaslConfig, SaslService, plain_users
from broker.server import BrokerServer
from broker.session import SASL_PLAINTEXT
from protocol.api.metadata import MetadataRequest, MetadataResponse
from protocol.api.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from protocol.clock import ManualClock
from protocol.errors import IllegalSaslStateError
from protocol.kafka import codec
from protocol.kafka.codec import encode_request, make
from protocol.kafka.versions import API_VERSIONS, METADATA, SASL_AUTHENTICATE, SASL_HANDSHAKE
from tests.unit.broker.harness import RawClient, running_broker
from transport.connection import BrokerConnection
from transport.security import SecurityConfig

IO_TIMEOUT_S = 10.0
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
AUTH_FAILED, ILLEGAL_STATE, UNSUPPORTED_MECHANISM, UNSUPPORTED_VERSION = 58, 34, 33, 35


class Gate:
    """The failure delay as an event the test opens (the service's injected sleep)."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.waiting = 0

    async def sleep(self, seconds: float) -> None:
        assert seconds == 0.1  # connection_failed_authentication_delay_ms = 100
        self.waiting += 1
        await self.opened.wait()


@dataclass
class Sasl:
    ctx: BrokerContext
    clock: ManualClock
    delay: Gate
    kafka_port: int
    native_port: int
    conns: list[asyncio.StreamWriter] = field(default_factory=list)

    async def kafka(self) -> KafkaRaw:
        c = await KafkaRaw.connect(self.kafka_port)
        self.conns.append(c.writer)
        return c

    async def native(self) -> RawClient:
        c = await RawClient.connect(self.native_port)
        self.conns.append(c.writer)
        return c

    async def close(self) -> None:
        for writer in self.conns:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


@contextlib.asynccontextmanager
async def sasl_broker(
    tmp_path: Path, max_reauth_ms: int = 0, listeners: dict[str, SaslConfig] | None = None
) -> AsyncIterator[Sasl]:
    """SASL_PLAINTEXT listeners (Kafka and native) offering PLAIN and SCRAM-SHA-512, or the
    `listeners`' own mechanisms."""
    clock = ManualClock()
    delay = Gate()
    config = SaslConfig(("PLAIN", "SCRAM-SHA-512"), plain_users(JAAS), max_reauth_ms, 100)
    sasl = SaslService(config, lambda m, u: None, clock.monotonic_ms, delay.sleep,
                       listeners=listeners or {})  # fmt: skip
    async with running_broker(tmp_path, clock, sasl=sasl) as b:
        servers = []
        door: Door
        for door in (KafkaDoor(lambda: clock.monotonic_ms() / 1000),
                     NativeDoor(lambda: clock.monotonic_ms() / 1000)):  # fmt: skip
            server = BrokerServer(b.ctx, clock, door, "127.0.0.1", 0, "SASL", SASL_PLAINTEXT)
            await server.start()
            servers.append(server)
        sasl = Sasl(b.ctx, clock, delay, servers[0].port, servers[1].port)
        try:
            yield sasl
        finally:
            await sasl.close()
            for server in servers:
                await server.stop()


class KafkaRaw:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.corr = 0

    @classmethod
    async def connect(cls, port: int) -> KafkaRaw:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    def send(self, key: int, version: int, **fields: Any) -> None:
        self.corr += 1
        body = make(codec.request_class(key, version), **fields)
        self.writer.write(encode_request(key, version, self.corr, body))

    async def read(self, key: int, version: int) -> Any:
        async with asyncio.timeout(IO_TIMEOUT_S):
            (size,) = struct.unpack(">i", await self.reader.readexactly(4))
            frame = await self.reader.readexactly(size)
        corr, body = codec.decode_response(key, version, frame)
        assert corr == self.corr
        return body

    async def call(self, key: int, version: int, **fields: Any) -> Any:
        self.send(key, version, **fields)
        return await self.read(key, version)

    async def closed(self) -> bool:
        async with asyncio.timeout(IO_TIMEOUT_S):
            rest = await self.reader.read()
        return rest == b"" and self.reader.at_eof()

    async def login(self, password: str = "alice-secret", version: int = 2) -> Any:
        handshake = await self.call(SASL_HANDSHAKE, 1, mechanism="PLAIN")
        assert handshake.error_code.value == 0
        token = f"\x00alice\x00{password}".encode()
        return await self.call(SASL_AUTHENTICATE, version, auth_bytes=token)


async def metadata_works(c: KafkaRaw) -> bool:
    resp = await c.call(METADATA, 12, topics=(), allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)  # fmt: skip
    return resp.controller_id is not None  # answered (read() checked its correlation id)


# --- the Kafka door ------------------------------------------------------------------------------


async def test_a_request_before_authentication_closes_the_connection(tmp_path: Path) -> None:
    async with sasl_broker(tmp_path) as s:
        c = await s.kafka()
        c.send(METADATA, 12, topics=(), allow_auto_topic_creation=False,
               include_topic_authorized_operations=False)  # fmt: skip
        assert await c.closed()


async def test_plain_then_requests_as_alice(tmp_path: Path) -> None:
    async with sasl_broker(tmp_path) as s:
        for version in (0, 1, 2):
            c = await s.kafka()
            versions = await c.call(API_VERSIONS, 3, client_software_name="t",
                                    client_software_version="1")  # fmt: skip
            served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
            assert served[SASL_HANDSHAKE] == (0, 1) and served[SASL_AUTHENTICATE] == (0, 2)
            answer = await c.login(version=version)
            assert answer.error_code.value == 0 and answer.auth_bytes == b""
            assert await metadata_works(c)


async def test_a_wrong_password_is_answered_after_the_delay_then_closed(tmp_path: Path) -> None:
    async with sasl_broker(tmp_path) as s:
        c = await s.kafka()
        assert (await c.call(SASL_HANDSHAKE, 1, mechanism="PLAIN")).error_code.value == 0
        c.send(SASL_AUTHENTICATE, 2, auth_bytes=b"\x00alice\x00wrong")
        reading = asyncio.ensure_future(c.read(SASL_AUTHENTICATE, 2))
        async with asyncio.timeout(IO_TIMEOUT_S):
            while not s.delay.waiting:
                await asyncio.sleep(0.01)
        assert not reading.done()  # held for connection_failed_authentication_delay_ms
        s.delay.opened.set()
        answer = await reading
        assert answer.error_code.value == AUTH_FAILED
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert await c.closed()


async def test_unsupported_mechanism_lists_the_enabled_ones(tmp_path: Path) -> None:
    async with sasl_broker(tmp_path) as s:
        s.delay.opened.set()
        c = await s.kafka()
        answer = await c.call(SASL_HANDSHAKE, 1, mechanism="GSSAPI")
        assert answer.error_code.value == UNSUPPORTED_MECHANISM
        assert answer.mechanisms == ("PLAIN", "SCRAM-SHA-512")
        assert await c.closed()


async def test_a_listener_with_mechanisms_of_its_own_offers_those(tmp_path: Path) -> None:
    own = {"sasl": SaslConfig(("SCRAM-SHA-256",))}  # the listener's name, in any case
    async with sasl_broker(tmp_path, listeners=own) as s:
        s.delay.opened.set()
        assert "PLAIN" in s.ctx.sasl.config.enabled_mechanisms  # the broker-wide ones
        c = await s.kafka()
        answer = await c.call(SASL_HANDSHAKE, 1, mechanism="PLAIN")
        assert answer.error_code.value == UNSUPPORTED_MECHANISM
        assert answer.mechanisms == ("SCRAM-SHA-256",)
        assert await c.closed()


async def test_sasl_handshake_v0_is_listed_but_refused(tmp_path: Path) -> None:
    async with sasl_broker(tmp_path) as s:
        s.delay.opened.set()
        c = await s.kafka()
        versions = await c.call(API_VERSIONS, 3, client_software_name="t",
                                client_software_version="1")  # fmt: skip
        served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert served[SASL_HANDSHAKE] == (0, 1)  # librdkafka < 2.10 wants v0 in the range
        answer = await c.call(SASL_HANDSHAKE, 0, mechanism="PLAIN")
        assert answer.error_code.value == UNSUPPORTED_VERSION
        assert answer.mechanisms == ("PLAIN", "SCRAM-SHA-512")
        assert await c.closed()


async def test_a_plaintext_listener_answers_illegal_sasl_state_without_mechanisms(
    tmp_path: Path,
) -> None:
    """Kafka's KafkaApis answer on both doors and every SaslHandshake version: the listener
    offers no mechanism, so none is listed (the broker's SASL mechanisms are another
    listener's), and the connection goes on."""
    async with sasl_broker(tmp_path) as s:
        servers = []
        door: Door
        for door in (KafkaDoor(), NativeDoor()):
            server = BrokerServer(s.ctx, s.clock, door, "127.0.0.1", 0, "PLAINTEXT", "PLAINTEXT")
            await server.start()
            servers.append(server)
        try:
            for version in (0, 1):
                c = await KafkaRaw.connect(servers[0].port)
                s.conns.append(c.writer)
                answer = await c.call(SASL_HANDSHAKE, version, mechanism="SCRAM-SHA-512")
                assert (answer.error_code.value, answer.mechanisms) == (ILLEGAL_STATE, ())
                assert await metadata_works(c)
            n = await RawClient.connect(servers[1].port)
            s.conns.append(n.writer)
            n.send(SaslHandshakeRequest("SCRAM-SHA-512"))
            _, native = await n.read_response(SaslHandshakeResponse)
            assert (native.error_code, native.mechanisms) == (ILLEGAL_STATE, [])
            n.send(MetadataRequest(None))
            _, meta = await n.read_response(MetadataResponse)
            assert isinstance(meta, MetadataResponse)
            sasl = SecurityConfig("SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                                  sasl_plain_username="bob", sasl_plain_password="x")  # fmt: skip
            with pytest.raises(IllegalSaslStateError) as refused:
                await BrokerConnection.connect("127.0.0.1", servers[1].port, security=sasl)
            assert refused.value.message == (
                f"127.0.0.1:{servers[1].port} is not a SASL listener (SaslHandshake answered "
                "ILLEGAL_SASL_STATE, no mechanism offered): give the security.protocol of the "
                "listener at that port"
            )
        finally:
            for server in servers:
                await server.stop()


async def test_malformed_token_fails_without_a_traceback(tmp_path: Path, caplog: Any) -> None:
    async with sasl_broker(tmp_path) as s:
        s.delay.opened.set()
        c = await s.kafka()
        await c.call(SASL_HANDSHAKE, 1, mechanism="PLAIN")
        answer = await c.call(SASL_AUTHENTICATE, 2, auth_bytes=b"\xff" * 10)
        assert answer.error_code.value == AUTH_FAILED
        assert await c.closed()
        assert "Traceback" not in caplog.text


# --- KIP-368 -------------------------------------------------------------------------------------


async def test_an_expired_session_is_closed_and_reauthentication_renews_it(
    tmp_path: Path,
) -> None:
    async with sasl_broker(tmp_path, max_reauth_ms=10_000) as s:
        c = await s.kafka()
        answer = await c.login()
        assert answer.session_lifetime.total_seconds() == 10.0
        for _ in range(3):  # three lifetimes, re-authenticating on the same connection
            s.clock.advance(9_000)
            assert await metadata_works(c)
            again = await c.login()
            assert again.error_code.value == 0
        s.clock.advance(10_000)
        c.send(METADATA, 12, topics=(), allow_auto_topic_creation=False,
               include_topic_authorized_operations=False)  # fmt: skip
        assert await c.closed()


# --- the native door -----------------------------------------------------------------------------


async def test_native_door_authenticates_the_same_way(tmp_path: Path) -> None:
    async with sasl_broker(tmp_path) as s:
        early = await s.native()
        early.send(MetadataRequest(None))
        assert await early.at_eof()

        c = await s.native()
        c.send(SaslHandshakeRequest("PLAIN"))
        _, handshake = await c.read_response(SaslHandshakeResponse)
        assert (handshake.error_code, handshake.mechanisms) == (0, ["PLAIN", "SCRAM-SHA-512"])
        c.send(SaslAuthenticateRequest(b"\x00alice\x00alice-secret"))
        _, answer = await c.read_response(SaslAuthenticateResponse)
        assert answer.error_code == 0
        c.send(MetadataRequest(None))
        _, meta = await c.read_response(MetadataResponse)
        assert isinstance(meta, MetadataResponse)

        s.delay.opened.set()
        bad = await s.native()
        bad.send(SaslHandshakeRequest("PLAIN"))
        await bad.read_response(SaslHandshakeResponse)
        bad.send(SaslAuthenticateRequest(b"\x00alice\x00nope"))
        _, failed = await bad.read_response(SaslAuthenticateResponse)
        assert failed.error_code == AUTH_FAILED
        assert failed.error_message == "Authentication failed: Invalid username or password"
        assert await bad.at_eof()


# --- what may be sent before logging in --------------------------------------------------------


async def test_a_big_frame_before_authentication_is_refused_and_allowed_after(
    tmp_path: Path, caplog: Any
) -> None:
    caplog.set_level(logging.INFO, "odradek.broker.server")
    async with sasl_broker(tmp_path) as s:
        big = MetadataRequest([f"topic-{i:04d}-" + "x" * 1000 for i in range(600)])  # ~600 KiB
        early = await s.native()
        early.send(big)
        with contextlib.suppress(ConnectionResetError):  # closed while the frame still came
            assert await early.at_eof()
        assert "524288" in caplog.text  # sasl_server_max_receive_size, Kafka's default

        c = await s.native()
        c.send(SaslHandshakeRequest("PLAIN"))
        await c.read_response(SaslHandshakeResponse)
        c.send(SaslAuthenticateRequest(b"\x00alice\x00alice-secret"))
        _, answer = await c.read_response(SaslAuthenticateResponse)
        assert answer.error_code == 0
        c.send(big)  # logged in: socket_request_max_bytes applies again
        _, meta = await c.read_response(MetadataResponse)
        assert len(meta.topics) == 600


async def test_random_tokens_over_the_socket_are_answered_and_closed(tmp_path: Path) -> None:
    rng = random.Random(25)
    async with sasl_broker(tmp_path) as s:
        s.delay.opened.set()
        for i in range(30):
            mechanism = ("PLAIN", "SCRAM-SHA-512")[i % 2]
            c = await s.kafka()
            assert (await c.call(SASL_HANDSHAKE, 1, mechanism=mechanism)).error_code.value == 0
            token = rng.randbytes(rng.randrange(0, 3000))
            answer = await c.call(SASL_AUTHENTICATE, 2, auth_bytes=token)
            assert answer.error_code.value in (AUTH_FAILED, ILLEGAL_STATE)
            assert await c.closed()
        good = await s.kafka()  # and the broker still serves
        assert (await good.login()).error_code.value == 0
