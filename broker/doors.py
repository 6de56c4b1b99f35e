"""The broker's two front doors over the same handlers' services.

A door is what differs between the native port and the Kafka port; broker/server.py does the
rest (framing, pipelining, limits, sendfile) the same for both:
- `route(frame, peer_host)` decodes a request and picks its handler, or raises `Refusal`
  (the connection then closes after `reply`, if any, is sent);
- `encode(request, result)` turns a handler's result into chunks (bytes and FileSlices);
- `failure(request, exc, peer)` answers a request whose handler raised, or None to close.

NativeDoor speaks odradek's msgpack envelopes (protocol/codec.py, broker/handlers/). KafkaDoor
speaks Kafka's wire protocol (protocol/kafka/, broker/handlers/kafka/): as Kafka, it closes the
connection on a request it cannot parse, an unknown API or an unserved version (ApiVersions
excepted, which answers UNSUPPORTED_VERSION with what is served).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from broker.handlers import CHUNKED, HANDLERS
from broker.handlers.kafka import KAFKA_HANDLERS, SERVED
from protocol.codec import (
    Chunk,
    decode_request,
    encode_error_response,
    encode_response,
    encode_response_chunks,
    peek_correlation_id,
)
from protocol.errors import (
    InvalidRequestError,
    OdradekError,
    ProtocolError,
    UnknownServerError,
    UnsupportedVersionError,
)
from protocol.kafka import codec as kafka_codec

log = logging.getLogger("odradek.broker.server")


class Refusal(Exception):
    """A frame the door will not serve: `why` is logged, `reply` (if any) sent, then close."""

    def __init__(self, why: str, reply: bytes | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.reply = reply


class Door(Protocol):
    name: str

    def route(self, frame: bytes, peer_host: str) -> tuple[Any, Any]: ...

    def encode(self, request: Any, result: Any) -> list[Chunk]: ...

    def failure(self, request: Any, exc: BaseException, peer: str) -> list[Chunk] | None: ...

    def describe(self, request: Any) -> str: ...


class NativeDoor:
    name = "native"

    def route(self, frame: bytes, peer_host: str) -> tuple[Any, Any]:
        try:
            request = decode_request(frame)
        except UnsupportedVersionError as exc:
            raise Refusal(str(exc), _native_error(frame, UnsupportedVersionError.code)) from None
        except ProtocolError as exc:
            raise Refusal(str(exc), _native_error(frame, InvalidRequestError.code)) from None
        handler = HANDLERS.get(request.header.api_key)
        if handler is None:
            corr = request.header.correlation_id
            why = f"{request.spec.name} is not served by brokers"
            raise Refusal(why, encode_error_response(corr, InvalidRequestError.code))
        return request, handler

    def encode(self, request: Any, result: Any) -> list[Chunk]:
        corr = request.header.correlation_id
        if request.header.api_key in CHUNKED:
            return encode_response_chunks(corr, result)
        return [encode_response(corr, result)]

    def failure(self, request: Any, exc: BaseException, peer: str) -> list[Chunk] | None:
        if isinstance(exc, OdradekError):
            code = exc.code
        else:
            code = UnknownServerError.code
            log.error("%s failed for %s", request.spec.name, peer, exc_info=exc)
        return [encode_error_response(request.header.correlation_id, code)]

    def describe(self, request: Any) -> str:
        return str(request.spec.name)


def _native_error(frame: bytes, code: int) -> bytes | None:
    corr = peek_correlation_id(frame)
    return None if corr is None else encode_error_response(corr, code)


class KafkaDoor:
    name = "kafka"

    def route(self, frame: bytes, peer_host: str) -> tuple[Any, Any]:
        try:
            request = kafka_codec.decode_request(frame, SERVED, f"/{peer_host}")
        except ProtocolError as exc:
            raise Refusal(str(exc)) from None
        return request, KAFKA_HANDLERS[request.header.api_key]

    def encode(self, request: Any, result: Any) -> list[Chunk]:
        if type(result) is list:  # already chunks: a fetch response with file slices
            return result
        return [kafka_codec.encode_response(request, result)]

    def failure(self, request: Any, exc: BaseException, peer: str) -> list[Chunk] | None:
        if not isinstance(exc, OdradekError):
            log.error("Kafka %s failed for %s", self.describe(request), peer, exc_info=exc)
        return None

    def describe(self, request: Any) -> str:
        h = request.header
        return f"api {h.api_key} v{h.api_version}"
