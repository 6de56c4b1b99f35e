"""A bounds check of a Kafka request body before kio's compiled reader sees it.

kio's reader sizes arrays by the length a request declares before reading them, so a frame of
a few bytes declaring a 2^35-element array makes it allocate terabytes, and an allocation that
fails aborts the process (Rust's allocator: "memory allocation of N bytes failed", SIGABRT).
A broker must never die of bad input, so `check(cls, frame, offset)` walks the body first with
the same schema (the kio entity class's fields, their `kafka_type`, flexible or not, tagged
fields by tag) and refuses any length or element count larger than the bytes left: nothing is
allocated, nothing is decoded, only lengths are read. It is O(size of the body) in Python, a
few microseconds for the requests clients send; records stay one skipped length.

Layouts walked (Kafka's): fixed-width numbers; strings (int16 length, or a compact uvarint
length + 1), bytes and records (int32, or compact), arrays (int32 count, or compact), nullable
structs (an int8 marker, -1 null), and in flexible versions a tagged-field section after every
struct's fields (uvarint count, then uvarint tag, uvarint size, the field's bytes).
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from dataclasses import dataclass
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)

from protocol.errors import ProtocolError

FIXED_BYTES = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8,
    "timedelta_i64": 8, "datetime_i64": 8, "float64": 8, "uuid": 16,
}  # fmt: skip
VARIABLE = {"string", "bytes", "records"}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I8 = struct.Struct(">b")


class OversizeError(ProtocolError):
    """A request declares more than its frame holds."""


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kafka_type: str  # for primitives ("" for structs)
    array: bool
    nested: Any  # the struct's plan, for structs
    nullable_struct: bool


@dataclass(frozen=True, slots=True)
class _Plan:
    flexible: bool
    fields: tuple[_Field, ...]  # in wire order
    tagged: dict[int, _Field]


@functools.cache
def _plan(cls: Any) -> _Plan:
    fields, tagged = [], {}
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        array = isinstance(kind, EntityTupleField | PrimitiveTupleField)
        is_struct = isinstance(kind, EntityField | EntityTupleField)
        entry = _Field(
            f.name,
            "" if is_struct else f.metadata.get("kafka_type", ""),
            array,
            _plan(kind.type_) if is_struct else None,
            isinstance(kind, EntityField) and is_optional(f),
        )
        if "tag" in f.metadata:
            tagged[int(f.metadata["tag"])] = entry
        else:
            fields.append(entry)
    return _Plan(bool(cls.__flexible__), tuple(fields), tagged)


def check(cls: Any, buf: bytes, offset: int) -> None:
    """Raise OversizeError unless every length in the body at `offset` fits in `buf`."""
    try:
        _Walker(buf).struct(_plan(cls), offset)
    except (struct.error, IndexError):
        raise OversizeError("the request ends before its fields do") from None


class _Walker:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.end = len(buf)

    def room(self, at: int, n: int) -> int:
        if n < 0 or n > self.end - at:
            raise OversizeError(f"a length of {n} at byte {at} runs past the request's end")
        return at + n

    def uvarint(self, at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            if at >= self.end or shift > 35:
                raise OversizeError(f"a bad varint at byte {at}")
            b = self.buf[at]
            at += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value, at
            shift += 7

    def length(self, at: int, flexible: bool, wide: bool) -> tuple[int, int]:
        """(length, position after it); -1 for null. `wide`: int32 when not flexible."""
        if flexible:
            n, at = self.uvarint(at)
            return n - 1, at
        if wide:
            return _I32.unpack_from(self.buf, at)[0], at + 4
        return _I16.unpack_from(self.buf, at)[0], at + 2

    def struct(self, plan: _Plan, at: int) -> int:
        for f in plan.fields:
            at = self.field(f, plan.flexible, at)
        if plan.flexible:
            at = self.tags(plan, at)
        return at

    def tags(self, plan: _Plan, at: int) -> int:
        count, at = self.uvarint(at)
        self.room(at, count)
        for _ in range(count):
            tag, at = self.uvarint(at)
            size, at = self.uvarint(at)
            end = self.room(at, size)
            known = plan.tagged.get(tag)
            if known is not None and self.field(known, True, at) > end:
                raise OversizeError(f"tagged field {tag} runs past its size")
            at = end
        return at

    def field(self, f: _Field, flexible: bool, at: int) -> int:
        if f.array:
            n, at = self.length(at, flexible, wide=True)
            if n < 0:
                return at
            self.room(at, n)  # every element takes at least a byte
            for _ in range(n):
                at = self.one(f, flexible, at)
            return at
        return self.one(f, flexible, at)

    def one(self, f: _Field, flexible: bool, at: int) -> int:
        if f.nested is not None:
            if f.nullable_struct:
                marker = _I8.unpack_from(self.buf, at)[0]
                at += 1
                if marker < 0:
                    return at
            return self.struct(f.nested, at)
        fixed = FIXED_BYTES.get(f.kafka_type)
        if fixed is not None:
            return self.room(at, fixed)
        if f.kafka_type in VARIABLE:
            n, at = self.length(at, flexible, wide=f.kafka_type != "string")
            return at if n < 0 else self.room(at, n)
        raise OversizeError(f"field {f.name}: unknown kind {f.kafka_type!r}")


_NO_TAGS = _Plan(True, (), {})


def check_header(buf: bytes, flexible: bool) -> None:
    """The request header: 8 fixed bytes, client_id (int16 length even in flexible versions),
    then, when flexible (header v2), a tagged-field section."""
    w = _Walker(buf)
    try:
        at = w.room(0, 8)
        n, at = w.length(at, False, wide=False)
        at = at if n < 0 else w.room(at, n)
        if flexible:
            w.tags(_NO_TAGS, at)
    except (struct.error, IndexError):
        raise OversizeError("the request header is cut short") from None
