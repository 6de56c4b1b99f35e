"""Property-based round trips: every registered API's messages, record batches, and framing.

Messages are generated from their type hints (strategies.py), so an API added later is covered
without touching this file.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import batch
from protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_request_chunks,
    encode_response,
    encode_response_chunks,
    split_response,
)
from protocol.framing import FrameDecoder, encode_frame
from protocol.registry import ApiSpec, all_specs, spec_for_key, spec_for_request
from protocol.schema import Records, from_wire, to_wire
from tests.unit.protocol.strategies import message_strategy

SPECS = all_specs()
SPEC_IDS = [s.name for s in SPECS]
FAST = settings(max_examples=40, deadline=None)


def only_frame(wire: bytes) -> bytes:
    frames = FrameDecoder().feed(wire)
    assert len(frames) == 1
    return frames[0]


def test_every_issue_api_is_registered() -> None:
    names = {s.name for s in SPECS}
    assert names >= {
        "Produce", "Fetch", "ListOffsets", "Metadata", "CreateTopics", "DeleteTopics",
        "DescribeConfigs", "LeaderAndIsr", "StopReplica", "UpdateMetadata", "ControlledShutdown",
    }  # fmt: skip
    for spec in SPECS:
        assert spec_for_key(spec.key) is spec
        assert spec_for_request(spec.request) is spec
    assert len({s.key for s in SPECS}) == len(SPECS)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
@FAST
@given(data=st.data())
def test_request_round_trip(spec: ApiSpec, data: st.DataObject) -> None:
    message = data.draw(message_strategy(spec.request))
    corr = data.draw(st.integers(-(2**31), 2**31 - 1))
    client_id = data.draw(st.none() | st.text(max_size=10))
    wire = encode_request(message, corr, client_id)
    request = decode_request(only_frame(wire))
    assert request.body == message
    assert b"".join(encode_request_chunks(message, corr, client_id)) == wire
    assert request.spec is spec
    assert (request.header.api_key, request.header.api_version) == (spec.key, 0)
    assert (request.header.correlation_id, request.header.client_id) == (corr, client_id)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
@FAST
@given(data=st.data())
def test_response_round_trip(spec: ApiSpec, data: st.DataObject) -> None:
    message = data.draw(message_strategy(spec.response))
    corr = data.draw(st.integers(-(2**31), 2**31 - 1))
    wire = encode_response(corr, message)
    body = only_frame(wire)
    assert decode_response(body, spec.response) == (corr, message)
    corr_again, error_code, raw = split_response(body)
    assert (corr_again, error_code) == (corr, 0)
    assert from_wire(spec.response, raw) == message
    chunks = encode_response_chunks(corr, message)
    assert b"".join(c for c in chunks if isinstance(c, bytes)) == wire


@dataclass(frozen=True, slots=True)
class Inner:
    flag: bool
    ratio: float


@dataclass(frozen=True, slots=True)
class EveryType:
    """Uses each type the schema supports, including those no registered API uses yet."""

    number: int
    flag: bool
    ratio: float
    text: str
    blob: bytes
    records: Records
    maybe: int | None
    names: list[str]
    table: dict[str, int]
    nested: Inner
    maybe_nested: Inner | None
    nested_list: list[Inner]
    nested_map: dict[str, list[Inner | None]]
    maybe_table: dict[str, bytes] | None


@FAST
@given(message=message_strategy(EveryType))
def test_every_schema_type_round_trips(message: EveryType) -> None:
    import msgpack

    wire = msgpack.unpackb(msgpack.packb(to_wire(message), use_bin_type=True), raw=False)
    assert from_wire(EveryType, wire) == message


def test_float_field_accepts_an_integer() -> None:
    wire = to_wire(Inner(True, 2.0))
    wire[1] = 2
    decoded = from_wire(Inner, wire)
    assert decoded == Inner(True, 2.0)
    assert type(decoded.ratio) is float


# ----- record batches ----------------------------------------------------------------------

HEADERS = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3)
RECORD = st.tuples(
    st.none() | st.binary(max_size=16),
    st.none() | st.binary(max_size=64),
    st.none() | HEADERS,
    st.integers(0, 2**40) | st.integers(-(2**61), 2**61),
)


@FAST
@given(
    records=st.lists(RECORD, min_size=1, max_size=20),
    base_offset=st.integers(0, 2**62),
    leader_epoch=st.integers(0, 2**31 - 1),
    codec=st.sampled_from(sorted(batch.CODECS.values())),
)
def test_batch_round_trip(
    records: list[batch.RecordInput], base_offset: int, leader_epoch: int, codec: int
) -> None:
    built = bytearray(batch.build_batch(records, codec=codec))
    batch.stamp(built, base_offset, leader_epoch)
    header = batch.validate(built)
    assert header.size == len(built)
    assert (header.base_offset, header.partition_leader_epoch) == (base_offset, leader_epoch)
    assert (header.codec, header.record_count) == (codec, len(records))
    assert header.first_timestamp == records[0][3]
    assert header.max_timestamp == max(r[3] for r in records)
    assert header.next_offset == base_offset + len(records)
    got_header, decoded = batch.decode_records(bytes(built))
    assert got_header == header
    # v2 writes a header count, so an empty header list and none read back alike: None
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in decoded] == [
        (base_offset + i, key, value, list(hs) if hs else None, ts)
        for i, (key, value, hs, ts) in enumerate(records)
    ]


@FAST
@given(
    batches=st.lists(st.lists(RECORD, min_size=1, max_size=4), min_size=1, max_size=5),
    tail=st.integers(0, 60),
)
def test_iter_batches_and_decode_all(batches: list[list[batch.RecordInput]], tail: int) -> None:
    built = [batch.build_batch(rs) for rs in batches]
    buf = b"".join(built)
    positions = [sum(len(b) for b in built[:i]) for i in range(len(built))]
    partial = built[0][: min(tail, len(built[0]) - 1)]  # a torn tail is never yielded
    for check_crc in (True, False):
        found = list(batch.iter_batches(buf + partial, check_crc=check_crc))
        assert [pos for pos, _ in found] == positions
    values = [r.value for r in batch.decode_all(buf + partial)]
    assert values == [r[1] for rs in batches for r in rs]


@FAST
@given(values=st.lists(st.binary(max_size=32), min_size=1, max_size=30), ts=st.integers(0, 2**40))
def test_build_batch_from_values_round_trip(values: list[bytes], ts: int) -> None:
    for codec in batch.CODECS.values():
        _, decoded = batch.decode_records(batch.build_batch_from_values(values, ts, codec))
        assert [(r.value, r.key, r.headers, r.timestamp) for r in decoded] == [
            (v, None, None, ts) for v in values
        ]


# ----- framing -----------------------------------------------------------------------------


@FAST
@given(
    bodies=st.lists(st.binary(min_size=1, max_size=300), max_size=8),
    cuts=st.lists(st.integers(0, 3000), max_size=12),
)
def test_frame_decoder_any_split(bodies: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(b) for b in bodies)
    points = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    decoder = FrameDecoder(max_frame_bytes=300)
    got: list[bytes] = []
    for start, end in itertools.pairwise(points):
        got += decoder.feed(memoryview(stream)[start:end])
        assert decoder.buffered_bytes <= 4 + 300
    assert got == bodies
    assert decoder.buffered_bytes == 0


@FAST
@given(body=st.binary(min_size=1, max_size=50), chunk=st.integers(1, 7))
def test_frame_decoder_accepts_bytes_bytearray_memoryview(body: bytes, chunk: int) -> None:
    stream = encode_frame(body) * 2
    for kind in (bytes, bytearray, memoryview):
        decoder = FrameDecoder()
        got: list[bytes] = []
        for i in range(0, len(stream), chunk):
            got += decoder.feed(kind(stream[i : i + chunk]))
        assert got == [body, body]
        assert all(type(f) is bytes for f in got)
