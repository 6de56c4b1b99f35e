"""The C record walker (protocol/_records.c through protocol/columns.py): golden bytes, round
trips against aiokafka's builder (protocol.batch.build_batch) for records and for Arrow
buffers, every codec, ranges cut inside batches, and malformed input (hand-made and fuzzed
with hypothesis) raising CorruptRecordError and nothing else."""

from __future__ import annotations

import contextlib
import os
import platform
import random
import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.types import ConsumerRecord
from protocol import batch
from protocol.batch import build_batch, decode_all, iter_batches, stamp
from protocol.columns import (
    CorruptRecordError,
    Segment,
    segments,
    to_buffers,
    to_records,
)

TS = 1_700_000_000_000


def stamped(raw: bytes, base: int, attributes: int | None = None) -> bytes:
    out = bytearray(raw)
    if attributes is not None:
        struct.pack_into(">h", out, batch.ATTRIBUTES_AT, attributes)
        struct.pack_into(">I", out, batch.CRC_AT, crc32c.crc32c(bytes(out[batch.CRC_START :])))
    stamp(out, base, 0)
    return bytes(out)


def decode(data: bytes, start: int = 0, until: int | None = None) -> list[ConsumerRecord]:
    segs, _ = segments(data, list(iter_batches(data)), start, until)
    return to_records(ConsumerRecord, "t", 2, segs)


def rows_strategy() -> st.SearchStrategy[list[batch.RecordInput]]:
    blob = st.none() | st.binary(max_size=40)
    header = st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8))
    row = st.tuples(blob, blob, st.none() | st.lists(header, max_size=3),
                    st.integers(TS - 10**6, TS + 10**6))  # fmt: skip
    return st.lists(row, min_size=1, max_size=20)


def test_golden_bytes() -> None:
    """One record written by hand, byte by byte, as the layout says."""
    record = bytes([
        0x1A,  # length 13 (zigzag)
        0x00,  # attributes
        0x04,  # timestamp delta 2
        0x00,  # offset delta 0
        0x02, ord("k"),  # key: length 1
        0x06, ord("v"), ord("a"), ord("l"),  # value: length 3
        0x02,  # one header
        0x02, ord("h"), 0x01,  # key "h", null value
    ])  # fmt: skip
    assert record[0] // 2 == len(record) - 1
    got = to_records(ConsumerRecord, "t", 0, [(record, 0, len(record), 7, 0, 100, 100, 1, 0,
                                                1, False)])  # fmt: skip
    assert got == [ConsumerRecord("t", 0, 7, 102, b"k", b"val", [("h", None)])]
    buffers = to_buffers([(record, 0, len(record), 7, 0, 100, 100, 1, 0, 1, False)], True, 1000)
    assert buffers.length == 1 and struct.unpack("<qq", buffers.offsets + buffers.timestamps) == (
        7, 102_000,
    )  # fmt: skip
    assert buffers.values.data == b"val" and buffers.values.validity is None
    assert buffers.headers is not None and buffers.headers.keys.data == b"h"
    assert buffers.headers.values.null_count == 1


@settings(max_examples=60, deadline=None)
@given(rows=rows_strategy(), codec=st.sampled_from(sorted(batch.CODECS.values())))
def test_round_trip_against_aiokafkas_builder(rows: list[batch.RecordInput], codec: int) -> None:
    data = stamped(build_batch(rows, codec=codec), 40)
    expected = [ConsumerRecord("t", 2, r.offset, r.timestamp, r.key, r.value, r.headers)
                for r in decode_all(data)]  # fmt: skip
    assert decode(data, 40) == expected
    assert all(type(r) is ConsumerRecord for r in decode(data))


def test_several_batches_every_codec_cut_to_a_range() -> None:
    data, expected, base = b"", [], 0
    for codec in sorted(batch.CODECS.values()):
        rows: list[batch.RecordInput] = [
            (b"k%d" % codec, b"v" * 50, [("c", bytes([codec])), ("n", None)], TS + codec),
            (None, None, None, TS - 1),
            (b"", b"x", [], TS),
        ]
        data += stamped(build_batch(rows, codec=codec), base)
        expected += [ConsumerRecord("t", 2, base + i, ts, k, v, list(h) if h else None)
                     for i, (k, v, h, ts) in enumerate(rows)]  # fmt: skip
        base += len(rows)
    assert decode(data) == expected
    assert decode(data, 4, 11) == expected[4:11]
    segs, next_offset = segments(data, list(iter_batches(data)), 4, 11)
    assert next_offset == 11 and len(segs) == 3


def test_arrow_columns_match_the_records() -> None:
    pa = pytest.importorskip("pyarrow")
    from protocol.columns import arrow_arrays

    data = b""
    for base, codec in ((0, batch.CODEC_NONE), (3, batch.CODEC_LZ4)):
        rows: list[batch.RecordInput] = [
            (b"k", b"v1", [("h\u00e9", b"x"), ("n", None)], TS),
            (None, b"", None, TS + 5),
            (b"", None, [("a", b"")], TS - 5),
        ]
        data += stamped(build_batch(rows, codec=codec), base)
    log_append = stamped(build_batch([(None, b"z", None, TS)]), 6,
                         attributes=batch.TIMESTAMP_TYPE_BIT)  # fmt: skip
    data += log_append
    segs, _ = segments(data, list(iter_batches(data)), 1, 7)
    arrays = arrow_arrays(to_buffers(segs, True, 1000))
    for array in arrays.values():
        array.validate(full=True)
    records = decode(data, 1, 7)
    assert arrays["offset"].to_pylist() == [r.offset for r in records] == list(range(1, 7))
    assert arrays["key"].to_pylist() == [r.key for r in records]
    assert arrays["value"].to_pylist() == [r.value for r in records]
    assert arrays["timestamp"].to_pylist() == [r.timestamp * 1000 for r in records]
    assert arrays["timestampType"].to_pylist() == [0, 0, 0, 0, 0, 1]
    assert arrays["headers"].to_pylist() == [
        None if r.headers is None else [{"key": k, "value": v} for k, v in r.headers]
        for r in records
    ]
    assert arrays["headers"].type.value_type == pa.struct(
        [pa.field("key", pa.string()), pa.field("value", pa.binary())]
    )


def test_columns_past_the_kept_records_bound_are_walked_again_the_same() -> None:
    """Pass 1 keeps up to KEPT_RECORDS_MAX parsed records for pass 2; past it pass 2 walks the
    records again: both fill the same columns (values, offsets, a cut range)."""
    from protocol import _records

    n = _records.KEPT_RECORDS_MAX + 1
    values = [i.to_bytes(3, "big") for i in range(n)]
    for m in (n, n - 1):  # a batch's records past the bound (walked again), and at it (kept)
        data = stamped(batch.build_batch_from_values(values[:m], TS), 0)
        for lo, hi in ((0, m), (5, m - 7)):
            segs, _ = segments(data, list(iter_batches(data)), lo, hi)
            cols = to_buffers(segs, False)
            assert cols.length == hi - lo
            assert cols.values.data == b"".join(values[lo:hi])
            offsets = struct.unpack(f"<{hi - lo}q", cols.offsets)
            assert offsets == tuple(range(lo, hi))
            assert cols.values.offsets[-4:] == struct.pack("<i", 3 * (hi - lo))


def test_control_batches_are_skipped_but_passed() -> None:
    control = stamped(build_batch([(b"\0\0\0\0", b"", None, TS)]), 1,
                      attributes=batch.CONTROL_BIT | batch.TRANSACTIONAL_BIT)  # fmt: skip
    data = stamped(build_batch([(None, b"a", None, TS)]), 0) + control
    segs, next_offset = segments(data, list(iter_batches(data)), 0)
    assert len(segs) == 1 and next_offset == 2


def _one_record(fields: bytes) -> Segment:
    body = fields
    return (bytes([len(body) * 2]) + body, 0, len(body) + 1, 0, 0, TS, TS, 1, 0, 1, False)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (b"\x00\x00\x00\x0a" + b"abc", "past the end"),  # key length 5, 3 key bytes
        (b"\x00\x00\x00\x01\x01\x00\x00", "bytes after"),  # 0 headers, then a stray byte
        (b"\x00\x00\x02\x01\x01\x00", "offset delta"),  # offset delta 1 for record 0
        (b"\x00\x00\x00\x03\x01\x00\x00", "negative"),  # key length -2
        (b"\x00\x00\x00\x01\x01\x02\x02\xff\x01", "UTF-8"),  # header key 0xff
        (b"\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", "timestamp delta"),  # an 11-byte varlong
        (b"\x00\x00\x00\x01\x01\x7f", "header count"),  # -64 headers
    ],
)
def test_malformed_records_name_what_is_wrong(fields: bytes, message: str) -> None:
    seg = _one_record(fields)
    with pytest.raises(CorruptRecordError, match=message):
        to_records(ConsumerRecord, "t", 0, [seg])
    if message != "UTF-8":  # only Arrow's header keys are checked as UTF-8 while sizing
        with pytest.raises(CorruptRecordError, match=message):
            to_buffers([seg], True)


def test_a_section_with_fewer_records_than_its_count() -> None:
    raw = stamped(build_batch([(None, b"a" * 20, None, TS), (None, b"b" * 20, None, TS)]), 0)
    start, end = batch.HEADER_BYTES, len(raw)
    seg = (raw, start, end, 0, 2, TS, TS, 3, 0, 3, False)  # the header would say 3 records
    with pytest.raises(CorruptRecordError, match="record 2"):
        to_records(ConsumerRecord, "t", 0, [seg])
    seg = (raw, start, end, 0, 0, TS, TS, 1, 0, 1, False)
    with pytest.raises(CorruptRecordError, match="follow the last record"):
        to_buffers([seg], False)


def test_a_count_the_section_cannot_hold_is_refused_before_anything_is_sized() -> None:
    raw = stamped(build_batch([(None, b"a", None, TS)]), 0)
    n = 2**31 - 1
    seg = (raw, batch.HEADER_BYTES, len(raw), 0, n, TS, TS, n, 0, n, False)
    with pytest.raises(CorruptRecordError, match="cannot fit"):
        to_records(ConsumerRecord, "t", 0, [seg])
    with pytest.raises(CorruptRecordError, match="cannot fit"):
        to_buffers([seg], True)


def test_bad_segments_are_usage_errors_not_reads_out_of_bounds() -> None:
    for seg in [(b"abc", 0, 9, 0, 0, 0, 0, 1, 0, 1, False),
                (b"abc", 0, 3, 0, 0, 0, 0, 1, 0, 2, False),  # lo..hi past the last delta
                (b"abc", 0, 3, 0, 0, 0, 0, 2, 0, 1, False),  # more records than deltas
                (b"abc", 0, 3, 0, -1, 0, 0, 0, 0, 0, False),
                (b"abc", -1, 3, 0, 0, 0, 0, 1, 0, 1, False)]:  # fmt: skip
        with pytest.raises(ValueError, match="bounds"):
            to_records(ConsumerRecord, "t", 0, [seg])  # type: ignore[list-item]


def _garble(raw: bytes, cuts: list[tuple[int, int]], truncate: int) -> bytes:
    out = bytearray(raw)
    for at, value in cuts:
        out[batch.HEADER_BYTES + at % max(len(raw) - batch.HEADER_BYTES, 1)] = value
    return bytes(out[: max(len(out) - truncate, batch.HEADER_BYTES)])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=rows_strategy(),
    cuts=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    truncate=st.integers(0, 30),
    headers=st.booleans(),
)
def test_fuzzed_sections_raise_only_the_typed_error(
    rows: list[batch.RecordInput], cuts: list[tuple[int, int]], truncate: int, headers: bool
) -> None:
    raw = _garble(build_batch(rows), cuts, truncate)
    n = len(rows)
    seg = (raw, batch.HEADER_BYTES, len(raw), 0, n - 1, TS, TS, n, 0, n, False)
    decode_or_typed_error(seg, headers)


def decode_or_typed_error(seg: Segment, headers: bool) -> None:
    """Both decoders on `seg`: whole results or CorruptRecordError, nothing else."""
    try:
        records = to_records(ConsumerRecord, "t", 0, [seg])
        assert len(records) == seg[9] - seg[8]
    except CorruptRecordError:
        pass
    with contextlib.suppress(CorruptRecordError):
        assert to_buffers([seg], headers, 1000).length == seg[9] - seg[8]


def test_random_bytes_raise_only_the_typed_error() -> None:
    rng = random.Random(12)
    for _ in range(3000):
        raw = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 60)))
        count = rng.randrange(1, 5)
        seg = (raw, 0, len(raw), 0, count - 1, TS, TS, count, 0, count, False)
        decode_or_typed_error(seg, True)


FAULTS_SCRIPT = """
import resource, sys
from protocol.columns import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
size = 4 << 20

def answer():
    frame = bytearray(size)  # a fetch answer read into a buffer of its own
    frame[::4096] = bytes(len(frame[::4096]))
    return len(bytes(frame))  # msgpack's copy of its records

for _ in range(3):
    answer()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    answer()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc")
def test_kept_memory_serves_each_fetch_answers_buffers_without_page_faults() -> None:
    """A fetch answer's own buffer and msgpack's copy of its records, 4 MiB each, made and
    freed per answer: with keep_freed_memory the next answer reuses the heap (no page fault),
    where glibc's defaults trim it and fault every page in again. Skipped off glibc (musl's
    malloc has no such knobs: keep_freed_memory() says False), and run without the MALLOC_*
    and GLIBC_TUNABLES variables, which would change what the defaults do."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("MALLOC_") and name != "GLIBC_TUNABLES"
    }

    def faults(mode: str) -> int:
        out = subprocess.run(
            [sys.executable, "-c", FAULTS_SCRIPT, mode], capture_output=True, text=True,
            check=True, cwd=Path(__file__).resolve().parents[2], env=env,
        )  # fmt: skip
        return int(out.stdout)

    pages = 20 * 2 * (4 << 20) // 4096  # 20 answers, two 4 MiB blocks each
    assert faults("default") > pages // 2  # what it saves (the defaults' behaviour)
    assert faults("keep") < pages // 100
