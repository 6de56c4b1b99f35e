"""One Kafka-protocol request to one broker's Kafka listener, the way a Kafka client sends it:
TLS when the listener wants it, then SASL (SaslHandshake v1, SaslAuthenticate v2 until the
mechanism completes: transport/sasl.py's sans-I/O token clients), then the request.

The console asks for a few things only the Kafka door answers (DescribeLogDirs); on a secured
cluster it logs in there with the same settings as on the native door (`SecurityConfig`).
Every read is bounded (`FRAME_BYTES_MAX`, the caller's timeout) and a closed connection is a
NetworkError, never an EOF traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
from typing import Any

from protocol.errors import NetworkError, OdradekError
from protocol.kafka import codec
from protocol.kafka.codec import millis
from transport.sasl import run_exchange, security_client
from transport.security import PLAINTEXT_CONFIG, SecurityConfig

SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION = 17, 1
SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION = 36, 2
FRAME_BYTES_MAX = 16 * 1024 * 1024
CLIENT_ID = "odradek-console"
CLOSE_WAIT_S = 1.0
_correlation = itertools.count(1)


class _Exchange:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 timeout_s: float, where: str) -> None:  # fmt: skip
        self.reader, self.writer, self.timeout_s, self.where = reader, writer, timeout_s, where

    async def call(self, api_key: int, version: int, **fields: Any) -> Any:
        body = codec.make(codec.request_class(api_key, version), **fields)
        frame = codec.encode_request(api_key, version, next(_correlation), body,
                                     client_id=CLIENT_ID)  # fmt: skip
        self.writer.write(frame)
        try:
            head = await asyncio.wait_for(self.reader.readexactly(4), self.timeout_s)
            (size,) = struct.unpack(">i", head)
            if not 0 < size <= FRAME_BYTES_MAX:
                raise OdradekError(f"{self.where}: an answer of {size} bytes")
            data = await asyncio.wait_for(self.reader.readexactly(size), self.timeout_s)
        except asyncio.IncompleteReadError:
            raise NetworkError(f"{self.where}: the broker closed the connection") from None
        return codec.decode_response(api_key, version, data)[1]

    async def login(self, security: SecurityConfig) -> None:
        client = security_client(security)

        async def handshake(mechanism: str) -> tuple[int, list[str]]:
            hello = await self.call(SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION, mechanism=mechanism)
            return int(hello.error_code), list(hello.mechanisms)

        async def step(token: bytes) -> tuple[int, str | None, bytes, int]:
            answer = await self.call(SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION,
                                     auth_bytes=token)  # fmt: skip
            return (int(answer.error_code), answer.error_message, answer.auth_bytes,
                    millis(answer.session_lifetime))  # fmt: skip

        await run_exchange(client, self.where, handshake, step)


async def kafka_request(
    host: str, port: int, api_key: int, version: int, timeout_s: float,
    security: SecurityConfig = PLAINTEXT_CONFIG, **fields: Any,
) -> Any:  # fmt: skip
    """The response to one request (kio's response dataclass) from host:port's Kafka door."""
    context = security.make_ssl_context()
    tls: dict[str, Any] = {} if context is None else {"ssl": context, "server_hostname": host}
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, **tls), timeout_s)
    exchange = _Exchange(reader, writer, timeout_s, f"{host}:{port}")
    try:
        if security.sasl:
            await exchange.login(security)
        return await exchange.call(api_key, version, **fields)
    finally:
        if context is not None:  # done: no TLS close_notify round trip to wait for
            writer.transport.abort()
        else:
            writer.close()
        with contextlib.suppress(OSError, TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), CLOSE_WAIT_S)
