"""The client side of TLS (transport/security.py, transport/connection.py): settings under
kafka-python's names, and BrokerConnection.connect against an in-process TLS server."""

from __future__ import annotations

import asyncio
import ssl

import pytest

from protocol.errors import UsageError
from tests.fixtures.certs import KEY_PASSWORD, TestCerts, certs  # noqa: F401
from transport.connection import BrokerConnection
from transport.security import SecurityConfig, SslAuthenticationError


def test_settings_are_kafka_pythons_names_and_checked() -> None:
    config = SecurityConfig.from_options({"security_protocol": "SSL", "ssl_cafile": "/ca.pem"})
    assert config.tls and not config.sasl
    with pytest.raises(UsageError, match="unknown security setting"):
        SecurityConfig.from_options({"ssl_ca_location": "/ca.pem"})
    with pytest.raises(UsageError, match="security_protocol is PLAINTEXT"):
        SecurityConfig(ssl_cafile="/ca.pem")
    with pytest.raises(UsageError, match="security_protocol must be one of"):
        SecurityConfig(security_protocol="TLS")
    assert "secret" not in repr(SecurityConfig("SSL", ssl_password="secret"))


async def _tls_server(certs: TestCerts, cert_required: bool) -> asyncio.Server:  # noqa: F811
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs.broker.cert_path, certs.broker.key_path)
    if cert_required:
        ctx.load_verify_locations(certs.ca.cert_path)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0, ssl=ctx)


async def test_connect_over_tls_and_refusals(certs: TestCerts) -> None:  # noqa: F811
    server = await _tls_server(certs, cert_required=False)
    port = server.sockets[0].getsockname()[1]
    try:
        good = SecurityConfig("SSL", ssl_cafile=str(certs.ca.cert_path))
        conn = await BrokerConnection.connect("localhost", port, security=good)
        await conn.close()
        other_ca = SecurityConfig("SSL", ssl_cafile=str(certs.other_ca.cert_path))
        with pytest.raises(SslAuthenticationError, match="CERTIFICATE_VERIFY_FAILED"):
            await BrokerConnection.connect("localhost", port, security=other_ca)
    finally:
        server.close()
        await server.wait_closed()


async def test_client_certificate_with_an_encrypted_key(certs: TestCerts) -> None:  # noqa: F811
    server = await _tls_server(certs, cert_required=True)
    port = server.sockets[0].getsockname()[1]
    try:
        mtls = SecurityConfig(
            "SSL", ssl_cafile=str(certs.ca.cert_path),
            ssl_certfile=str(certs.client_encrypted.cert_path),
            ssl_keyfile=str(certs.client_encrypted.key_path), ssl_password=KEY_PASSWORD,
        )  # fmt: skip
        conn = await BrokerConnection.connect("127.0.0.1", port, security=mtls)
        await conn.close()
        wrong = SecurityConfig(
            "SSL", ssl_cafile=str(certs.ca.cert_path),
            ssl_certfile=str(certs.client_encrypted.cert_path),
            ssl_keyfile=str(certs.client_encrypted.key_path), ssl_password="wrong",
        )  # fmt: skip
        with pytest.raises(UsageError, match="cannot load ssl_certfile"):
            await BrokerConnection.connect("127.0.0.1", port, security=wrong)
    finally:
        server.close()
        await server.wait_closed()


async def test_a_bulk_produce_in_pieces_goes_through_tls_whole(certs: TestCerts) -> None:  # noqa: F811
    """A request written as pieces (transport.writelines: big batches left out of the packed
    envelope) reaches a TLS peer as the one frame encode_request gives."""
    from protocol.api.produce import (
        ProducePartition,
        ProducePartitionResponse,
        ProduceRequest,
        ProduceResponse,
        ProduceTopic,
        ProduceTopicResponse,
    )
    from protocol.codec import decode_request, encode_response
    from protocol.schema import Records

    got: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        size = int.from_bytes(await reader.readexactly(4), "big")
        body = await reader.readexactly(size)
        got.append(body)
        corr = decode_request(body).header.correlation_id
        parts = [ProducePartitionResponse(0, 0, 0, -1, 0)]
        writer.write(encode_response(corr, ProduceResponse([ProduceTopicResponse("t", parts)])))
        await reader.read()  # until the client closes
        writer.close()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs.broker.cert_path, certs.broker.key_path)
    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=ctx)
    port = server.sockets[0].getsockname()[1]
    security = SecurityConfig("SSL", ssl_cafile=str(certs.ca.cert_path))
    conn = await BrokerConnection.connect("localhost", port, security=security)
    pieces: list[int] = []
    transport = conn._transport

    class Seen:  # the transport, passed through, counting the pieces of each writelines
        def writelines(self, chunks: list[bytes]) -> None:
            pieces.append(len(chunks))
            transport.writelines(chunks)  # type: ignore[union-attr]

        def __getattr__(self, name: str) -> object:
            return getattr(transport, name)

    conn._transport = Seen()  # type: ignore[assignment]
    try:
        batch = bytes(range(256)) * 1200  # 300 KiB: a piece of its own
        topics = [ProduceTopic("t", [ProducePartition(0, Records(batch))])]
        request = ProduceRequest(1, 30_000, topics)
        resp = await conn.send(request, timeout_ms=10_000)
        assert resp.topics[0].partitions[0].error_code == 0
        [body] = got
        assert decode_request(body).body == request
        assert pieces == [3]  # envelope head, the batch, the envelope's tail
    finally:
        conn._transport = transport
        await conn.close()
        server.close()
        await server.wait_closed()
