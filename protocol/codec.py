"""Request and response envelopes, sans-I/O.

A frame body (see framing.py) is one msgpack value:

    request:  [api_key, api_version, correlation_id, client_id, body]
    response: [correlation_id, error_code, body]

`body` is the message as a msgpack array (schema.py). A response's top-level error_code is
non-zero only when the request itself could not be handled (INVALID_REQUEST, UNSUPPORTED_VERSION);
the body is then nil. Per-partition errors live inside the body, as in Kafka.

Responses that carry log data are encoded as *chunks*: bytes interleaved with `FileSlice`s that
the server sends straight from the segment file (sendfile). `encode_response_chunks` writes the
msgpack bin header for each slice itself (bin8/16/32 by length, as msgpack does), so the bytes
on the wire are exactly what a plain msgpack encoder would have produced had the data been in
memory; clients decode with msgpack.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from protocol.errors import InvalidRequestError, ProtocolError, UnsupportedVersionError
from protocol.framing import frame_header
from protocol.msgview import RECORD_VIEW_BYTES, envelope_head, unpack_views
from protocol.registry import ApiSpec, spec_for_key, spec_for_request
from protocol.schema import SchemaError, from_wire, holds_records, to_wire


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class Request:
    header: RequestHeader
    spec: ApiSpec
    body: Any


@dataclass(frozen=True, slots=True)
class FileSlice:
    """`length` bytes at `position` of an open file, to be sent without copying through Python.

    `fd` is an OS file descriptor the sender may pread/sendfile from; the log keeps it open
    for as long as the slice can be in flight.
    """

    fd: int
    position: int
    length: int


Chunk = bytes | FileSlice


def _packb(value: Any) -> bytes:
    out: bytes = msgpack.packb(value, use_bin_type=True)
    return out


def _unpackb(body: bytes | bytearray | memoryview) -> Any:
    """msgpack-decode a whole body, or raise ProtocolError.

    Every declared length is bounded by the body's own length, so a tiny body announcing a
    4 GiB array or string is refused before anything is allocated; nesting deeper than
    msgpack's stack (1024 levels) is refused too, never a RecursionError.
    """
    limit = len(body)
    try:
        return msgpack.unpackb(
            body,
            raw=False,
            use_list=True,
            strict_map_key=True,
            max_str_len=limit,
            max_bin_len=limit,
            max_array_len=limit,
            max_map_len=limit,
            max_ext_len=limit,
        )
    except Exception as exc:  # msgpack raises ExtraData, FormatError, StackError, ValueError...
        raise ProtocolError(f"body is not valid msgpack: {exc}") from None


# ----- requests ----------------------------------------------------------------------------


def encode_request(
    body: Any, correlation_id: int, client_id: str | None = None, api_version: int = 0
) -> bytes:
    """One whole frame (length prefix included) for a request message."""
    spec = spec_for_request(type(body))
    payload = _packb([spec.key, api_version, correlation_id, client_id, to_wire(body)])
    return frame_header(len(payload)) + payload


def encode_request_chunks(
    body: Any, correlation_id: int, client_id: str | None = None, api_version: int = 0
) -> list[bytes | bytearray | memoryview]:
    """One whole frame as pieces to write one after the other (a writev): a request whose
    `Records` fields hold at least BIG_RECORDS_BYTES has those bytes as pieces of their own,
    not copied into the packed envelope (nor the envelope onto its frame header); the bytes
    on the wire are those of `encode_request`. Other requests: one piece, `encode_request`'s.

    As `encode_response_chunks`: the big values are swapped for ext stand-ins in the wire
    value, msgpack packs the rest in one call, and the packed bytes are cut at each stand-in,
    where the bin header msgpack would have written and the value itself go instead. Only
    messages with a `Records` field are walked (schema.holds_records), a few list items.
    """
    spec = spec_for_request(type(body))
    wire = to_wire(body)
    big: list[bytes | bytearray | memoryview] = []
    if holds_records(type(body)):
        wire = _stand_ins(wire, big)
    data = _packb([spec.key, api_version, correlation_id, client_id, wire])
    if not big:
        return [frame_header(len(data)) + data]
    chunks, total = _cut_at_stand_ins(data, big, [len(p) for p in big], "a records value")
    chunks[0] = frame_header(total) + chunks[0]  # the envelope's head: a few dozen bytes
    return chunks


BIG_RECORDS_BYTES = 32 * 1024
"""A records value at least this large is written as a piece of its own (one copy fewer of the
batch, two with the frame's header, than packing it into the envelope)."""


def _stand_ins(value: Any, big: list[bytes | bytearray | memoryview]) -> Any:
    """`value` (a wire value) with each bytes-like of at least BIG_RECORDS_BYTES replaced by an
    ext stand-in numbered in packing order, the replaced values appended to `big`."""
    kind = type(value)
    if kind is list:
        return [_stand_ins(item, big) for item in value]
    if kind is dict:
        return {key: _stand_ins(item, big) for key, item in value.items()}
    if kind in (bytes, bytearray, memoryview) and len(value) >= BIG_RECORDS_BYTES:
        big.append(value)
        return _stand_in(len(big) - 1)
    return value


def peek_correlation_id(frame: bytes) -> int | None:
    """The correlation id of a request frame, if it can be read at all (for error replies)."""
    try:
        value = _unpackb(frame)
    except ProtocolError:
        return None
    if type(value) is list and len(value) >= 3 and type(value[2]) is int:
        return int(value[2])
    return None


def decode_request(frame: bytes) -> Request:
    """Decode a request frame body. Raises ProtocolError (INVALID_REQUEST) or
    UnsupportedVersionError; both carry no correlation id, use peek_correlation_id."""
    value = _unpackb(frame)
    if type(value) is not list or len(value) != 5:
        raise ProtocolError("request envelope must be [api_key, version, corr_id, client, body]")
    api_key, version, corr, client_id, body = value
    if type(api_key) is not int or type(version) is not int or type(corr) is not int:
        raise ProtocolError("api_key, api_version and correlation_id must be integers")
    if client_id is not None and type(client_id) is not str:
        raise ProtocolError("client_id must be a string or nil")
    spec = spec_for_key(api_key)
    if spec is None:
        raise ProtocolError(f"unknown api key {api_key}")
    if not spec.supports(version):
        raise UnsupportedVersionError(f"{spec.name} v{version} is not supported")
    try:
        message: Any = from_wire(spec.request, body)
    except SchemaError:
        raise
    except (TypeError, ValueError) as exc:  # a dataclass __post_init__ refusing a value
        raise SchemaError(f"{spec.name}: {exc}") from None
    return Request(RequestHeader(api_key, version, corr, client_id), spec, message)


# ----- responses ---------------------------------------------------------------------------


def encode_response(correlation_id: int, body: Any) -> bytes:
    """One whole frame for a response whose data is all in memory."""
    payload = _packb([correlation_id, 0, to_wire(body)])
    return frame_header(len(payload)) + payload


def encode_error_response(correlation_id: int, error_code: int) -> bytes:
    payload = _packb([correlation_id, error_code, None])
    return frame_header(len(payload)) + payload


def encode_response_chunks(correlation_id: int, body: Any) -> list[Chunk]:
    """A whole frame as chunks; FileSlices stand where Records fields hold one.

    The frame is packed by msgpack in C in one call, each FileSlice packed as a stand-in (an
    ext value holding this process's random mark and the slice's index, via `default`); the
    packed bytes are then cut at each stand-in, which is replaced by the bin header of the
    slice's length followed by the slice itself. (A Python walk of the message, value by value,
    cost ~20 us per fetch response, most of a lone record's broker time.)
    """
    slices: list[FileSlice] = []

    def stand_in(value: Any) -> Any:
        if type(value) is FileSlice:
            slices.append(value)
            return _stand_in(len(slices) - 1)
        raise TypeError(f"cannot msgpack {type(value).__name__}")

    data = msgpack.packb([correlation_id, 0, to_wire(body)], use_bin_type=True, default=stand_in)
    if not slices:
        return [frame_header(len(data)), data]
    chunks, total = _cut_at_stand_ins(data, slices, [s.length for s in slices], "a file slice")
    return [frame_header(total), *chunks]


def _stand_in(index: int) -> msgpack.ExtType:
    """What msgpack packs in place of the `index`-th value to be written apart."""
    return msgpack.ExtType(_SLICE_EXT, _MARK + _INDEX.pack(index))


def _cut_at_stand_ins(
    data: bytes, pieces: Sequence[Any], lengths: Sequence[int], what: str
) -> tuple[list[Any], int]:
    """The packed `data` cut at each piece's stand-in (in packing order), each stand-in
    replaced by the bin header msgpack would have written and the piece itself: (the chunks,
    their total length). The request and the response encoders share it."""
    chunks: list[Any] = []
    start = total = 0
    for index, (piece, length) in enumerate(zip(pieces, lengths, strict=True)):
        at = data.find(_STAND_IN_HEAD, start)
        if at < 0 or _INDEX.unpack_from(data, at + len(_STAND_IN_HEAD))[0] != index:
            raise ProtocolError(f"{what}'s stand-in was not found where packed")
        head = _bin_header(length)
        chunks.append(data[start:at] + head)
        chunks.append(piece)
        total += at - start + len(head) + length
        start = at + _STAND_IN_SIZE
    if start < len(data):
        chunks.append(data[start:])
        total += len(data) - start
    return chunks, total


_BIN8 = struct.Struct(">BB")
_BIN16 = struct.Struct(">BH")
_BIN32 = struct.Struct(">BI")
_INDEX = struct.Struct(">I")
_SLICE_EXT = 0x53  # the ext type of a FileSlice's stand-in (never on the wire)
_MARK = os.urandom(12)  # random per process: no data a client sent can hold it by chance
_STAND_IN_HEAD = bytes([0xD8, _SLICE_EXT]) + _MARK  # fixext16: 12 mark bytes + a 4-byte index
_STAND_IN_SIZE = len(_STAND_IN_HEAD) + _INDEX.size


def _bin_header(length: int) -> bytes:
    """The msgpack bin header msgpack itself would write for `length` bytes."""
    if length < 0x100:
        return _BIN8.pack(0xC4, length)
    if length < 0x10000:
        return _BIN16.pack(0xC5, length)
    return _BIN32.pack(0xC6, length)


def decode_response(frame: bytes, response_cls: type) -> tuple[int, Any]:
    """(correlation_id, message) from a response frame body; raises the top-level error."""
    value = _unpackb(frame)
    if type(value) is not list or len(value) != 3 or type(value[0]) is not int:
        raise ProtocolError("response envelope must be [correlation_id, error_code, body]")
    corr, error_code, body = value
    if type(error_code) is not int:
        raise ProtocolError("response error_code must be an integer")
    if error_code != 0:
        from protocol.errors import for_code

        raise for_code(error_code)(f"request {corr} failed")
    return corr, from_wire(response_cls, body)


def split_response(frame: bytes | bytearray | memoryview) -> tuple[int, int, Any]:
    """(correlation_id, error_code, raw body) without decoding the body's schema, in one
    msgpack pass (tests and tools that read raw frames; the client reads `response_head`, then
    `response_body` once it knows what it expects)."""
    value = _unpackb(frame)
    if type(value) is not list or len(value) != 3 or type(value[0]) is not int:
        raise ProtocolError("response envelope must be [correlation_id, error_code, body]")
    if type(value[1]) is not int:
        raise ProtocolError("response error_code must be an integer")
    return value[0], value[1], value[2]


RECORD_VIEWS_FROM_FRAME_BYTES = 64 * 1024
"""`response_body` with views: frames at least this long are walked by protocol/msgview.py
(their bins of records handed out as views of the frame); shorter ones by msgpack, which is
faster over many small values and whose copy of a few kilobytes costs nothing."""


def response_head(frame: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """(correlation_id, error_code, where the body starts) of a response frame, the body not
    decoded (`response_body` does that once the caller knows what it expects); a client reads
    the head to route the response to the request that awaits it."""
    return envelope_head(frame)


def response_body(frame: bytes | bytearray | memoryview, at: int, record_views: bool) -> Any:
    """The raw body of a response frame from `at` (`response_head`'s). `record_views`: a
    large frame's bins (Fetch records) come out as memoryviews of `frame`, not copies
    (protocol/msgview.py); the frame stays alive and unresizable while they are held."""
    body = memoryview(frame)[at:]
    if record_views and len(frame) >= RECORD_VIEWS_FROM_FRAME_BYTES:
        return unpack_views(body, RECORD_VIEW_BYTES)
    return _unpackb(body)


__all__ = [
    "Chunk",
    "FileSlice",
    "InvalidRequestError",
    "Request",
    "RequestHeader",
    "decode_request",
    "decode_response",
    "encode_error_response",
    "encode_request",
    "encode_request_chunks",
    "encode_response",
    "encode_response_chunks",
    "peek_correlation_id",
    "response_body",
    "response_head",
    "split_response",
]
