"""Fuzzing every decoder a peer's bytes reach: only odradek's own typed errors may come out.

Random bytes and mutated valid bytes (bit flips, truncations, insertions, overwrites) go to the
frame decoder, the request decoder, the response decoders and the batch parser. Anything other
than an OdradekError subclass (TypeError, IndexError, struct.error, a msgpack exception,
RecursionError, MemoryError...) fails the test. Hostile msgpack (huge declared lengths, deep
nesting, gzip bombs) must be refused without allocating.
"""

from __future__ import annotations

import struct
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import crc32c
import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import batch
from protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_correlation_id,
    split_response,
)
from protocol.errors import OdradekError, ProtocolError
from protocol.framing import FrameDecoder
from protocol.registry import all_specs
from tests.unit.protocol.strategies import message_strategy

SPECS = all_specs()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def survives(fn: Callable[..., Any], *args: Any) -> None:
    """Call fn; an OdradekError is an acceptable answer to bad bytes, anything else is a bug."""
    try:
        result = fn(*args)
        if hasattr(result, "__next__"):
            list(result)
    except OdradekError:
        pass


# ----- mutations ---------------------------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "overwrite", "delete"]))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            i = min(at, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "overwrite":
            chunk = draw(st.sampled_from([b"\xff\xff\xff\xff", b"\x00", b"\xdd", b"\xc6", b"\x7f"]))
            data[at : at + len(chunk)] = chunk
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 8))]
    return bytes(data)


def request_frames() -> st.SearchStrategy[bytes]:
    return st.one_of(
        [message_strategy(s.request).map(lambda m: encode_request(m, 7, "c")[4:]) for s in SPECS]
    )


def response_frames() -> st.SearchStrategy[bytes]:
    return st.one_of(
        [message_strategy(s.response).map(lambda m: encode_response(7, m)[4:]) for s in SPECS]
    )


RECORD = st.tuples(
    st.none() | st.binary(max_size=8),
    st.none() | st.binary(max_size=16),
    st.none() | st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4))),
    st.integers(0, 2**40),
)
BATCHES = st.builds(
    batch.build_batch,
    st.lists(RECORD, min_size=1, max_size=5),
    codec=st.sampled_from([batch.CODEC_NONE, batch.CODEC_GZIP]),
)


def reseal(data: bytes) -> bytes:
    """Fix the CRC (and batch length) after a mutation, so the records decoder sees it."""
    if len(data) < batch.HEADER_BYTES:
        return data
    out = bytearray(data)
    struct.pack_into(">i", out, 8, len(out) - batch.LENGTH_PREFIX_BYTES)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[batch.CRC_START :])))
    return bytes(out)


# ----- the targets -------------------------------------------------------------------------


def feed_all(data: bytes, split: int) -> None:
    decoder = FrameDecoder(max_frame_bytes=1 << 16)
    for i in range(0, len(data), split):
        try:
            for frame in decoder.feed(data[i : i + split]):
                survives(decode_request, frame)
        except ProtocolError:
            with pytest.raises(ProtocolError):
                decoder.feed(b"\x00\x00\x00\x01x")  # dead after a framing error
            return


def all_request_and_response_decoders(data: bytes) -> None:
    survives(decode_request, data)
    peek_correlation_id(data)
    survives(split_response, data)
    for spec in SPECS:
        survives(decode_response, data, spec.response)


def all_batch_parsers(data: bytes) -> None:
    survives(batch.read_header, data)
    survives(batch.peek_offset_and_length, data)
    survives(batch.validate, data)
    survives(batch.validate, data, 0, 64)
    survives(batch.iter_batches, data)
    survives(batch.iter_batches, data, False)
    survives(batch.decode_records, data)
    survives(batch.decode_records, data, 0, 1000)
    survives(batch.decode_all, data)


@FUZZ
@given(data=st.binary(max_size=200), split=st.integers(1, 64))
def test_random_bytes(data: bytes, split: int) -> None:
    feed_all(data, split)
    all_request_and_response_decoders(data)
    all_batch_parsers(data)


@FUZZ
@given(data=mutated(request_frames()), split=st.integers(1, 64))
def test_mutated_requests(data: bytes, split: int) -> None:
    all_request_and_response_decoders(data)
    feed_all(struct.pack(">i", len(data)) + data, split)


@FUZZ
@given(data=mutated(response_frames()))
def test_mutated_responses(data: bytes) -> None:
    all_request_and_response_decoders(data)


@FUZZ
@given(data=mutated(BATCHES))
def test_mutated_batches(data: bytes) -> None:
    all_batch_parsers(data)
    all_batch_parsers(reseal(data))
    all_batch_parsers(data + data)


MSGPACK_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats()
    | st.text(max_size=6) | st.binary(max_size=6),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)  # fmt: skip


def batch_with_payload(rows: Any, count: int, codec: int) -> bytes:
    payload = msgpack.packb(rows, use_bin_type=True)
    if codec == batch.CODEC_GZIP:
        payload = zlib.compress(payload)
    return batch._assemble(payload, count, 0, 0, 0, codec, -1, -1, -1)


@FUZZ
@given(
    rows=MSGPACK_VALUES
    | st.lists(st.lists(MSGPACK_VALUES, min_size=5, max_size=5), min_size=1, max_size=4),
    codec=st.sampled_from([batch.CODEC_NONE, batch.CODEC_GZIP]),
)
def test_well_sealed_batches_with_arbitrary_records(rows: Any, codec: int) -> None:
    count = len(rows) if isinstance(rows, list) and rows else 1
    try:
        _, records = batch.decode_records(batch_with_payload(rows, count, codec))
    except batch.InvalidBatchError:
        return
    for i, r in enumerate(records):  # whatever decodes has the declared types
        assert r.offset == i and type(r.timestamp) is int
        assert r.key is None or type(r.key) is bytes
        assert r.value is None or type(r.value) is bytes
        assert r.headers is None or all(
            type(k) is str and (v is None or type(v) is bytes) for k, v in r.headers
        )


def test_records_of_the_wrong_types_are_refused() -> None:
    good = [0, 0, b"k", b"v", [["h", b"x"]]]
    assert batch.decode_records(batch_with_payload([good], 1, 0))[1][0].headers == [("h", b"x")]
    for i, wrong in [
        (0, "0"), (0, 1), (0, 0.0), (1, "1"), (1, None), (2, "k"), (3, 5),
        (4, {"h": b"x"}), (4, ["hx"]), (4, [["h"]]), (4, [[1, b"x"]]), (4, [["h", "x"]]),
    ]:  # fmt: skip
        row = list(good)
        row[i] = wrong
        with pytest.raises(batch.InvalidBatchError, match="record 0"):
            batch.decode_records(batch_with_payload([row], 1, 0))
    with pytest.raises(batch.InvalidBatchError, match="record 0"):
        batch.decode_records(batch_with_payload([{"a": 1}], 1, 0))
    with pytest.raises(batch.InvalidBatchError, match="count"):
        batch.decode_records(batch_with_payload([good], 2, 0))


@FUZZ
@given(value=MSGPACK_VALUES, envelope=st.integers(0, 3))
def test_well_formed_msgpack_of_the_wrong_shape(value: Any, envelope: int) -> None:
    if envelope == 1:
        value = [0, 0, 1, None, value]
    elif envelope == 2:
        value = [1, 0, value]
    elif envelope == 3:
        value = [3, 0, 1, "c", [value, False]]
    all_request_and_response_decoders(msgpack.packb(value, use_bin_type=True))


# ----- hostile msgpack ---------------------------------------------------------------------

BOMBS = {
    "array32": b"\xdd\xff\xff\xff\xff",
    "map32": b"\xdf\xff\xff\xff\xff",
    "bin32": b"\xc6\xff\xff\xff\xff",
    "str32": b"\xdb\xff\xff\xff\xff",
    "ext32": b"\xc9\xff\xff\xff\xff\x01",
    "envelope_array32": b"\x95\x00\x00\x01\xc0\xdd\xff\xff\xff\xff",
    "nested_array16": b"\x95\x00\x00\x01\xc0" + b"\xdc\xff\xff" * 30,
}


def peak_bytes(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        survives(fn)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("bomb", list(BOMBS.values()), ids=list(BOMBS))
def test_msgpack_bombs_do_not_allocate(bomb: bytes) -> None:
    for fn in (
        lambda: decode_request(bomb),
        lambda: split_response(bomb),
        lambda: peek_correlation_id(bomb),
        lambda: batch.decode_records(batch._assemble(bomb, 1, 0, 0, 0, 0, -1, -1, -1)),
    ):
        with pytest.raises(OdradekError):
            result = fn()
            if result is None:  # peek_correlation_id answers None rather than raising
                raise ProtocolError("no correlation id")
        assert peak_bytes(fn) < 256 * 1024


@pytest.mark.parametrize("depth", [100, 2000, 100_000])
def test_deep_nesting_is_a_protocol_error(depth: int) -> None:
    deep = b"\x91" * depth + b"\xc0"
    for body in (deep, b"\x95\x03\x00\x01\xc0\x92" + deep + b"\xc2"):
        with pytest.raises(ProtocolError):
            decode_request(body)
        with pytest.raises(ProtocolError):
            split_response(body)
        with pytest.raises(ProtocolError):
            decode_response(body, SPECS[0].response)
    with pytest.raises(batch.InvalidBatchError):
        batch.decode_records(batch._assemble(deep, 1, 0, 0, 0, 0, -1, -1, -1))


def test_gzip_bomb_is_refused() -> None:
    rows = [[0, 0, None, b"\x00" * 2_000_000, None]]
    bomb = batch_with_payload(rows, 1, batch.CODEC_GZIP)
    assert len(bomb) < 10_000
    with pytest.raises(batch.InvalidBatchError, match="inflate"):
        batch.decode_records(bomb, max_records_bytes=100_000)
    assert peak_bytes(lambda: batch.decode_records(bomb, max_records_bytes=100_000)) < 1_000_000
    assert batch.decode_records(bomb)[1][0].value == b"\x00" * 2_000_000  # within the default


def test_truncated_gzip_is_refused() -> None:
    built = batch.build_batch([(b"k", b"v" * 100, None, 1)], codec=batch.CODEC_GZIP)
    with pytest.raises(batch.InvalidBatchError, match="truncated"):
        batch.decode_records(reseal(built[:-6]))
    with pytest.raises(batch.InvalidBatchError, match="garbage"):
        batch.decode_records(reseal(built + b"junk"))
