"""The golden-bytes harness for the doors' codecs (broker/codecs/): a `Case` is one wire
request and answer on one door and version, `roundtrip` runs it through the table's codec, and
`every_case()` gathers the CASES of every test_*codecs.py module here, so the check that each
row of the table has golden bytes on each door sees all of them. Frames are compared byte for
byte with what the wire carried when they were written (Kafka's layouts: size, correlation id,
the flexible header's tagged-field byte, the body; the native door's msgpack envelope
[api_key, version, correlation id, client id, body]).
"""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker import apis
from protocol import codec as native_codec
from protocol.kafka import codec as kafka_codec

CORR = 7
TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")


@dataclass(frozen=True)
class Case:
    name: str
    key: int
    version: int  # -1: the native door
    request: Callable[[], Any]  # the wire request: a native dataclass or a kio entity
    model: Any  # what the codec decodes it to
    result: Any  # an operation's result
    request_hex: str
    response_hex: str


def kio(key: int, version: int, /, **fields: Any) -> Callable[[], Any]:
    def build() -> Any:
        cls = kafka_codec.request_class(key, version)
        values = {k: (f(cls) if callable(f) else f) for k, f in fields.items()}
        return kafka_codec.make(cls, **values)

    return build


def nested(name: str, /, **fields: Any) -> Callable[[Any], Any]:
    """A nested entity of the request; fields may be `nested` / `many` builders in turn."""

    def build(cls: Any) -> Any:
        values = {k: (f(cls) if callable(f) else f) for k, f in fields.items()}
        return kafka_codec.make(kafka_codec.nested(cls, name), **values)

    return build


def many(*builders: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda cls: tuple(b(cls) for b in builders)


def roundtrip(case: Case) -> tuple[bytes, Any, bytes]:
    """(request frame, the decoded model, response frame) through the door's codec."""
    row = apis.BY_KEY[case.key]
    if case.version < 0:
        assert row.native is not None
        frame = native_codec.encode_request(case.request(), CORR, "c")
        request: Any = native_codec.decode_request(frame[4:])
        model = row.native.codec.decode(request)
        answer = native_codec.encode_response(CORR, row.native.codec.encode(request, case.result))
        return frame, model, answer
    assert row.kafka is not None
    frame = kafka_codec.encode_request(case.key, case.version, CORR, case.request())
    request = kafka_codec.decode_request(frame[4:], apis.KAFKA_SERVED, "/127.0.0.1")
    model = row.kafka.codec.decode(request)
    answer = kafka_codec.encode_response(request, row.kafka.codec.encode(request, case.result))
    return frame, model, answer


def every_case() -> list[Case]:
    """The CASES of every test_*codecs.py module in this directory."""
    cases: list[Case] = []
    for path in sorted(Path(__file__).parent.glob("test_*codecs.py")):
        module = importlib.import_module(f"{__package__}.{path.stem}")
        cases.extend(module.CASES)
    return cases


def check(case: Case) -> None:
    frame, model, answer = roundtrip(case)
    assert frame.hex() == case.request_hex
    assert model == case.model
    assert answer.hex() == case.response_hex
