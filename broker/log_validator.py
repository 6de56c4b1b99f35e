"""What a leader does to a client's batch before appending it, by the topic's configs (Kafka's
LogValidator): pure functions of (batch bytes, LogConfig, the broker's time).

With Kafka's defaults (cleanup.policy=delete, compression.type=producer,
message.timestamp.type=CreateTime, both timestamp bounds Long.MAX_VALUE) `needs_rewrite` is
false and the batch is appended as sent, so the produce path pays one check per batch.
Otherwise, in this order:

0. `cleanup.policy` with compact: every record is checked (`check_records`, walked in C by the
   log cleaner's scanner, decompressed first if need be): a record without a key, or one whose
   offset delta is not its index (a producer's batch is dense, protocol/batch.py), is refused
   with INVALID_RECORD, and (CreateTime) one whose timestamp lies outside the bounds of item 1
   with INVALID_TIMESTAMP, which wins when both occur.

1. `message.timestamp.before.max.ms` / `after.max.ms` (CreateTime only): a batch holding a
   record whose timestamp falls outside [now - before, now + after] is refused with
   INVALID_TIMESTAMP. Kafka checks each record; a topic that is not compacted checks the
   header's first_timestamp and max_timestamp first, and walks the records only when one of
   them is out of bounds (to name the bad records). They bound every record's timestamp when
   the producer's timestamps do not go backwards inside a batch (every client's accumulator
   stamps records as they come); a batch with a record older than its first one is checked by
   its first record, so such a record can pass the `before` bound. Reading the header only
   keeps the check O(1) and never decompresses a batch that passes.

2. `compression.type` (not producer): a batch whose codec differs is decompressed and its
   records section compressed with the topic's codec (`uncompressed`: none) at the topic's
   compression.<codec>.level, as Kafka recompresses. The records themselves are kept byte for
   byte (offset deltas, timestamps, keys, values, headers).
3. `message.timestamp.type=LogAppendTime`: attribute bit 3 set and max_timestamp stamped with
   the append time (Kafka's `setMaxTimestamp(LOG_APPEND_TIME, now)`); readers then give every
   record that time.

A refusal names every bad record by its index in the batch, with a message of its own, as
Kafka's LogValidator does (KIP-467, protocol/record_errors.py): the whole batch is refused, and
the client fails the others as refused because of them. A record that does not parse refuses
the batch as CORRUPT_MESSAGE, naming no record.

A rewritten batch has its CRC checked before (a corrupt batch is never blessed with a new CRC)
and recomputed after: the CRC covers the attributes, max_timestamp and the records section
(protocol/batch.py). Followers never come here: they replicate the leader's bytes.
"""

from __future__ import annotations

import struct

import crc32c

from broker.log.cleaner import _compact
from broker.log.config import LONG_MAX, LogConfig
from protocol import compression
from protocol.batch import (
    ATTRIBUTES_AT,
    CODEC_MASK,
    CRC_AT,
    CRC_START,
    DEFAULT_MAX_RECORDS_BYTES,
    HEADER_BYTES,
    LENGTH_PREFIX_BYTES,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    InvalidBatchError,
    validate,
)
from protocol.record_errors import (
    InvalidRecordsError,
    InvalidTimestampsError,
    RecordError,
    RecordValidationError,
)

CODEC_OF = {
    "uncompressed": compression.NONE, "gzip": compression.GZIP,
    "snappy": compression.SNAPPY, "lz4": compression.LZ4, "zstd": compression.ZSTD,
}  # fmt: skip
_LENGTH_AT = 8
MAX_TIMESTAMP_AT = 35
_INT = struct.Struct(">i")
_UINT = struct.Struct(">I")
_SHORT = struct.Struct(">h")
_LONG = struct.Struct(">q")
LONG_MIN = -LONG_MAX - 1
SHOWN_ERRORS = 3  # the records the partition's error message names (Kafka's: the first three)


def needs_rewrite(cfg: LogConfig) -> bool:
    """False with Kafka's defaults: the batch is appended as it came."""
    return (
        cfg.compact
        or cfg.compression_type != "producer"
        or cfg.message_timestamp_type != "CreateTime"
        or cfg.message_timestamp_before_max_ms != LONG_MAX
        or cfg.message_timestamp_after_max_ms != LONG_MAX
    )


def validate_for_leader(batch: bytes, cfg: LogConfig, now_ms: int) -> tuple[bytes, int]:
    """(the batch to append, its log append time or -1); RecordValidationError (the batch is
    refused, naming its bad records) per the module docstring. Call only when
    `needs_rewrite(cfg)`."""
    header = validate(batch)  # the CRC too: a batch rewritten here gets a new one
    if header.size != len(batch):
        raise InvalidBatchError(f"{len(batch) - header.size} bytes follow the batch")
    if cfg.compact or not _header_in_bounds(header, cfg, now_ms):
        check_records(batch, header, cfg, now_ms)
    out = batch
    target = CODEC_OF.get(cfg.compression_type)
    if target is not None and header.codec != target:
        out = recompress(out, header, target, _level(cfg, target))
    if cfg.log_append_time:
        return stamp_log_append_time(out, now_ms), now_ms
    return (out if out is batch else _with_crc(bytearray(out))), -1


def _timestamp_bounds(cfg: LogConfig, now_ms: int) -> tuple[int, int]:
    """[low, high] a record's CreateTime must lie in (within a long, as the C walk takes)."""
    if cfg.log_append_time:
        return LONG_MIN, LONG_MAX
    low = max(now_ms - cfg.message_timestamp_before_max_ms, LONG_MIN)
    return low, min(now_ms + cfg.message_timestamp_after_max_ms, LONG_MAX)


def _header_in_bounds(header: BatchHeader, cfg: LogConfig, now_ms: int) -> bool:
    """CreateTime: the header's first and max timestamps within the bounds (O(1))."""
    low, high = _timestamp_bounds(cfg, now_ms)
    return all(low <= ts <= high for ts in (header.first_timestamp, header.max_timestamp))


def check_records(batch: bytes, header: BatchHeader, cfg: LogConfig, now_ms: int) -> None:
    """Every record of the batch against the topic's configs (keys when compacted, dense
    offset deltas, CreateTime bounds), walked in C, decompressed first if need be; raises
    RecordValidationError naming each bad record."""
    section = memoryview(batch)[HEADER_BYTES : header.size]
    if header.codec:
        try:
            section = memoryview(
                compression.decompress(header.codec, section, DEFAULT_MAX_RECORDS_BYTES)
            )
        except compression.CodecError as exc:
            raise InvalidBatchError(f"records do not decompress: {exc}") from None
    low, high = _timestamp_bounds(cfg, now_ms)
    try:
        bad = _compact.produced(section, header.record_count, cfg.compact,
                                header.first_timestamp, low, high)  # fmt: skip
    except ValueError as exc:
        raise InvalidBatchError(str(exc)) from None
    if bad:
        raise _refusal(bad, header.record_count, cfg, now_ms)


def _refusal(
    bad: list[tuple[int, int, int]], count: int, cfg: LogConfig, now_ms: int
) -> RecordValidationError:
    """Kafka's processRecordErrors: INVALID_TIMESTAMP when a timestamp is out of bounds, else
    INVALID_RECORD; the message names the first few records, `record_errors` all of them."""
    low, high = _timestamp_bounds(cfg, now_ms)
    errors = tuple(
        RecordError(i, _record_message(kind, value, low, high)) for i, kind, value in bad
    )
    shown = "; ".join(f"record {e.batch_index}: {e.message}" for e in errors[:SHOWN_ERRORS])
    more = f"; and {len(errors) - SHOWN_ERRORS} more" if len(errors) > SHOWN_ERRORS else ""
    message = f"{len(errors)} of the batch's {count} records refused: {shown}{more}"
    if any(kind == _compact.PRODUCED_TIMESTAMP for _, kind, _ in bad):
        before, after = cfg.message_timestamp_before_max_ms, cfg.message_timestamp_after_max_ms
        message += (f" (message.timestamp.before.max.ms {before} and after.max.ms {after} "
                    f"allow [{low}, {high}] at {now_ms})")  # fmt: skip
        return InvalidTimestampsError(message, errors)
    return InvalidRecordsError(message, errors)


def _record_message(kind: int, value: int, low: int, high: int) -> str:
    if kind == _compact.PRODUCED_KEYLESS:
        return "a compacted topic cannot accept a record without a key"
    if kind == _compact.PRODUCED_TIMESTAMP:
        return f"timestamp {value} is out of range [{low}, {high}]"
    return f"offset delta {value} is not the record's index (a produced batch is dense)"


def recompress(batch: bytes, header: BatchHeader, codec: int, level: int | None) -> bytes:
    """The batch with its records section in `codec` (CRC not yet recomputed)."""
    try:
        records = compression.decompress(
            header.codec, memoryview(batch)[HEADER_BYTES : header.size], DEFAULT_MAX_RECORDS_BYTES
        )
    except compression.CodecError as exc:
        raise InvalidBatchError(f"records do not decompress: {exc}") from None
    packed = compression.compress(codec, records, level)
    out = bytearray(batch[:HEADER_BYTES])
    out += packed
    _INT.pack_into(out, _LENGTH_AT, len(out) - LENGTH_PREFIX_BYTES)
    attributes = (header.attributes & ~CODEC_MASK) | codec
    _SHORT.pack_into(out, ATTRIBUTES_AT, attributes)
    return bytes(out)


def stamp_log_append_time(batch: bytes, now_ms: int) -> bytes:
    """Attribute bit 3 set, max_timestamp `now_ms`, the CRC recomputed."""
    out = bytearray(batch)
    (attributes,) = _SHORT.unpack_from(out, ATTRIBUTES_AT)
    _SHORT.pack_into(out, ATTRIBUTES_AT, attributes | TIMESTAMP_TYPE_BIT)
    _LONG.pack_into(out, MAX_TIMESTAMP_AT, now_ms)
    return _with_crc(out)


def _with_crc(out: bytearray) -> bytes:
    _UINT.pack_into(out, CRC_AT, crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def _level(cfg: LogConfig, codec: int) -> int | None:
    if codec == compression.GZIP:
        return cfg.compression_gzip_level
    if codec == compression.LZ4:
        return cfg.compression_lz4_level
    if codec == compression.ZSTD:
        return cfg.compression_zstd_level
    return None
