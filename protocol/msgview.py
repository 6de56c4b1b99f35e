"""msgpack decoding that hands out large bins as views of the body, not copies.

`unpack_views(body, min_view_bytes)` decodes one msgpack value as `msgpack.unpackb(raw=False,
strict_map_key=True)` would, except that a bin of at least `min_view_bytes` comes out as a
read-only `memoryview` slice of `body` (no copy) instead of a new `bytes`. It is meant for
large responses whose size is their record data (Fetch: one bin of up to fetch_max_bytes per
partition): msgpack copies each bin into a bytes object, about 0.1 ns per byte, which at
1 KiB records is a tenth of a Spark task's own CPU per record. The envelope around the bins is
small (some ten values per partition), so walking it here in Python costs microseconds per
response; small bodies are better left to msgpack, which callers do (codec.py's
`response_body` walks only frames of RECORD_VIEWS_FROM_FRAME_BYTES or more here).

A view keeps `body` alive and (a bytearray) unresizable for as long as it is held.
Every declared length is checked against the body's end; types msgpack would give that a
response never holds (ext, timestamps) and non-string map keys are refused with ProtocolError,
as is anything after the value.
"""

from __future__ import annotations

import struct
from typing import Any

from protocol.errors import ProtocolError

_U8, _U16, _U32, _U64 = (struct.Struct(f">{c}").unpack_from for c in "BHIQ")
_I8, _I16, _I32, _I64 = (struct.Struct(f">{c}").unpack_from for c in "bhiq")
_F32, _F64 = struct.Struct(">f").unpack_from, struct.Struct(">d").unpack_from
_MAX_DEPTH = 64
RECORD_VIEW_BYTES = 1024
"""Bins at least this long are views when a caller asks for views of records; shorter ones are
copied (a view costs about as much to make as a small copy, and keeps the whole body alive)."""


def unpack_views(body: bytes | bytearray | memoryview, min_view_bytes: int = 1) -> Any:
    """The msgpack value `body` holds, bins of at least `min_view_bytes` as views of it."""
    view = memoryview(body).toreadonly().cast("B")
    try:
        value, pos = _Walker(view, min_view_bytes).value(0, 0)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"body is not valid msgpack: {exc}") from None
    if pos != len(view):
        raise ProtocolError(f"body is not valid msgpack: {len(view) - pos} bytes after the value")
    return value


def envelope_head(body: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """A response envelope `[correlation_id, error_code, body]`: the two integers and where
    the body starts, the body itself not decoded."""
    view = memoryview(body).toreadonly().cast("B")
    walker = _Walker(view, 1)
    try:
        if not view or view[0] != 0x93:
            raise ProtocolError("response envelope must be [correlation_id, error_code, body]")
        corr, pos = walker.value(1, 0)
        error_code, pos = walker.value(pos, 0)
        if pos >= len(view):
            raise ProtocolError("response envelope must be [correlation_id, error_code, body]")
    except (struct.error, IndexError) as exc:
        raise ProtocolError(f"body is not valid msgpack: {exc}") from None
    if type(corr) is not int:
        raise ProtocolError("response envelope must be [correlation_id, error_code, body]")
    if type(error_code) is not int:
        raise ProtocolError("response error_code must be an integer")
    return corr, error_code, pos


class _Walker:
    __slots__ = ("end", "min_view", "view")

    def __init__(self, view: memoryview, min_view_bytes: int) -> None:
        self.view = view
        self.end = len(view)
        self.min_view = min_view_bytes

    def _span(self, pos: int, n: int) -> int:
        if n > self.end - pos:
            raise ProtocolError(f"body is not valid msgpack: {n} bytes declared past its end")
        return pos + n

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        view = self.view
        b = view[pos]
        pos += 1
        if b <= 0x7F:
            return b, pos
        if b >= 0xE0:
            return b - 0x100, pos
        if 0xA0 <= b <= 0xBF:
            return self._str(pos, b & 0x1F)
        if 0x90 <= b <= 0x9F:
            return self._array(pos, b & 0x0F, depth)
        if 0x80 <= b <= 0x8F:
            return self._map(pos, b & 0x0F, depth)
        if b == 0xC0:
            return None, pos
        if b == 0xC2:
            return False, pos
        if b == 0xC3:
            return True, pos
        if 0xC4 <= b <= 0xC6:  # bin 8/16/32
            (n,) = (_U8, _U16, _U32)[b - 0xC4](view, pos)
            pos += 1 << (b - 0xC4)
            return self._bin(pos, n)
        if 0xCC <= b <= 0xCF:  # uint 8/16/32/64
            size = 1 << (b - 0xCC)
            return (_U8, _U16, _U32, _U64)[b - 0xCC](view, pos)[0], pos + size
        if 0xD0 <= b <= 0xD3:  # int 8/16/32/64
            size = 1 << (b - 0xD0)
            return (_I8, _I16, _I32, _I64)[b - 0xD0](view, pos)[0], pos + size
        if b == 0xCA:
            return _F32(view, pos)[0], pos + 4
        if b == 0xCB:
            return _F64(view, pos)[0], pos + 8
        if 0xD9 <= b <= 0xDB:  # str 8/16/32
            (n,) = (_U8, _U16, _U32)[b - 0xD9](view, pos)
            return self._str(pos + (1 << (b - 0xD9)), n)
        if b in (0xDC, 0xDD):  # array 16/32
            (n,) = (_U16 if b == 0xDC else _U32)(view, pos)
            return self._array(pos + (2 if b == 0xDC else 4), n, depth)
        if b in (0xDE, 0xDF):  # map 16/32
            (n,) = (_U16 if b == 0xDE else _U32)(view, pos)
            return self._map(pos + (2 if b == 0xDE else 4), n, depth)
        raise ProtocolError(f"body is not valid msgpack here: type byte 0x{b:02x}")

    def _str(self, pos: int, n: int) -> tuple[str, int]:
        end = self._span(pos, n)
        return str(self.view[pos:end], "utf-8"), end

    def _bin(self, pos: int, n: int) -> tuple[bytes | memoryview, int]:
        end = self._span(pos, n)
        piece = self.view[pos:end]
        return (piece if n >= self.min_view else piece.tobytes()), end

    def _array(self, pos: int, n: int, depth: int) -> tuple[list[Any], int]:
        if depth >= _MAX_DEPTH:
            raise ProtocolError("body is not valid msgpack: nested too deep")
        self._span(pos, n)  # every element takes at least a byte
        out = []
        value = self.value
        for _ in range(n):
            item, pos = value(pos, depth + 1)
            out.append(item)
        return out, pos

    def _map(self, pos: int, n: int, depth: int) -> tuple[dict[str, Any], int]:
        if depth >= _MAX_DEPTH:
            raise ProtocolError("body is not valid msgpack: nested too deep")
        self._span(pos, 2 * n)
        out: dict[str, Any] = {}
        value = self.value
        for _ in range(n):
            key, pos = value(pos, depth + 1)
            if type(key) is not str:
                raise ProtocolError("body is not valid msgpack here: a map key is not a string")
            out[key], pos = value(pos, depth + 1)
        return out, pos
