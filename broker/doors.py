"""The broker's two front doors over the same handlers' services.

A door is what differs between the native port and the Kafka port; broker/server.py does the
rest (framing, pipelining, limits, sendfile) the same for both:
- `route(frame, session)` decodes a request and picks its handler, or raises `Refusal`
  (the connection then closes after `reply`, if any, is sent);
- `admit(session, request)` is the one place every request passes before its handler: it
  raises `Refusal` for a request the session may not make at all (a SASL listener's connection
  that has not authenticated yet, or whose KIP-368 session expired: broker/security/sasl.py's
  `SaslGate`, whose line is logged once a minute per peer); per-resource authorization is the
  handlers' (they get the session, broker/session.py);
- `encode(request, result)` turns a handler's result into chunks (bytes and FileSlices);
- `failure(request, exc, peer)` answers a request whose handler raised, or None to close.

Each door finds a request's handler in broker/apis.py's table (one operation per API, behind
a codec per door). Fetch's native answer may hold `FileSlice`s (records sent from the segment
files), so it is encoded as chunks (`CHUNKED`).

NativeDoor speaks odradek's msgpack envelopes (protocol/codec.py). KafkaDoor speaks Kafka's
wire protocol (protocol/kafka/): as Kafka, it closes the
connection on a request it cannot parse, an unknown API or an unserved version (ApiVersions
excepted, which answers UNSUPPORTED_VERSION with what is served). An unknown API or unserved
version is also logged as one WARNING line naming the client (client_id, address, and the
software name and version its ApiVersions v3+ gave) and the API and version asked for, at most
once per `UNSERVED_LOG_INTERVAL_S` for the same client, API and version, so that a client
retrying in a loop cannot flood the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from broker import apis
from broker.security.sasl import SaslGate
from broker.session import Refusal, Session
from protocol.api.fetch import FETCH
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
from protocol.kafka import versions as kafka_versions
from protocol.log_limit import LogLimit

log = logging.getLogger("odradek.broker.server")


class Door(Protocol):
    name: str

    def route(self, frame: bytes, session: Session) -> tuple[Any, Any]: ...

    def admit(self, session: Session, request: Any) -> None: ...

    def encode(self, request: Any, result: Any) -> list[Chunk]: ...

    def failure(self, request: Any, exc: BaseException, peer: str) -> list[Chunk] | None: ...

    def describe(self, request: Any) -> str: ...


CHUNKED: frozenset[int] = frozenset({FETCH.key})  # native answers holding FileSlices


def native_handler(api_key: int) -> Any | None:
    """The native door's handler of an API; None for an API brokers do not serve."""
    return apis.native_handler(api_key)


def kafka_handler(api_key: int) -> Any:
    """The Kafka door's handler of a served API (the codec refused the others already)."""
    handler = apis.kafka_handler(api_key)
    assert handler is not None, api_key  # decode_request served only KAFKA_SERVED's keys
    return handler


class NativeDoor:
    name = "native"

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._sasl = SaslGate(lambda: int(monotonic() * 1000))

    def route(self, frame: bytes, session: Session) -> tuple[Any, Any]:
        try:
            request = decode_request(frame)
        except UnsupportedVersionError as exc:
            raise Refusal(str(exc), _native_error(frame, UnsupportedVersionError.code)) from None
        except ProtocolError as exc:
            raise Refusal(str(exc), _native_error(frame, InvalidRequestError.code)) from None
        handler = native_handler(request.header.api_key)
        if handler is None:
            corr = request.header.correlation_id
            why = f"{request.spec.name} is not served by brokers"
            raise Refusal(why, encode_error_response(corr, InvalidRequestError.code))
        session.client_id = request.header.client_id
        return request, handler

    def admit(self, session: Session, request: Any) -> None:
        why = self._sasl.why_close(session, request.header.api_key)
        if why is not None:
            raise Refusal(why, logged=True)

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


UNSERVED_LOG_INTERVAL_S = 600.0
CLIENTS_REMEMBERED = 1024  # the log limiter's keys
API_NAMES = {
    v: "".join(w.capitalize() for w in k.split("_"))
    for k, v in vars(kafka_versions).items()
    if k.isupper() and type(v) is int
}


class KafkaDoor:
    name = "kafka"

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._unserved_log = LogLimit(
            int(UNSERVED_LOG_INTERVAL_S * 1000), lambda: int(monotonic() * 1000), CLIENTS_REMEMBERED
        )
        self._sasl = SaslGate(lambda: int(monotonic() * 1000))

    def route(self, frame: bytes, session: Session) -> tuple[Any, Any]:
        try:
            request = kafka_codec.decode_request(frame, apis.KAFKA_SERVED, f"/{session.peer_host}")
        except kafka_codec.UnservedApiError as exc:
            logged = self._log_unserved(exc, session)
            raise Refusal(str(exc), logged=logged) from None
        except ProtocolError as exc:
            raise Refusal(str(exc)) from None
        h = request.header
        session.client_id = h.client_id
        if h.api_key == kafka_versions.API_VERSIONS and request.body is not None:
            _remember_software(session, request.body)
        return request, kafka_handler(h.api_key)

    def admit(self, session: Session, request: Any) -> None:
        why = self._sasl.why_close(session, request.header.api_key)
        if why is not None:  # as Kafka: no answer, the connection closes
            raise Refusal(why, logged=True)

    def _log_unserved(self, exc: kafka_codec.UnservedApiError, session: Session) -> bool:
        """One WARNING line naming the client and what it asked for (rate-limited); whether
        this refusal is accounted for by a line (now or within the interval)."""
        peer_host = session.peer_host
        if not self._unserved_log.allow((peer_host, exc.client_id, exc.api_key, exc.api_version)):
            return True
        software = session.software()
        api = API_NAMES.get(exc.api_key, "an unknown API")
        served = (
            "an API odradek does not serve"
            if exc.served is None
            else f"odradek serves versions {exc.served[0]}-{exc.served[1]}"
        )
        log.warning(
            "Kafka client %r (%s) at %s asked for %s (key %d) v%d: %s; closing the "
            "connection, as Kafka does",
            exc.client_id, software, peer_host, api, exc.api_key, exc.api_version, served,
        )  # fmt: skip
        return True

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


def _remember_software(session: Session, body: Any) -> None:
    """KIP-511: ApiVersions v3+ names the client's software; the session keeps it for logs."""
    name = getattr(body, "client_software_name", None)
    if name:
        session.client_software_name = name
        session.client_software_version = getattr(body, "client_software_version", None) or "?"
