"""Compacted record batches made by hand, as Kafka's log cleaner writes them, for tests.

Kafka's `Cleaner` rewrites a batch with `MemoryRecords.filterTo`; `compact` does the same to one
whole batch (bytes as protocol/batch.py lays them out, base offset stamped or not):
- a batch that keeps every record and gets no delete horizon is written as it was;
- else its kept records are re-encoded (`buildRetainedRecordsInto`): the base offset, producer
  id, epoch, base sequence, partition leader epoch, codec and the other attribute bits stay,
  and so do last_offset_delta (`overrideLastOffset`: the producer's last sequence must stay)
  and each kept record's ORIGINAL offset delta, so record_count drops below
  last_offset_delta + 1 and deltas skip; first_timestamp becomes the first kept record's
  timestamp, or the delete horizon when one is given (bit 6, KIP-534), and every timestamp
  delta is rewritten relative to it (so a record's timestamp is unchanged); max_timestamp is
  the largest kept timestamp (LogAppendTime: the batch's, unchanged); the records section is
  compressed again with the batch's codec; the CRC (crc32c of bytes 21..end) is recomputed;
- a batch that keeps no record becomes an empty batch (`writeEmptyHeader`): 61 bytes, no
  codec, record_count 0, first_timestamp -1, the original max_timestamp, the same offsets and
  producer fields. Kafka keeps one only for a producer's last batch (`compact_log` does that).

`compact_log` cleans a list of batches by offset (gaps appear where whole batches go), and
`raw_records` parses a batch's records for choosing what to keep (e.g. the latest per key).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import crc32c

from protocol import compression
from protocol.batch import (
    CODEC_MASK,
    CRC_AT,
    CRC_START,
    DELETE_HORIZON_BIT,
    HEADER,
    HEADER_BYTES,
    LENGTH_PREFIX_BYTES,
    NO_PRODUCER_ID,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    read_header,
)
from protocol.varint import read_zigzag, write_zigzag

NO_TIMESTAMP = -1
_INFLATE_MAX_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record of a batch as its bytes hold it."""

    attributes: int
    timestamp: int  # first_timestamp + timestamp_delta
    offset_delta: int
    fields: bytes  # key, value and headers, as encoded (copied as they are)
    key: bytes | None


# ----- one batch ------------------------------------------------------------------------------


def _section(batch: bytes, h: BatchHeader) -> bytes:
    raw = batch[HEADER_BYTES : h.size]
    if h.codec == compression.NONE:
        return bytes(raw)
    return bytes(compression.decompress(h.codec, raw, _INFLATE_MAX_BYTES))


def raw_records(batch: bytes) -> tuple[BatchHeader, list[RawRecord]]:
    """The header and records of one whole batch (compressed or not)."""
    h = read_header(batch)
    section = _section(batch, h)
    out: list[RawRecord] = []
    pos = 0
    for _ in range(h.record_count):
        length, pos = read_zigzag(section, pos)
        end = pos + length
        attributes = section[pos]
        ts_delta, at = read_zigzag(section, pos + 1)
        offset_delta, at = read_zigzag(section, at)
        key_len, key_at = read_zigzag(section, at)
        key = None if key_len < 0 else section[key_at : key_at + key_len]
        out.append(RawRecord(attributes, h.first_timestamp + ts_delta, offset_delta,
                             section[at:end], key))  # fmt: skip
        pos = end
    assert pos == len(section), "bytes after the last record"
    return h, out


def _encode(records: Sequence[RawRecord], first_timestamp: int) -> bytes:
    out = bytearray()
    for r in records:
        body = (bytes([r.attributes]) + write_zigzag(r.timestamp - first_timestamp)
                + write_zigzag(r.offset_delta) + r.fields)  # fmt: skip
        out += write_zigzag(len(body)) + body
    return bytes(out)


def _sealed(h: BatchHeader, attributes: int, first: int, max_ts: int, count: int,
            payload: bytes) -> bytes:  # fmt: skip
    out = bytearray(HEADER_BYTES) + payload
    HEADER.pack_into(
        out, 0, h.base_offset, HEADER_BYTES - LENGTH_PREFIX_BYTES + len(payload),
        h.partition_leader_epoch, h.magic, 0, attributes, h.last_offset_delta, first, max_ts,
        h.producer_id, h.producer_epoch, h.base_sequence, count,
    )  # fmt: skip
    struct.pack_into(">I", out, CRC_AT, crc32c.crc32c(bytes(out[CRC_START:])))
    return bytes(out)


def compact(batch: bytes, keep: Iterable[int], delete_horizon_ms: int | None = None) -> bytes:
    """`batch` with only the records whose offset deltas are in `keep` (see the module's
    comment); with `delete_horizon_ms`, bit 6 set and first_timestamp the horizon."""
    h, records = raw_records(batch)
    wanted = set(keep)
    kept = [r for r in records if r.offset_delta in wanted]
    if len(kept) == len(records) and delete_horizon_ms is None:
        return bytes(batch[: h.size])
    if not kept:  # Kafka's writeEmptyHeader: no codec, no horizon, no first timestamp
        attributes = h.attributes & ~(CODEC_MASK | DELETE_HORIZON_BIT)
        return _sealed(h, attributes, NO_TIMESTAMP, h.max_timestamp, 0, b"")
    attributes = h.attributes & ~DELETE_HORIZON_BIT
    first = kept[0].timestamp
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_BIT
        first = delete_horizon_ms
    log_append = h.attributes & TIMESTAMP_TYPE_BIT
    max_ts = h.max_timestamp if log_append else max(r.timestamp for r in kept)
    payload = _encode(kept, first)
    if h.codec != compression.NONE:
        payload = compression.compress(h.codec, payload)
    return _sealed(h, attributes, first, max_ts, len(kept), payload)


def compact_log(
    batches: Sequence[bytes],
    keep: Callable[[int], bool],
    delete_horizon_ms: Callable[[BatchHeader], int | None] = lambda h: None,
) -> list[bytes]:
    """A log (whole batches, base offsets stamped, in offset order) cleaned: each batch keeps
    the records whose offsets `keep` says; a batch left with none is kept (empty) only when
    it is its producer's last batch in the log, as Kafka keeps producer state, else it goes
    and leaves a gap. `delete_horizon_ms(header)`: the horizon to set on a rewritten batch."""
    headers = [read_header(b) for b in batches]
    last_of_producer = {h.producer_id: i for i, h in enumerate(headers)}
    out = []
    for i, (batch, h) in enumerate(zip(batches, headers, strict=True)):
        _, records = raw_records(batch)
        deltas = [r.offset_delta for r in records if keep(h.base_offset + r.offset_delta)]
        if not deltas and (h.producer_id == NO_PRODUCER_ID or last_of_producer[h.producer_id] != i):
            continue
        out.append(compact(batch, deltas, delete_horizon_ms(h) if deltas else None))
    return out
