"""TLS listeners in process (broker/server.py with broker/security/tls.py): the native client
over TLS, a large fetch written in bounded chunks as the socket drains, the client
certificate's mapped subject as the session's principal, and wrong protocols closed at once
with one log line per peer host per minute."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from broker.config import tls_settings
from broker.doors import KafkaDoor, NativeDoor
from broker.security.tls import TLS_CHUNK_BYTES, listener_tls
from broker.server import BrokerServer, Connection
from protocol.clock import ManualClock
from protocol.principal import KafkaPrincipal
from tests.fixtures.certs import TestCerts, certs  # noqa: F401
from tests.unit.broker.harness import BrokerHarness, running_broker
from tests.unit.broker.helpers import batch, fetch, produce
from transport.connection import BrokerConnection
from transport.security import SecurityConfig, SslAuthenticationError

BATCH_VALUE_BYTES = 100_000
BATCHES = 60  # 6 MB of log data in one fetch


@contextlib.asynccontextmanager
async def tls_listener(
    h: BrokerHarness,
    certs: TestCerts,  # noqa: F811
    kafka: bool = False,
    **ssl_settings: str,
) -> AsyncIterator[BrokerServer]:
    config = h.ctx.config
    settings = tls_settings(config).__class__(
        keystore_certificate_chain=certs.broker.cert_path.read_text(),
        keystore_key=certs.broker.key_path.read_text(),
        truststore_location=str(certs.ca.cert_path),
        client_auth=ssl_settings.get("client_auth", "none"),
    )
    rules = ssl_settings.get("rules", "DEFAULT")
    door = KafkaDoor() if kafka else NativeDoor()
    server = BrokerServer(h.ctx, h.server.clock, door, "127.0.0.1", 0, "SECURE", "SSL",
                          listener_tls(settings, rules, sasl=False))  # fmt: skip
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def client_security(certs: TestCerts, cert: Any = None) -> SecurityConfig:  # noqa: F811
    return SecurityConfig(
        "SSL", ssl_cafile=str(certs.ca.cert_path),
        ssl_certfile=None if cert is None else str(cert.cert_path),
        ssl_keyfile=None if cert is None else str(cert.key_path),
    )  # fmt: skip


async def test_a_large_fetch_over_tls_is_written_in_bounded_chunks(
    tmp_path: Path,
    certs: TestCerts,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buffered: list[int] = []
    reads: list[int] = []
    write = Connection._write

    def recording_write(self: Connection, data: bytes) -> None:
        write(self, data)
        assert self.transport is not None
        buffered.append(self.transport.get_write_buffer_size())
        reads.append(self.slice_reads)

    monkeypatch.setattr(Connection, "_write", recording_write)
    async with running_broker(tmp_path) as h, tls_listener(h, certs) as server:
        await h.lead("big")
        plain = await h.connect()
        for _ in range(BATCHES):
            resp = await plain.send(produce("big", 0, batch(1, BATCH_VALUE_BYTES)))
            assert resp.topics[0].partitions[0].error_code == 0
        conn = await BrokerConnection.connect("localhost", server.port,
                                              security=client_security(certs))  # fmt: skip
        try:
            answer = await conn.send(fetch("big", {0: 0}, partition_max_bytes=64 << 20))
        finally:
            await conn.close()
    part = answer.topics[0].partitions[0]
    assert part.error_code == 0
    records = bytes(part.records)
    assert len(records) > BATCHES * BATCH_VALUE_BYTES  # every batch came back whole
    assert records.count(b"v" * 1000) >= BATCHES * (BATCH_VALUE_BYTES // 1000)
    # the log data was read in chunks, never all at once, and the transport never held much
    assert max(reads) >= len(records) // TLS_CHUNK_BYTES
    assert max(buffered) < 4 * TLS_CHUNK_BYTES, max(buffered)


async def test_mtls_principal_is_the_mapped_subject(tmp_path: Path, certs: TestCerts) -> None:  # noqa: F811
    async with (
        running_broker(tmp_path) as h,
        tls_listener(
            h, certs, client_auth="required", rules=r"RULE:^CN=([^,]*),OU=.*$/$1/L,DEFAULT"
        ) as server,
    ):
        conn = await BrokerConnection.connect(
            "localhost", server.port, security=client_security(certs, certs.client)
        )
        try:
            await h.lead("t")
            resp = await conn.send(produce("t", 0, batch(1, 10)))
            assert resp.topics[0].partitions[0].error_code == 0
            (session,) = [c.session for c in server.connections]
            assert session.principal == KafkaPrincipal.user("alice")
            assert (session.listener, session.security_protocol) == ("SECURE", "SSL")
        finally:
            await conn.close()
        for bad in (certs.expired, certs.foreign_client):
            with pytest.raises(SslAuthenticationError):
                c = await BrokerConnection.connect(
                    "localhost", server.port, security=client_security(certs, bad)
                )
                await c.send(produce("t", 0, batch(1, 10)))  # TLS 1.3: refused after the hello


async def _attempts(port: int, payload: bytes, n: int) -> None:
    for _ in range(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(payload)
        assert await asyncio.wait_for(reader.read(), 10) is not None  # closed by the broker
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


CLIENT_HELLO = bytes.fromhex("16030100f8010000f40303") + b"\x00" * 40


@pytest.mark.parametrize("kafka", [False, True])
async def test_wrong_protocols_are_closed_and_logged_once_a_minute(
    tmp_path: Path,
    certs: TestCerts,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
    kafka: bool,
) -> None:
    clock = ManualClock()
    caplog.set_level(logging.INFO, logger="odradek.broker.server")
    async with running_broker(tmp_path, clock=clock) as h, tls_listener(h, certs, kafka) as tls:
        plain = h.kafka_server if kafka else h.server
        assert plain is not None
        await _attempts(plain.port, CLIENT_HELLO, 50)
        await _attempts(tls.port, b"\x00\x00\x00\x10plaintext-frame!", 50)
        await _attempts(plain.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5)
        clock.advance(60_000)
        await _attempts(plain.port, CLIENT_HELLO, 3)
    lines = [r.getMessage() for r in caplog.records if r.name == "odradek.broker.server"
             and r.getMessage().startswith("closing")]  # fmt: skip
    tls_lines = [m for m in lines if "a TLS handshake on PLAINTEXT listener" in m]
    assert len(tls_lines) == 2, lines  # one per minute, for 53 attempts
    assert "(is the client set for SSL? this listener is PLAINTEXT)" in tls_lines[0]
    plaintext = [m for m in lines if "plaintext (not a TLS handshake) on SSL listener SECURE" in m]
    assert len(plaintext) == 1, lines
    assert not [m for m in lines if "frame length" in m], lines
    assert len(lines) == 3, lines  # HTTP from the same host within the minute: not logged


async def test_a_handshake_failure_is_logged_with_its_reason(
    tmp_path: Path,
    certs: TestCerts,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="odradek.broker.server")
    async with running_broker(tmp_path) as h, tls_listener(h, certs, client_auth="required") as s:
        ctx = ssl.create_default_context(cafile=str(certs.ca.cert_path))
        ctx.load_cert_chain(certs.expired.cert_path, certs.expired.key_path)
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2  # the refusal comes in the handshake
        with pytest.raises(ssl.SSLError):
            await asyncio.wait_for(asyncio.open_connection("localhost", s.port, ssl=ctx), 10)
    (line,) = [
        r.getMessage() for r in caplog.records if "TLS handshake that failed" in r.getMessage()
    ]
    assert "CERTIFICATE_VERIFY_FAILED" in line and "listener SECURE" in line


async def test_a_clients_close_notify_is_answered_with_ours(
    tmp_path: Path,
    certs: TestCerts,  # noqa: F811
) -> None:
    import socket
    import ssl

    async with running_broker(tmp_path) as h, tls_listener(h, certs) as server:
        ctx = ssl.create_default_context(cafile=str(certs.ca.cert_path))

        def close() -> None:
            raw = socket.create_connection(("localhost", server.port), timeout=10)
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.unwrap().close()  # sends close_notify, reads the broker's; TimeoutError if none

        await asyncio.get_running_loop().run_in_executor(None, close)
