"""Schema checks: a value of the wrong shape is a SchemaError naming the field's path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgpack
import pytest

from protocol.api.admin import CreatableTopic, CreateTopicsRequest
from protocol.api.metadata import MetadataRequest
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
from protocol.codec import decode_request, encode_request
from protocol.errors import ProtocolError
from protocol.schema import (
    OMITTED_AT_DEFAULT,
    Records,
    SchemaError,
    codec_for,
    from_wire,
    to_wire,
)

PRODUCE = ProduceRequest(1, 100, [ProduceTopic("t", [ProducePartition(0, Records(b"r"))])])
CREATE = CreateTopicsRequest([CreatableTopic("t", 1, 1, [], {"retention.ms": "1"})], 100)


def wire(message: Any) -> Any:
    return msgpack.unpackb(msgpack.packb(to_wire(message)))


def set_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    target = value
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return value


@pytest.mark.parametrize(
    ("message", "path", "bad", "where", "reason"),
    [
        (PRODUCE, (0,), "1", "ProduceRequest.acks", "expected an integer, got str"),
        (PRODUCE, (1,), True, "ProduceRequest.timeout_ms", "expected an integer, got bool"),
        (PRODUCE, (1,), 1.5, "ProduceRequest.timeout_ms", "expected an integer, got float"),
        (PRODUCE, (2, 0, 0), None, "ProduceRequest.topics[0].name", "expected a string"),
        (PRODUCE, (2, 0, 1, 0, 1), "r", "ProduceRequest.topics[0].partitions[0].records",
         "expected bytes, got str"),
        (PRODUCE, (2, 0, 1, 0), [0, b"r", 1], "ProduceRequest.topics[0].partitions[0]",
         "expected 2 fields, got 3"),
        (PRODUCE, (2, 0, 1), [[0, b"r"], 7], "ProduceRequest.topics[0].partitions[1]",
         "expected an array of 2 fields, got int"),
        (PRODUCE, (2,), None, "ProduceRequest.topics", "expected an array, got NoneType"),
        (PRODUCE, (2,), {"a": 1}, "ProduceRequest.topics", "expected an array, got dict"),
        (MetadataRequest(None), (1,), 1, "MetadataRequest.allow_auto_topic_creation",
         "expected a boolean, got int"),
        (MetadataRequest(["a"]), (0, 0), 5, "MetadataRequest.topics[0]", "expected a string"),
        (CREATE, (0, 0, 4), {"retention.ms": 1}, "CreateTopicsRequest.topics[0].configs"
         "['retention.ms']", "expected a string, got int"),
        (CREATE, (0, 0, 4), {b"k": "v"}, "CreateTopicsRequest.topics[0].configs",
         "map keys must be strings, got bytes"),
        (CREATE, (0, 0, 4), [], "CreateTopicsRequest.topics[0].configs", "expected a map"),
    ],
)  # fmt: skip
def test_wrong_shapes_name_their_path(
    message: Any, path: tuple[Any, ...], bad: Any, where: str, reason: str
) -> None:
    value = set_at(wire(message), path, bad)
    with pytest.raises(SchemaError) as info:
        from_wire(type(message), value)
    assert info.value.path == where
    assert reason in info.value.reason
    assert f"{where}: {reason}" in str(info.value)


@pytest.mark.parametrize("value", [None, "x", 5, [], [1, 100], [1, 100, [], None, None]])
def test_wrong_top_level_shape(value: Any) -> None:
    with pytest.raises(SchemaError, match=r"^INVALID_REQUEST: ProduceRequest: expected"):
        from_wire(ProduceRequest, value)


def test_schema_errors_reach_the_wire_as_invalid_request() -> None:
    frame = encode_request(PRODUCE, correlation_id=3)[4:]
    envelope = msgpack.unpackb(frame)
    envelope[4][1] = False  # bool where int
    with pytest.raises(ProtocolError) as info:
        decode_request(msgpack.packb(envelope))
    assert isinstance(info.value, SchemaError)
    assert info.value.code == 42
    assert "ProduceRequest.timeout_ms" in str(info.value)


def test_non_str_keys_never_pass() -> None:
    value = set_at(wire(CREATE), (0, 0, 4), {1: "v"})  # only possible without strict_map_key
    with pytest.raises(SchemaError, match="map keys must be strings, got int"):
        from_wire(CreateTopicsRequest, value)


@dataclass(frozen=True, slots=True)
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError("n must be positive")


@dataclass(frozen=True)
class Holder:  # not slotted: decoded through its __init__
    items: list[Positive]


def test_post_init_refusals_are_schema_errors() -> None:
    assert from_wire(Holder, [[[1], [2]]]) == Holder([Positive(1), Positive(2)])
    with pytest.raises(SchemaError) as info:
        from_wire(Holder, [[[1], [0]]])
    assert info.value.path == "Holder.items[1]"
    assert "n must be positive" in info.value.reason


def test_decoded_messages_are_real_dataclass_instances() -> None:
    decoded = from_wire(ProduceRequest, wire(PRODUCE))
    assert decoded == PRODUCE and hash(decoded.topics[0].partitions[0]) == hash(
        PRODUCE.topics[0].partitions[0]
    )
    with pytest.raises(AttributeError):
        decoded.acks = 5  # type: ignore[misc]
    assert codec_for(ProduceRequest) is codec_for(ProduceRequest)  # compiled once


def test_unsupported_field_types_fail_at_compile_time() -> None:
    @dataclass(frozen=True)
    class Bad:
        pair: tuple[int, int]

    @dataclass(frozen=True)
    class BadUnion:
        either: int | str

    @dataclass(frozen=True)
    class BadMap:
        table: dict[int, str]

    for cls in (Bad, BadUnion, BadMap):
        with pytest.raises(TypeError):
            codec_for(cls)


INNER = ProducePartition(7, Records(b"d"))


@dataclass(frozen=True, slots=True)
class Grown:
    """A message that gained fields at its end, with defaults, since an older peer's build."""

    name: str
    parts: list[int] = field(default_factory=list)
    inner: ProducePartition = INNER
    note: str | None = None


def test_an_array_that_ends_early_gets_the_defaults_of_the_fields_it_leaves_out() -> None:
    """A peer one build older (a rolling upgrade) sends fewer trailing fields: they take their
    defaults (a fresh list each time, a nested message's through its decoder)."""
    first = from_wire(Grown, ["a"])
    assert first == Grown("a", [], ProducePartition(7, Records(b"d")), None)
    assert from_wire(Grown, ["b"]).parts is not first.parts
    assert from_wire(Grown, ["c", [1, 2]]) == Grown("c", [1, 2])
    assert from_wire(Grown, ["d", [], [1, b"r"], "n"]).inner == ProducePartition(1, Records(b"r"))


@pytest.mark.parametrize(
    ("value", "reason"),
    [([], "expected 4 fields, got 0"), (["a", [], [1, b"r"], None, 5], "expected 4 fields, got 5")],
)
def test_a_field_without_a_default_or_one_too_many_is_still_refused(
    value: list[Any], reason: str
) -> None:
    with pytest.raises(SchemaError, match=reason):
        from_wire(Grown, value)


def test_an_older_clients_produce_without_a_transactional_id_is_read() -> None:
    """A whole request frame as a build before Produce's transactional id sends it."""
    envelope = msgpack.unpackb(encode_request(PRODUCE, correlation_id=3)[4:])
    envelope[4] = envelope[4][:3]
    request = decode_request(msgpack.packb(envelope)).body
    assert request == PRODUCE and request.transactional_id is None


@dataclass(frozen=True, slots=True)
class Older:
    """Grown's shape a build before `errors` was added."""

    name: str


@dataclass(frozen=True, slots=True)
class Newer:
    name: str
    errors: list[int] = field(default_factory=list, metadata=OMITTED_AT_DEFAULT)


def test_a_trailing_field_at_its_default_is_left_off_for_an_older_peer() -> None:
    """OMITTED_AT_DEFAULT (Produce's record_errors): a peer one build older reads the message
    while the new field holds its default; it is on the wire, and read back, when it does not."""
    assert to_wire(Newer("a")) == ["a"]
    assert from_wire(Older, to_wire(Newer("a"))) == Older("a")
    assert to_wire(Newer("b", [3])) == ["b", [3]]
    assert from_wire(Newer, to_wire(Newer("b", [3]))) == Newer("b", [3])


def test_only_trailing_fields_with_defaults_may_be_omitted() -> None:
    @dataclass(frozen=True)
    class Middle:
        errors: list[int] = field(default_factory=list, metadata=OMITTED_AT_DEFAULT)
        name: str = ""

    @dataclass(frozen=True)
    class Required:
        errors: list[int] = field(metadata=OMITTED_AT_DEFAULT)

    for cls in (Middle, Required):
        with pytest.raises(TypeError, match="omitted"):
            codec_for(cls)
