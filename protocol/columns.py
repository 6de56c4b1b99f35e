"""Fetched record batches decoded by our C walker (protocol/_records.c): into Arrow columns for
Spark, or into record tuples for the consumer, with no Python code run per record.

Byte layout: a batch is its 61-byte header then the records section (protocol/batch.py); one
record in that section is

    varint length | int8 attributes | varlong timestamp_delta | varint offset_delta |
    varint key_length, key | varint value_length, value |
    varint header_count, then per header: varint key_length, UTF-8 key, varint value_length, value

(zigzag LEB128 varints; a length of -1 is null; the full description is in _records.c).

The steps:
1. `segments()` turns (position, header) pairs of scanned batches (protocol.batch.iter_batches,
   which checked their CRCs or not, the caller's choice) into one "segment" per batch: its
   records section, decompressed here in Python when the batch is compressed (cramjam, bounded
   by `max_records_bytes`: protocol/compression.py), and which of its records are wanted
   (offsets in [from, until), as offset deltas). Control batches (transaction markers) and
   empty batches are skipped.
2. `to_records()` makes the wanted records into tuples of a NamedTuple class (the consumer's
   ConsumerRecord) in C; `arrow_arrays()` makes them into Arrow arrays (Spark) from buffers the
   C code filled, without copying them again (`pa.Array.from_buffers`).
Every record is walked and checked (varint bounds, lengths within their record, record counts,
offset deltas); bytes that do not hold up raise CorruptRecordError, whatever they are.

Compacted topics: Kafka's log cleaner leaves batches with fewer records than their offset span
(each record keeps its offset delta, so offsets skip), empty batches, and gaps between batches.
A record's offset is base_offset + its offset delta, and a batch always ends at base_offset +
last_offset_delta + 1, whatever is left in it: the offset to read next moves past gaps, never
onto an offset that is gone, and a gap is no error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from protocol import _records, compression
from protocol.batch import (
    CONTROL_BIT,
    DEFAULT_MAX_RECORDS_BYTES,
    HEADER_BYTES,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    InvalidBatchError,
    _check_fields,
)

Buffer = bytes | bytearray | memoryview
Segment = tuple[Buffer, int, int, int, int, int, int, int, int, int, bool]
"""(buffer, start, end, base_offset, last_offset_delta, first_timestamp, max_timestamp,
record_count, lo, hi, log_append): the records with offset deltas in [lo, hi) of the batch
whose records section is buffer[start:end) (0 <= lo <= hi <= last_offset_delta + 1)."""

US_PER_MS = 1000


class CorruptRecordError(InvalidBatchError):
    """A batch whose records section does not hold up (bad varint, a length past its record,
    too few or too many records, offset deltas that do not increase or pass the batch's last)."""


def segments(
    data: Buffer,
    batches: Sequence[tuple[int, BatchHeader]],
    from_offset: int,
    until_offset: int | None = None,
    max_records_bytes: int = DEFAULT_MAX_RECORDS_BYTES,
) -> tuple[list[Segment], int]:
    """The segments of `batches` (found in `data`) holding records with offsets in [from,
    until), and the offset to read next: `until` when a batch reaches past it, else the end of
    the last batch (`from_offset` when there is none). A batch ends at its last offset delta
    whatever records compaction left in it, and a gap before or between batches is skipped.
    Raises InvalidBatchError for a batch that does not hold up or does not decompress."""
    out: list[Segment] = []
    next_offset = from_offset
    until = until_offset if until_offset is not None else 2**63 - 1
    for pos, h in batches:
        if h.next_offset <= from_offset:
            continue
        base = h.base_offset
        if base >= until:  # batches come in offset order: [next_offset, until) holds nothing
            next_offset = max(next_offset, until)
            break
        lo, hi = max(from_offset - base, 0), min(until - base, h.last_offset_delta + 1)
        next_offset = max(next_offset, base + hi)
        if h.attributes & CONTROL_BIT:
            continue  # transaction markers, never user records (Kafka's consumer skips them)
        _check_fields(h, len(data) - pos)
        if h.record_count == 0:
            continue  # compaction left none: the batch only moves the offset on
        records, start, end = _records_section(data, pos, h, max_records_bytes)
        log_append = bool(h.attributes & TIMESTAMP_TYPE_BIT)
        out.append((records, start, end, base, h.last_offset_delta, h.first_timestamp,
                    h.max_timestamp, h.record_count, lo, hi, log_append))  # fmt: skip
    return out, next_offset


def _records_section(
    data: Buffer, pos: int, h: BatchHeader, max_records_bytes: int
) -> tuple[Buffer, int, int]:
    """(buffer, start, end) of the batch's records, inflated if it is compressed."""
    end = pos + h.size
    if h.codec == compression.NONE:
        return data, pos + HEADER_BYTES, end
    try:
        inflated = compression.decompress(
            h.codec, memoryview(data)[pos + HEADER_BYTES : end], max_records_bytes
        )
    except compression.CodecError as exc:
        raise CorruptRecordError(
            f"records at offset {h.base_offset} do not decompress: {exc}"
        ) from None
    return inflated, 0, len(inflated)


def to_records(cls: type, topic: str, partition: int, segs: list[Segment]) -> list[Any]:
    """The wanted records as `cls(topic, partition, offset, timestamp, key, value, headers)`
    tuples (cls: a NamedTuple of those fields), made in C; headers a list of (str, bytes |
    None) pairs, or None for a record without any."""
    try:
        return _records.records(cls, topic, partition, segs)
    except _records.DecodeError as exc:
        raise CorruptRecordError(f"{topic}/{partition}: {exc}") from None


KEPT_ARENAS = 64
"""Freed 1 MiB pymalloc arenas a consumer process keeps for reuse: 64 MiB at most."""
HEAP_BLOCK_BYTES = 32 << 20
"""Blocks glibc's malloc takes from its heap rather than a fresh mapping: up to 32 MiB (the
ceiling of glibc's own dynamic threshold)."""
KEPT_HEAP_BYTES = 64 << 20
"""Freed heap top glibc keeps mapped for reuse: 64 MiB at most per malloc arena (glibc gives
threads that allocate at once arenas of their own: the sync consumer's answers are made on the
caller's thread or the loop's, so up to two)."""


def keep_freed_memory(arenas: int = KEPT_ARENAS) -> bool:
    """Keep freed memory for reuse, process-wide, bounded, instead of page-faulting fresh
    memory in for every poll and every fetch answer (see keep_arenas and keep_heap in
    _records.c):
    - up to `arenas` freed pymalloc arenas: records made and dropped by the hundred thousand
      reuse the last poll's memory (that halved the cost of a record);
    - glibc's malloc takes blocks below HEAP_BLOCK_BYTES from its heap and keeps up to
      KEPT_HEAP_BYTES of it freed: a fetch answer's buffer and its records' copy reuse the last
      answer's (a quarter of a Spark task's CPU per record). False where malloc is not glibc's.
      These are mallopt settings of the whole process (the application a consumer runs in
      included), and they turn glibc's dynamic mmap threshold off; a freed block below a live
      one stays on the heap until the block above is freed, as with any heap block.
    """
    _records.keep_arenas(arenas)
    return _records.keep_heap(HEAP_BLOCK_BYTES, KEPT_HEAP_BYTES)


class BinaryBuffers(NamedTuple):
    """An Arrow binary (or string) column's buffers, as the C walker filled them."""

    validity: bytes | None  # None: no nulls
    null_count: int
    offsets: bytes  # int32[n + 1]
    data: bytes


class HeaderBuffers(NamedTuple):
    """list<struct<key string, value binary>>: a record without headers is a null list."""

    validity: bytes | None
    null_count: int
    offsets: bytes  # int32[n + 1] into the headers
    header_count: int  # headers in all
    keys: BinaryBuffers
    values: BinaryBuffers


class ColumnBuffers(NamedTuple):
    length: int  # records
    offsets: bytes  # int64[n]
    timestamps: bytes  # int64[n], ms times the scale asked for
    timestamp_types: bytes  # int32[n]: 0 CreateTime, 1 LogAppendTime
    keys: BinaryBuffers
    values: BinaryBuffers
    headers: HeaderBuffers | None


def to_buffers(
    segs: list[Segment], include_headers: bool, timestamp_scale: int = 1
) -> ColumnBuffers:
    """The wanted records as Arrow column buffers (filled in C, two passes: check, size and
    keep each record's parsed fields, then fill from them)."""
    try:
        raw = _records.arrow_columns(segs, include_headers, timestamp_scale)
    except _records.DecodeError as exc:
        raise CorruptRecordError(str(exc)) from None
    n, offsets, stamps, types, key, value, headers = raw
    head = None
    if headers is not None:
        valid, nulls, list_offsets, count, k_offsets, k_data, v_valid, v_nulls, v_offs, v_data = (
            headers
        )
        head = HeaderBuffers(valid, nulls, list_offsets, count,
                             BinaryBuffers(None, 0, k_offsets, k_data),
                             BinaryBuffers(v_valid, v_nulls, v_offs, v_data))  # fmt: skip
    return ColumnBuffers(n, offsets, stamps, types, BinaryBuffers(*key), BinaryBuffers(*value),
                         head)  # fmt: skip


def arrow_arrays(buffers: ColumnBuffers) -> dict[str, Any]:
    """{"key", "value", "offset", "timestamp" (int64, as scaled), "timestampType"[, "headers"]}
    as pyarrow arrays over the C-filled buffers, not copied (pyarrow is imported here: the
    Spark extra brings it)."""
    import pyarrow as pa

    n = buffers.length
    out = {
        "key": _binary(pa, pa.binary(), n, buffers.keys),
        "value": _binary(pa, pa.binary(), n, buffers.values),
        "offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(buffers.offsets)]),
        "timestamp": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(buffers.timestamps)]),
        "timestampType": pa.Array.from_buffers(
            pa.int32(), n, [None, pa.py_buffer(buffers.timestamp_types)]
        ),
    }
    h = buffers.headers
    if h is not None:
        pair = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        entries = pa.Array.from_buffers(
            pair, h.header_count, [None], 0,
            children=[_binary(pa, pa.string(), h.header_count, h.keys),
                      _binary(pa, pa.binary(), h.header_count, h.values)],
        )  # fmt: skip
        out["headers"] = pa.Array.from_buffers(
            pa.list_(pa.field("element", pair)), n,
            [_bitmap(pa, h.validity), pa.py_buffer(h.offsets)], h.null_count, children=[entries],
        )  # fmt: skip
    return out


def _binary(pa: Any, kind: Any, n: int, b: BinaryBuffers) -> Any:
    buffers = [_bitmap(pa, b.validity), pa.py_buffer(b.offsets), pa.py_buffer(b.data)]
    return pa.Array.from_buffers(kind, n, buffers, b.null_count)


def _bitmap(pa: Any, validity: bytes | None) -> Any:
    return None if validity is None else pa.py_buffer(validity)
