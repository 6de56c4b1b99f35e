"""Messages as data: frozen dataclasses turned into msgpack arrays and back, with type checks.

A message is a frozen dataclass whose field annotations use only: int, bool, float, str, bytes,
`Records` (bytes on the wire; the broker may put a `FileSlice` there), `X | None`, `list[X]`,
`dict[str, X]`, and other message dataclasses. On the wire a message is a msgpack array of its
field values in declaration order (nested messages nest), so field names cost no bytes.

`codec_for(cls)` compiles, once per class, an encoder (message -> nested lists) and a decoder
(nested lists -> message) that checks every value's type and every array's length, so a peer
sending the wrong shape gets a `SchemaError` (INVALID_REQUEST), never an AttributeError deep in
a handler. An array may end early where the fields left out all have defaults: a peer one
build older, which does not know a field added at the end since, is read with the defaults
(a rolling upgrade). Too many fields, or a field without a default left out, is refused. The
other way round, a trailing field declared with `metadata=OMITTED_AT_DEFAULT` is left off the
wire while it holds its default, so that same older peer still reads the message as long as
the new field says nothing (Produce's `record_errors`: only a refused batch's answer has any).
`bool` is not accepted where `int` is declared (nor the reverse), and a float field accepts an
integer.

Decoding is on the hot path (every Produce request), so the decoders do no string work while
values are good: a `SchemaError` is raised with just its reason, and each enclosing message,
array or map prefixes its part of the path as the error travels up, giving messages such as
`ProduceRequest.topics[0].partitions[2].records: expected bytes, got str`.
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

OMITTED_AT_DEFAULT = types.MappingProxyType({"omitted_at_default": True})
"""A dataclass field's metadata: left off the wire when it and the fields after it (which must
all be so marked) hold their defaults."""

Records = NewType("Records", bytes)
"""A field holding record batches. Encoded as msgpack bin; a broker may fill it with a
FileSlice, which the server sends from the segment file (see codec.encode_response_chunks).
Decoded, it may be a read-only memoryview of the response frame instead of bytes: a client's
Fetch answer asked with `record_views` (transport/connection.py `send_now`)."""

T = TypeVar("T")
Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]
"""A compiled field decoder: takes the wire value, returns the Python value or raises
SchemaError (whose path the caller completes)."""


class SchemaError(ProtocolError):
    """A decoded value does not have the shape its message declares.

    `reason` says what is wrong, `path` where (e.g. `ProduceRequest.topics[0].acks`).
    """

    def __init__(self, message: str | None = None, path: str = "") -> None:
        self.reason = message or "value does not match its schema"
        self.path = path
        super().__init__(f"{path}: {self.reason}" if path else self.reason)

    def under(self, part: str) -> SchemaError:
        """This error one level up: `part` (a field, index or message name) before its path."""
        return SchemaError(self.reason, part + self.path)


@dataclass(frozen=True, slots=True)
class Codec:
    encode: Callable[[Any], list[Any]]
    decode: Callable[..., Any]  # decode(value) -> message; raises SchemaError


_CODECS: dict[type, Codec] = {}
_INNER: dict[type, Decoder] = {}  # message decoders without the root name in error paths
_COMPILING: set[type] = set()


def codec_for(cls: type[T]) -> Codec:
    codec = _CODECS.get(cls)
    if codec is None:
        _COMPILING.add(cls)
        try:
            codec = _compile_message(cls)
        finally:
            _COMPILING.discard(cls)
        _CODECS[cls] = codec
    return codec


def to_wire(msg: Any) -> list[Any]:
    return codec_for(type(msg)).encode(msg)


def holds_records(cls: type) -> bool:
    """Whether a message class has a `Records` field anywhere inside it (nested messages, lists,
    maps, optionals): its encoders may hand the records to the socket apart from the envelope
    (codec.encode_request_chunks). Computed once per class."""
    found = _HOLDS_RECORDS.get(cls)
    if found is None:
        _HOLDS_RECORDS[cls] = False  # a message nesting itself: not (yet) known to
        found = _HOLDS_RECORDS[cls] = any(
            _type_holds_records(tp) for tp in typing.get_type_hints(cls).values()
        )
    return found


def _type_holds_records(tp: Any) -> bool:
    if tp is Records:
        return True
    if dataclasses.is_dataclass(tp):
        return holds_records(tp)  # type: ignore[arg-type]
    return any(_type_holds_records(arg) for arg in typing.get_args(tp))


_HOLDS_RECORDS: dict[type, bool] = {}


def from_wire(cls: type[T], value: Any) -> T:
    result: T = codec_for(cls).decode(value)
    return result


def _compile_message(cls: type) -> Codec:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a message dataclass")
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    encoders = [_encoder(hints[name]) for name in fields]
    defaults = _wire_defaults(cls, hints)
    inner = _message_decoder(cls, fields, [_decoder(hints[name]) for name in fields], defaults)
    _INNER[cls] = inner
    encode = _fields_encoder(fields, encoders)
    k = _omitted_count(cls, len(defaults))
    if k:  # the trailing fields left off at their defaults (OMITTED_AT_DEFAULT)
        head = _fields_encoder(fields[:-k], encoders[:-k])
        encode = _trimming(encode, head, fields[-k:], _raw_defaults(cls)[-k:])
    name = cls.__name__

    def decode(value: Any, where: str = name) -> Any:
        try:
            return inner(value)
        except SchemaError as exc:
            raise exc.under(where) from None

    return Codec(encode, decode)


def _wire_defaults(cls: type, hints: dict[str, Any]) -> list[Callable[[], Any]]:
    """The wire values of the message's trailing fields that have defaults, in order (each a
    maker, so a default list is a new one each time): what an array that ends early gets."""
    made: list[Callable[[], Any]] = []
    for f in reversed(dataclasses.fields(cls)):
        if f.default is not dataclasses.MISSING:
            value, factory = f.default, None
        elif f.default_factory is not dataclasses.MISSING:
            value, factory = None, f.default_factory
        else:
            break
        encode = _encoder(hints[f.name])
        made.append(_wire_default(value, factory, encode))
    return made[::-1]


def _fields_encoder(fields: list[str], encoders: list[Encoder | None]) -> Encoder:
    """message -> the wire values of `fields`, in order."""
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

    return encode


def _omitted_count(cls: type, n_defaults: int) -> int:
    """How many trailing fields are marked OMITTED_AT_DEFAULT (a marked field followed by an
    unmarked one could not be left off, nor one without a default)."""
    marked = [bool(f.metadata.get("omitted_at_default")) for f in dataclasses.fields(cls)]
    k = len(marked) - marked.index(True) if True in marked else 0
    if not all(marked[len(marked) - k :]):
        raise TypeError(f"{cls.__name__}: only trailing fields may be omitted at their default")
    if k > n_defaults:
        raise TypeError(f"{cls.__name__}: a field omitted at its default needs a default")
    return k


def _raw_defaults(cls: type) -> list[Any]:
    """Each field's default value (a factory's made once, to compare with)."""
    return [
        f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        for f in dataclasses.fields(cls)
    ]


def _trimming(full: Encoder, head: Encoder, tail: list[str], defaults: list[Any]) -> Encoder:
    """`head` (the fields before `tail`) while every `tail` field holds its default, else
    `full`: an older peer, which knows only the head, reads the message then."""
    getter = operator.attrgetter(*tail)
    at_default = defaults[0] if len(tail) == 1 else tuple(defaults)

    def trimmed(msg: Any) -> list[Any]:
        return head(msg) if getter(msg) == at_default else full(msg)

    return trimmed


def _wire_default(
    value: Any, factory: Callable[[], Any] | None, encode: Encoder | None
) -> Callable[[], Any]:
    def make() -> Any:
        got = factory() if factory is not None else value
        return got if encode is None or got is None else encode(got)

    return make


def _message_decoder(
    cls: type, fields: list[str], decoders: list[Decoder], defaults: list[Callable[[], Any]]
) -> Decoder:
    """Generate (as dataclasses does for __init__) a decoder specialised to this message.

    For `ProducePartition(partition: int, records: Records)` the generated code reads:

        def decode(v):
            if type(v) is not list: raise SchemaError(...)
            if len(v) != 2: raise SchemaError(...)
            try:
                a0, a1 = v
                if type(a0) is not int: a0 = d0(a0)   # d0 raises SchemaError
                if type(a1) is not bytes: a1 = d1(a1)
            except SchemaError:
                locate(v); raise                      # name the field (error path only)
            o = new(cls); s0(o, a0); s1(o, a1)        # slot setters: no frozen __setattr__
            return o

    Writing the slots directly is three times faster than the frozen dataclass __init__; a
    class with a __post_init__ (which may refuse values) is built by calling it instead.
    """
    n = len(fields)
    shortest = n - len(defaults)
    labels = [f".{f}" for f in fields]
    env: dict[str, Any] = {"SchemaError": SchemaError, "cls": cls, "new": object.__new__}
    env["locate"] = lambda v: _locate(decoders, v, labels)
    env["kind"] = _kind
    env["pad"] = lambda v: v + [make() for make in defaults[len(v) - shortest :]]
    names = ", ".join(f"a{i}" for i in range(n))
    lines = [
        "def decode(v):",
        "    if type(v) is not list:",
        f"        raise SchemaError(f'expected an array of {n} fields, got {{kind(v)}}')",
        f"    if len(v) != {n}:",
        f"        if not {shortest} <= len(v) < {n}:",
        f"            raise SchemaError(f'expected {n} fields, got {{len(v)}}')",
        "        v = pad(v)",
        "    try:",
        f"        {names}, = v" if n else "        pass",
    ]
    for i, d in enumerate(decoders):
        env[f"d{i}"] = d
        plain = _PLAIN_TYPES.get(d)
        if plain is not None:
            env[f"t{i}"] = plain
            lines.append(f"        if type(a{i}) is not t{i}: a{i} = d{i}(a{i})")
        else:
            lines.append(f"        a{i} = d{i}(a{i})")
    lines += ["    except SchemaError:", "        locate(v)", "        raise"]
    lines += _construct(cls, fields, names, env)
    exec("\n".join(lines), env)  # the source is built above from field indices only
    decode: Decoder = env["decode"]
    return decode


def _construct(cls: type, fields: list[str], names: str, env: dict[str, Any]) -> list[str]:
    """Generated lines that build the message from the decoded a0..aN."""
    slots = [cls.__dict__.get(f) for f in fields]
    generated_init = cls.__dataclass_params__.init  # type: ignore[attr-defined]
    if (
        hasattr(cls, "__post_init__")
        or not generated_init
        or not all(isinstance(s, types.MemberDescriptorType) for s in slots)
    ):
        return [
            "    try:",
            f"        return cls({names})",
            "    except (TypeError, ValueError) as exc:  # __post_init__ refusing a value",
            "        raise SchemaError(str(exc)) from None",
        ]
    lines = ["    o = new(cls)"]
    for i, slot in enumerate(slots):
        env[f"s{i}"] = slot.__set__  # type: ignore[union-attr]
        lines.append(f"    s{i}(o, a{i})")
    return [*lines, "    return o"]


def _locate(decoders: list[Decoder], values: list[Any], labels: list[str]) -> None:
    """Decode again, one value at a time, to name the one that failed (error path only)."""
    for d, v, label in zip(decoders, values, labels, strict=True):
        try:
            d(v)
        except SchemaError as exc:
            raise exc.under(label) from None


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
        return _nested(tp)  # type: ignore[arg-type]
    if tp is Records:
        return _check_records
    if origin is list:
        return _list_decoder(_decoder(typing.get_args(tp)[0]))
    if origin is dict:
        key_tp, val_tp = typing.get_args(tp)
        if key_tp is not str:
            raise TypeError("message maps must have str keys")
        return _map_decoder(_decoder(val_tp))
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"only `X | None` unions are supported, not {tp}")
        inner = _decoder(args[0])
        return lambda v: None if v is None else inner(v)
    simple = _SIMPLE.get(tp)
    if simple is None:
        raise TypeError(f"unsupported message field type {tp!r}")
    return simple


def _nested(cls: type) -> Decoder:
    """A nested message's decoder (looked up on first use if the classes refer to each other)."""
    if cls not in _COMPILING:
        codec_for(cls)
        return _INNER[cls]

    def decode(v: Any) -> Any:
        return _INNER[cls](v)

    return decode


def _list_decoder(inner: Decoder) -> Decoder:
    plain = _PLAIN_TYPES.get(inner)

    def decode_list(v: Any) -> list[Any]:
        if type(v) is not list:
            raise SchemaError(f"expected an array, got {_kind(v)}")
        if plain is not None:
            for x in v:
                if type(x) is not plain:
                    break
            else:
                return v  # a fresh list from msgpack, already of the right type
        try:
            return [inner(x) for x in v]
        except SchemaError:
            for i, x in enumerate(v):
                try:
                    inner(x)
                except SchemaError as exc:
                    raise exc.under(f"[{i}]") from None
            raise

    return decode_list


def _map_decoder(inner: Decoder) -> Decoder:
    def decode_map(v: Any) -> dict[str, Any]:
        if type(v) is not dict:
            raise SchemaError(f"expected a map, got {_kind(v)}")
        for k in v:
            if type(k) is not str:
                raise SchemaError(f"map keys must be strings, got {_kind(k)}")
        out = {}
        for k, x in v.items():
            try:
                out[k] = inner(x)
            except SchemaError as exc:
                raise exc.under(f"[{k!r}]") from None
        return out

    return decode_map


def _check_int(v: Any) -> int:
    if type(v) is not int:
        raise SchemaError(f"expected an integer, got {_kind(v)}")
    return v


def _check_bool(v: Any) -> bool:
    if type(v) is not bool:
        raise SchemaError(f"expected a boolean, got {_kind(v)}")
    return v


def _check_float(v: Any) -> float:
    if type(v) is float:
        return v
    if type(v) is int:
        return float(v)
    raise SchemaError(f"expected a number, got {_kind(v)}")


def _check_str(v: Any) -> str:
    if type(v) is not str:
        raise SchemaError(f"expected a string, got {_kind(v)}")
    return v


def _check_bytes(v: Any) -> bytes:
    if type(v) is not bytes:
        if type(v) is memoryview:  # a large bin decoded as a view (protocol/msgview.py)
            return v.tobytes()
        raise SchemaError(f"expected bytes, got {_kind(v)}")
    return v


def _check_records(v: Any) -> bytes | memoryview:
    """Records: bytes, or a read-only view of a response frame (protocol/msgview.py: a client's
    Fetch answer, its records not copied), which readers take wherever bytes go."""
    if type(v) is not bytes and type(v) is not memoryview:
        raise SchemaError(f"expected bytes, got {_kind(v)}")
    return v


_SIMPLE: dict[Any, Decoder] = {
    int: _check_int,
    bool: _check_bool,
    float: _check_float,
    str: _check_str,
    bytes: _check_bytes,
}
_PLAIN_TYPES: dict[Decoder, type] = {
    _check_int: int,
    _check_bool: bool,
    _check_float: float,
    _check_str: str,
    _check_bytes: bytes,
    _check_records: bytes,
}
"""Decoders that return a value of exactly this type unchanged: a list comprehension can skip
the call when `type(v) is t` already holds."""
