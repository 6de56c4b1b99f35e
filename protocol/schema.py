"""Messages as data: frozen dataclasses turned into msgpack arrays and back, with type checks.

A message is a frozen dataclass whose field annotations use only: int, bool, float, str, bytes,
`Records` (bytes on the wire; the broker may put a `FileSlice` there), `X | None`, `list[X]`,
`dict[str, X]`, and other message dataclasses. On the wire a message is a msgpack array of its
field values in declaration order (nested messages nest), so field names cost no bytes.

`codec_for(cls)` compiles, once per class, an encoder (message -> nested lists) and a decoder
(nested lists -> message) that checks every value's type and every array's length, so a peer
sending the wrong shape gets a `SchemaError` (INVALID_REQUEST), never an AttributeError deep in
a handler.
"""

from __future__ import annotations

import dataclasses
import operator
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NewType, TypeVar

from protocol.errors import ProtocolError

Records = NewType("Records", bytes)
"""A field holding record batches. Encoded as msgpack bin; a broker may fill it with a
FileSlice, which the server sends from the segment file (see protocol.chunks)."""

T = TypeVar("T")
Encoder = Callable[[Any], Any]
Decoder = Callable[[Any, str], Any]


class SchemaError(ProtocolError):
    """A decoded value does not have the shape its message declares."""


@dataclass(frozen=True, slots=True)
class Codec:
    encode: Callable[[Any], list[Any]]
    decode: Callable[[Any], Any]


_CODECS: dict[type, Codec] = {}
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def codec_for(cls: type[T]) -> Codec:
    codec = _CODECS.get(cls)
    if codec is None:
        codec = _compile_message(cls)
        _CODECS[cls] = codec
    return codec


def to_wire(msg: Any) -> list[Any]:
    return codec_for(type(msg)).encode(msg)


def from_wire(cls: type[T], value: Any) -> T:
    result: T = codec_for(cls).decode(value)
    return result


def _compile_message(cls: type) -> Codec:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a message dataclass")
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    encoders = [_encoder(hints[name]) for name in fields]
    decoders = [_decoder(hints[name]) for name in fields]
    n = len(fields)
    all_plain = all(e is None for e in encoders)
    getter = operator.attrgetter(*fields) if fields else None

    def encode(msg: Any) -> list[Any]:
        if n == 0:
            return []
        values = [getter(msg)] if n == 1 else list(getter(msg))  # type: ignore[misc]
        if all_plain:
            return values
        return [v if e is None else e(v) for e, v in zip(encoders, values, strict=True)]

    name = cls.__name__

    def decode(value: Any, where: str = name) -> Any:
        if type(value) is not list:
            raise SchemaError(f"{where}: expected an array of {n} fields, got {_kind(value)}")
        if len(value) != n:
            raise SchemaError(f"{where}: expected {n} fields, got {len(value)}")
        args = [d(v, f"{where}.{f}") for d, v, f in zip(decoders, value, fields, strict=True)]
        return cls(*args)

    return Codec(encode, decode)


def _kind(value: Any) -> str:
    return type(value).__name__


def _encoder(tp: Any) -> Encoder | None:
    """None means the value goes on the wire as it is."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return lambda v: codec_for(tp).encode(v)  # type: ignore[arg-type]
    if origin is list:
        item = _encoder(typing.get_args(tp)[0])
        if item is None:
            return None
        return lambda v: [item(x) for x in v]
    if origin is dict:
        val = _encoder(typing.get_args(tp)[1])
        if val is None:
            return None
        return lambda v: {k: val(x) for k, x in v.items()}
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        opt = _encoder(args[0])
        if opt is None:
            return None
        return lambda v: None if v is None else opt(v)
    return None


def _decoder(tp: Any) -> Decoder:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return lambda v, w: codec_for(tp).decode(v, w)  # type: ignore[arg-type,call-arg]
    if tp is Records:
        return _check_bytes
    if origin is list:
        inner = _decoder(typing.get_args(tp)[0])

        def decode_list(v: Any, w: str) -> list[Any]:
            if type(v) is not list:
                raise SchemaError(f"{w}: expected an array, got {_kind(v)}")
            return [inner(x, w) for x in v]

        return decode_list
    if origin is dict:
        key_tp, val_tp = typing.get_args(tp)
        if key_tp is not str:
            raise TypeError("message maps must have str keys")
        inner = _decoder(val_tp)

        def decode_map(v: Any, w: str) -> dict[str, Any]:
            if type(v) is not dict:
                raise SchemaError(f"{w}: expected a map, got {_kind(v)}")
            for k in v:
                if type(k) is not str:
                    raise SchemaError(f"{w}: map keys must be strings")
            return {k: inner(x, w) for k, x in v.items()}

        return decode_map
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"only `X | None` unions are supported, not {tp}")
        inner = _decoder(args[0])
        return lambda v, w: None if v is None else inner(v, w)
    simple = _SIMPLE.get(tp)
    if simple is None:
        raise TypeError(f"unsupported message field type {tp!r}")
    return simple


def _check_int(v: Any, w: str) -> int:
    if type(v) is not int:
        raise SchemaError(f"{w}: expected an integer, got {_kind(v)}")
    return v


def _check_bool(v: Any, w: str) -> bool:
    if type(v) is not bool:
        raise SchemaError(f"{w}: expected a boolean, got {_kind(v)}")
    return v


def _check_float(v: Any, w: str) -> float:
    if type(v) is float:
        return v
    if type(v) is int:
        return float(v)
    raise SchemaError(f"{w}: expected a number, got {_kind(v)}")


def _check_str(v: Any, w: str) -> str:
    if type(v) is not str:
        raise SchemaError(f"{w}: expected a string, got {_kind(v)}")
    return v


def _check_bytes(v: Any, w: str) -> bytes:
    if type(v) is not bytes:
        raise SchemaError(f"{w}: expected bytes, got {_kind(v)}")
    return v


_SIMPLE: dict[Any, Decoder] = {
    int: _check_int,
    bool: _check_bool,
    float: _check_float,
    str: _check_str,
    bytes: _check_bytes,
}
