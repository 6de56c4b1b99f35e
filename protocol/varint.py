"""Kafka's variable-length integers (the record format's varint and varlong, and the flexible
versions' unsigned varint): LEB128, 7 bits a byte, low bits first, the high bit set on every
byte but the last. Signed ones are zigzag-encoded first (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...).
Pure functions over bytes; the record walkers in C (protocol/_records.c and the log cleaner's
_compact.c) read the same format."""

from __future__ import annotations

MAX_VARLONG_SHIFT = 63


def read_zigzag(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The signed varint/varlong at `pos` -> (value, position after it). ValueError when it runs
    past the buffer or past 64 bits."""
    shift = result = 0
    while True:
        if pos >= len(buf) or shift > MAX_VARLONG_SHIFT:
            raise ValueError("a varint runs past its buffer")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def write_uvarint(value: int) -> bytes:
    """An unsigned varint (value >= 0)."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_zigzag(value: int) -> bytes:
    """A signed varint/varlong (an int64: zigzag, then unsigned)."""
    return write_uvarint(((value << 1) ^ (value >> 63)) & ((1 << 64) - 1))
