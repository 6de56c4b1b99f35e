"""The Kafka door's codec: every served API version round-trips, the hand-laid Fetch response
reads back through kio at every version, and bad frames (random, mutated, unserved) only ever
give KafkaRequestError, never another exception."""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records

from broker.apis import KAFKA_SERVED as SERVED  # every API the Kafka door serves
from protocol.codec import FileSlice
from protocol.kafka import codec
from protocol.kafka.codec import KafkaRequestError, decode_request, encode_request
from protocol.kafka.fetch_response import (
    MAX_VERSION,
    MIN_VERSION,
    FetchedPartition,
    encode_fetch_response,
)
from protocol.kafka.versions import API_VERSIONS, FETCH, PRODUCE

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _decodable() -> list[tuple[int, int]]:
    out = []
    for key, (lo, hi) in sorted(SERVED.items()):
        for version in range(lo, hi + 1):
            try:
                codec.request_class(key, version)
            except Exception:
                continue
            out.append((key, version))
    return out


DECODABLE = _decodable()


def test_every_served_api_has_its_top_version_decodable() -> None:
    for key, (_, hi) in SERVED.items():
        assert (key, hi) in DECODABLE, f"api {key} v{hi} is advertised but kio cannot read it"


@pytest.mark.parametrize(("key", "version"), DECODABLE)
@FUZZ
@given(data=st.data())
def test_requests_round_trip(key: int, version: int, data: st.DataObject) -> None:
    body = data.draw(st.from_type(codec.request_class(key, version)))
    frame = encode_request(key, version, 42, body, client_id="cid")
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    try:
        request = decode_request(frame[4:], SERVED)
    except KafkaRequestError as exc:
        # kio writes durations its reader cannot hold (int64 ms beyond Python's timedelta);
        # no client sends those, and the broker refuses them without harm
        assume("overflow" not in str(exc))
        raise
    assert request.header.api_key == key
    assert request.header.api_version == version
    assert request.header.correlation_id == 42
    assert request.header.client_id == "cid"
    assert request.body == body


def test_old_produce_versions_are_advertised_but_refused() -> None:
    assert SERVED[PRODUCE][0] == 0  # librdkafka < 2.11.1 keeps compression only then
    frame = struct.pack(">hhih", PRODUCE, 2, 5, -1) + b"\x00" * 20
    with pytest.raises(KafkaRequestError, match="not served"):
        decode_request(frame, SERVED)


def test_unknown_api_and_unserved_version_are_refused() -> None:
    with pytest.raises(KafkaRequestError, match="api key 999"):
        decode_request(struct.pack(">hhih", 999, 0, 1, -1), SERVED)
    with pytest.raises(KafkaRequestError, match="version 99"):
        decode_request(struct.pack(">hhih", FETCH, 99, 1, -1), SERVED)
    with pytest.raises(KafkaRequestError):
        decode_request(b"\x00\x12", SERVED)


def test_api_versions_of_an_unserved_version_is_handed_over_without_a_body() -> None:
    frame = struct.pack(">hhih", API_VERSIONS, 77, 9, 3) + b"cli" + b"\xff" * 10
    request = decode_request(frame, SERVED)
    assert request.body is None
    assert request.header.correlation_id == 9
    assert request.header.client_id == "cli"


def test_response_header_is_v1_when_flexible_except_api_versions() -> None:
    for key, version, flexible_header in [(3, 9, True), (3, 8, False), (18, 3, False)]:
        cls = codec.request_class(key, version)
        body = codec.make(cls, topics=(), allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False,
                          include_cluster_authorized_operations=False,
                          client_software_name="t", client_software_version="1")  # fmt: skip
        frame = encode_request(key, version, 11, body)
        request = decode_request(frame[4:], SERVED)
        expected = struct.pack(">i", 11) + (b"\x00" if flexible_header else b"")
        assert codec.response_header(request) == expected


# ----- the Fetch response, laid out by hand -------------------------------------------------


def _read_fetch(version: int, chunks: list[Any]) -> Any:
    data = b"".join(c if isinstance(c, bytes) else _slice_bytes(c) for c in chunks)
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4
    corr, body = codec.decode_response(FETCH, version, data[4:])
    assert corr == 77
    return body


def _slice_bytes(s: FileSlice) -> bytes:
    return os.pread(s.fd, s.length, s.position)


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_fetch_response_reads_back_through_kio(version: int) -> None:
    with tempfile.TemporaryFile() as f:
        f.write(b"head" + b"R" * 300 + b"tail")
        f.flush()
        on_disk = FileSlice(f.fileno(), 4, 300)
        by_id = version >= 13  # topics are named by id (KIP-516)
        alpha_id, beta_id = uuid.UUID(int=0xA1), uuid.UUID(int=0xB2)
        topics: list[tuple[str | uuid.UUID | None, list[FetchedPartition]]] = [
            (alpha_id if by_id else "alpha", [
                FetchedPartition(0, 0, 10, 2, on_disk),
                FetchedPartition(1, 1, -1, -1, None),
            ]),
            (beta_id if by_id else "beta", [FetchedPartition(3, 0, 5, 0, b"inline-bytes")]),
        ]  # fmt: skip
        flexible = version >= 12
        header = struct.pack(">i", 77) + (b"\x00" if flexible else b"")
        chunks = encode_fetch_response(version, header, topics, error_code=0)
        assert any(isinstance(c, FileSlice) for c in chunks), "log data stays a file slice"
        body = _read_fetch(version, chunks)
    alpha, beta = body.responses
    if by_id:
        assert alpha.topic_id == alpha_id and beta.topic_id == beta_id
    else:
        assert alpha.topic == "alpha" and beta.topic == "beta"
    p0, p1 = alpha.partitions
    assert (p0.partition_index, p0.error_code.value, p0.high_watermark) == (0, 0, 10)
    assert p0.last_stable_offset == 10
    assert bytes(p0.records) == b"R" * 300
    assert p1.error_code.value == 1 and p1.records is None
    assert bytes(beta.partitions[0].records) == b"inline-bytes"
    if version >= 5:
        assert p0.log_start_offset == 2
    if version >= 7:
        assert body.session_id == 0


# ----- fuzzing: only KafkaRequestError may come out -----------------------------------------


@st.composite
def _mutated_frame(draw: st.DrawFn) -> bytes:
    key, version = draw(st.sampled_from(DECODABLE))
    body = draw(st.from_type(codec.request_class(key, version)))
    data = bytearray(encode_request(key, version, 1, body)[4:])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "overwrite"]))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            i = min(at, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif data:
            i = min(at, len(data) - 1)
            data[i : i + 4] = draw(st.sampled_from([b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff"]))
    return bytes(data)


def _survives(frame: bytes) -> None:
    with contextlib.suppress(KafkaRequestError):
        decode_request(frame, SERVED)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=_mutated_frame())
def test_mutated_frames_of_every_api_give_only_typed_errors(frame: bytes) -> None:
    _survives(frame)


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from(sorted(SERVED)),
    version=st.integers(-2, 20),
    rest=st.binary(max_size=200),
)
def test_random_frames_give_only_typed_errors(key: int, version: int, rest: bytes) -> None:
    _survives(struct.pack(">hhi", key, version, 3) + rest)


def test_huge_declared_lengths_are_refused_before_anything_is_allocated() -> None:
    """kio's reader would allocate what a length declares and abort the process when that
    fails; the guard refuses such a frame first (this test would crash without it)."""
    huge_uvarint = b"\xff\xff\xff\xff\x7f"  # 2^35 - 1
    flexible = struct.pack(">hhih", 3, 9, 1, -1) + b"\x00" + huge_uvarint + b"\x00" * 8
    with pytest.raises(KafkaRequestError, match="past the request's end"):
        decode_request(flexible, SERVED)
    legacy = struct.pack(">hhih", 3, 1, 1, -1) + struct.pack(">i", 2**31 - 1)
    with pytest.raises(KafkaRequestError):
        decode_request(legacy, SERVED)
    for key, version in DECODABLE:  # a body of big lengths, for every API and version
        for filler in (b"\xff" * 12, b"\x7f" * 12, b"\x80" * 12):
            _survives(struct.pack(">hhih", key, version, 1, -1) + filler)
