"""The cleaner's view of one stored batch: its records' keys, and the batch rebuilt with some
of them. Sans-I/O: bytes in, bytes out.

`scan(batch)` decompresses the records section (protocol/compression.py, bounded) and walks
the records (layout in protocol/batch.py) without building objects per record beyond one
tuple: `ScannedRecord(offset, key, tombstone, timestamp, start, body, end)`, where
[start, end) is the record's bytes in the section and `body` is where its key length begins
(after length, attributes, timestamp delta and offset delta).

`rebuild(batch, scanned, keep, delete_horizon_ms)` is Kafka's `MemoryRecords.filterTo` for one
v2 batch. The batch keeps its base offset, last offset delta, partition leader epoch, producer
id, epoch and base sequence and codec; record_count becomes the records kept, which keep their
own offset deltas (so offsets in a batch may skip, and a batch may hold none). When a delete
horizon is set (KIP-534, attribute bit 6), first_timestamp holds it and every kept record's
timestamp delta is rewritten against it, so a record's timestamp never changes; max_timestamp
stays. The CRC is computed afresh. A record is copied byte for byte otherwise.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

import crc32c

from broker.log.segment import H_BASE, H_COUNT, H_LAST_DELTA, H_LENGTH
from protocol import compression
from protocol.batch import (
    CODEC_MASK,
    CONTROL_BIT,
    CRC_START,
    DELETE_HORIZON_BIT,
    HEADER,
    HEADER_BYTES,
    LENGTH_PREFIX_BYTES,
    InvalidBatchError,
)
from protocol.varint import read_zigzag, write_zigzag

_FIRST_TIMESTAMP = struct.Struct(">q")
_COUNT = struct.Struct(">i")
_LENGTH = struct.Struct(">i")
FIRST_TIMESTAMP_AT = 27
RECORD_COUNT_AT = 57
# Fields of a HEADER.unpack tuple that segment.py does not name already.
H_ATTRIBUTES, H_FIRST_TS, H_PID = 5, 7, 9


class ScannedRecord(NamedTuple):
    offset: int
    key: bytes | None
    tombstone: bool  # a null value
    timestamp: int
    start: int  # in the (decompressed) records section
    body: int  # where the key length begins
    end: int


class ScannedBatch(NamedTuple):
    header: tuple[int, ...]
    section: bytes | bytearray | memoryview  # the records section, decompressed
    records: list[ScannedRecord]

    @property
    def base_offset(self) -> int:
        return self.header[H_BASE]

    @property
    def last_offset(self) -> int:
        return self.header[H_BASE] + self.header[H_LAST_DELTA]

    @property
    def producer_id(self) -> int:
        return self.header[H_PID]

    @property
    def is_control(self) -> bool:
        return bool(self.header[H_ATTRIBUTES] & CONTROL_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        h = self.header
        return h[H_FIRST_TS] if h[H_ATTRIBUTES] & DELETE_HORIZON_BIT else None


def _varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    try:
        return read_zigzag(buf, pos)
    except ValueError:
        raise InvalidBatchError("a record's varint runs past its batch") from None


def scan(batch: bytes | bytearray | memoryview, max_section_bytes: int) -> ScannedBatch:
    """The records of one whole, checked batch (its first HEADER_BYTES are its header)."""
    header = HEADER.unpack_from(batch, 0)
    end = LENGTH_PREFIX_BYTES + header[H_LENGTH]
    raw = memoryview(batch)[HEADER_BYTES:end]
    codec = header[H_ATTRIBUTES] & CODEC_MASK
    section = compression.decompress(codec, raw, max_section_bytes) if codec else raw
    base, first_ts = header[H_BASE], header[H_FIRST_TS]
    records: list[ScannedRecord] = []
    pos = 0
    for _ in range(header[H_COUNT]):
        length, at = _varint(section, pos)
        start, stop = pos, at + length
        if length < 0 or stop > len(section):
            raise InvalidBatchError(f"a record of the batch at {base} runs past its end")
        ts_delta, at = _varint(section, at + 1)  # past the attributes byte
        offset_delta, body = _varint(section, at)
        key_len, at = _varint(section, body)
        key = bytes(section[at : at + key_len]) if key_len >= 0 else None
        at += max(key_len, 0)
        value_len, _ = _varint(section, at)
        records.append(ScannedRecord(base + offset_delta, key, value_len < 0,
                                     first_ts + ts_delta, start, body, stop))  # fmt: skip
        pos = stop
    return ScannedBatch(header, section, records)


def section(batch: bytes | bytearray | memoryview, max_section_bytes: int) -> bytes | memoryview:
    """The batch's records section, decompressed (bounded)."""
    h = HEADER.unpack_from(batch, 0)
    raw = memoryview(batch)[HEADER_BYTES : LENGTH_PREFIX_BYTES + h[H_LENGTH]]
    codec = h[H_ATTRIBUTES] & CODEC_MASK
    return bytes(compression.decompress(codec, raw, max_section_bytes)) if codec else raw


def rebuild(
    batch: bytes | bytearray | memoryview,
    scanned: ScannedBatch,
    keep: Sequence[ScannedRecord],
    delete_horizon_ms: int | None,
) -> bytes:
    """`batch` with only the records `keep` (in order, a subset of `scanned.records`)."""
    h = scanned.header
    section = scanned.section
    first_ts = h[H_FIRST_TS] if delete_horizon_ms is None else delete_horizon_ms
    if first_ts == h[H_FIRST_TS]:
        records = b"".join(section[r.start : r.end] for r in keep)
    else:
        records = b"".join(_restamped(section, r, r.timestamp - first_ts) for r in keep)
    return assemble(batch, records, len(keep), delete_horizon_ms)


def assemble(
    batch: bytes | bytearray | memoryview,
    records: bytes,
    count: int,
    delete_horizon_ms: int | None,
) -> bytes:
    """`batch`'s header over a new records section of `count` records (compressed with the
    batch's codec), with the delete horizon when given, and its CRC computed afresh."""
    h = HEADER.unpack_from(batch, 0)
    first_ts = h[H_FIRST_TS] if delete_horizon_ms is None else delete_horizon_ms
    attributes = h[H_ATTRIBUTES] | (0 if delete_horizon_ms is None else DELETE_HORIZON_BIT)
    codec = attributes & CODEC_MASK
    body = compression.compress(codec, records) if codec else records
    out = bytearray(batch[:HEADER_BYTES])
    _LENGTH.pack_into(out, 8, HEADER_BYTES - LENGTH_PREFIX_BYTES + len(body))
    _FIRST_TIMESTAMP.pack_into(out, FIRST_TIMESTAMP_AT, first_ts)
    _COUNT.pack_into(out, RECORD_COUNT_AT, count)
    out += body
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def _restamped(section: bytes | bytearray | memoryview, r: ScannedRecord, delta: int) -> bytes:
    """The record with a new timestamp delta (its length prefix follows)."""
    _, at = _varint(section, r.start)
    attributes = bytes(section[at : at + 1])
    _, at = _varint(section, at + 1)  # the old timestamp delta
    inner = attributes + write_zigzag(delta) + bytes(section[at : r.end])
    return write_zigzag(len(inner)) + inner
