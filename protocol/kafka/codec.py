"""Kafka request and response envelopes, sans-I/O, over kio's generated message classes.

A request frame body (after the 4-byte size the frame decoder strips):

    offset  size  field
         0     2  request_api_key
         2     2  request_api_version
         4     4  correlation_id
         8     -  client_id (int16 length, -1: null), then, in flexible versions (header v2),
                  tagged fields (uvarint count, then uvarint tag, uvarint size, bytes each)
         -     -  the request body, as kio reads it for (api_key, api_version)

A response is the 4-byte size, the correlation id, an empty tagged-field section (one 0 byte)
when the version is flexible (never for ApiVersions, whose response header is always v0 so that
a client can read it before it knows the broker's versions), then the body.

What Kafka does with bad input, we do: an unknown API key, a version outside what is served or a
body that does not parse raises `KafkaRequestError`, and the connection is closed (Kafka's
`InvalidRequestException` path); ApiVersions alone is answered at any version: a version it does
not serve gets `body=None` and the handler answers UNSUPPORTED_VERSION in v0 with the versions it
does serve (KIP-511), so a newer client can retry with one we have. An unknown API key or an
unserved version raises `UnservedApiError`, which names the client (its client_id) so that the
broker can log who asked (broker/doors.py).

`make(cls, **values)` builds a kio entity from plain Python values for whatever fields `cls` has
at its version (values for fields it lacks are dropped; ints become `ErrorCode`, `timedelta` or
`datetime` where kio wants those), so one adapter serves every version of an API.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer

from protocol.errors import ProtocolError
from protocol.kafka import guard

API_VERSIONS_KEY = 18
_FIXED = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_CORR = struct.Struct(">i")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class KafkaRequestError(ProtocolError):
    """A Kafka request that cannot be served: Kafka closes the connection."""


class UnservedApiError(KafkaRequestError):
    """A well-formed header asking for an API key, or a version of one, that is not served
    (Kafka's SocketServer refuses it as "not enabled" and closes the connection); it names the
    client so that the broker can say who asked."""

    def __init__(
        self, api_key: int, api_version: int, client_id: str | None, served: tuple[int, int] | None
    ) -> None:
        what = "is not served" if served is None else f"is not served ({served[0]}-{served[1]} are)"
        super().__init__(f"api key {api_key} version {api_version} {what}")
        self.api_key = api_key
        self.api_version = api_version
        self.client_id = client_id
        self.served = served


@dataclass(frozen=True, slots=True)
class KafkaHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class KafkaRequest:
    header: KafkaHeader
    body: Any  # the kio request entity; None for an ApiVersions version we do not serve
    flexible: bool
    client_host: str = ""  # the peer's address as Kafka shows it ("/127.0.0.1")


@functools.cache
def request_class(api_key: int, api_version: int) -> Any:
    return load_request_schema(api_key, api_version)


@functools.cache
def response_class(api_key: int, api_version: int) -> Any:
    return load_response_schema(api_key, api_version)


@functools.cache
def _reader(cls: Any) -> Any:
    return entity_reader(cls)


@functools.cache
def _writer(cls: Any) -> Any:
    return entity_writer(cls)


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id), or KafkaRequestError when under 8 bytes."""
    if len(frame) < _FIXED.size:
        raise KafkaRequestError(f"a request needs {_FIXED.size} header bytes, got {len(frame)}")
    key, version, corr = _FIXED.unpack_from(frame)
    return int(key), int(version), int(corr)


def decode_request(
    frame: bytes, served: Mapping[int, tuple[int, int]], client_host: str = ""
) -> KafkaRequest:
    """Decode one request frame body against the versions `served` (api key -> (min, max))."""
    key, version, corr = peek_header(frame)
    bounds = served.get(key)
    if bounds is None:
        raise UnservedApiError(key, version, _client_id_or_none(frame), None)
    in_range = bounds[0] <= version <= bounds[1]
    if key == API_VERSIONS_KEY and not in_range:
        header = KafkaHeader(key, version, corr, _client_id_or_none(frame))
        return KafkaRequest(header, None, False, client_host)
    if not in_range:
        raise UnservedApiError(key, version, _client_id_or_none(frame), bounds)
    try:
        cls = request_class(key, version)
    except Exception:
        # advertised for old clients' sake (Produce 0-2, as Kafka 4.0) but not decodable
        raise UnservedApiError(key, version, _client_id_or_none(frame), bounds) from None
    flexible = bool(cls.__flexible__)
    try:
        guard.check_header(frame, flexible)  # kio's reader must never see an oversize length
        header_entity, used = _reader(RequestHeaderV2 if flexible else RequestHeaderV1)(frame, 0)
        guard.check(cls, frame, used)
        body, _ = _reader(cls)(frame, used)
    except guard.OversizeError as exc:
        raise KafkaRequestError(f"api key {key} v{version}: {exc}") from None
    except Exception as exc:  # kio raises several types for garbage (underflow, utf-8, ...)
        raise KafkaRequestError(f"api key {key} v{version}: malformed request: {exc}") from None
    header = KafkaHeader(key, version, corr, header_entity.client_id)
    return KafkaRequest(header, body, flexible, client_host)


def _client_id_or_none(frame: bytes) -> str | None:
    try:
        guard.check_header(frame, False)
        header, _ = _reader(RequestHeaderV1)(frame, 0)
        client_id: str | None = header.client_id
        return client_id
    except Exception:
        return None


def response_header(request: KafkaRequest) -> bytes:
    """The response header bytes (without the size): v1 when flexible, except ApiVersions."""
    corr = _CORR.pack(request.header.correlation_id)
    if request.flexible and request.header.api_key != API_VERSIONS_KEY:
        return corr + b"\x00"
    return corr


def encode_response(request: KafkaRequest, body: Any) -> bytes:
    """One whole response frame: size, response header, the kio entity `body`."""
    buf = io.BytesIO()
    buf.write(b"\x00\x00\x00\x00")
    buf.write(response_header(request))
    cls: Any = type(body)
    _writer(cls)(buf, body)
    out = buf.getbuffer()
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_request(api_key: int, api_version: int, correlation_id: int, body: Any,
                   client_id: str | None = "odradek") -> bytes:  # fmt: skip
    """One whole request frame (for tests and tools that speak Kafka to a broker)."""
    cls = request_class(api_key, api_version)
    flexible = bool(cls.__flexible__)
    header_cls = RequestHeaderV2 if flexible else RequestHeaderV1
    header = make(
        header_cls, request_api_key=api_key, request_api_version=api_version,
        correlation_id=correlation_id, client_id=client_id,
    )  # fmt: skip
    buf = io.BytesIO()
    buf.write(b"\x00\x00\x00\x00")
    _writer(header_cls)(buf, header)
    _writer(cls)(buf, body)
    out = buf.getbuffer()
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def decode_response(api_key: int, api_version: int, frame: bytes) -> tuple[int, Any]:
    """(correlation_id, kio response entity) of a response frame body (for tests and tools)."""
    cls = response_class(api_key, api_version)
    (corr,) = _CORR.unpack_from(frame)
    at = 4 + (1 if cls.__flexible__ and api_key != API_VERSIONS_KEY else 0)
    body, _ = _reader(cls)(frame, at)
    return int(corr), body


# ----- building entities from plain values --------------------------------------------------


@functools.cache
def _field_kinds(cls: type) -> dict[str, str]:
    return {f.name: f.metadata.get("kafka_type", "") for f in dataclasses.fields(cls)}


def make(cls: Any, **values: Any) -> Any:
    """An entity of `cls` from the `values` its version has, converted to kio's types."""
    kinds = _field_kinds(cls)
    kwargs = {}
    for name, value in values.items():
        kind = kinds.get(name)
        if kind is None:
            continue
        if kind == "error_code" and type(value) is int:
            value = ErrorCode(value)
        elif kind.startswith("timedelta") and type(value) is int:
            value = datetime.timedelta(milliseconds=value)
        elif kind == "datetime_i64" and type(value) is int:
            value = None if value < 0 else _EPOCH + datetime.timedelta(milliseconds=value)
        kwargs[name] = value
    return cls(**kwargs)


def nested(response_cls: Any, name: str) -> Any:
    """A nested entity class of the module `response_cls` (or a request class) is defined in."""

    return getattr(sys.modules[response_cls.__module__], name)


def millis(value: datetime.timedelta | datetime.datetime | int | None) -> int:
    """A kio duration or instant as milliseconds (None: -1)."""
    if value is None:
        return -1
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, datetime.datetime):
        return int((value - _EPOCH) / datetime.timedelta(milliseconds=1))
    return int(value)
