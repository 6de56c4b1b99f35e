"""Record batches: the unit a producer sends, the log stores and a consumer fetches.

The same bytes travel all three ways. Layout (big-endian), 61-byte header then the records:

    offset  size  field
         0     8  base_offset            stamped by the leader on append
         8     4  batch_length           bytes after this field (header rest + records)
        12     4  partition_leader_epoch stamped by the leader on append
        16     1  magic                  MAGIC (1)
        17     4  crc                    CRC32C of bytes [21, end)
        21     2  attributes             bits 0-2 codec, bit 3 timestamp type
        23     4  last_offset_delta      record_count - 1
        27     8  first_timestamp        ms since the epoch
        35     8  max_timestamp
        43     8  producer_id            -1: none
        51     2  producer_epoch         -1: none
        53     4  base_sequence          -1: none
        57     4  record_count
        61     -  records                msgpack array of [offset_delta, timestamp_delta,
                                         key, value, headers], compressed by the codec

Records: offset_delta is the record's index (0..record_count-1); timestamp_delta is relative to
first_timestamp (the first record's, which need not be the smallest); key and value are bin or
nil; headers are nil or an array of [str, bin or nil]. Codec 1 (gzip) is a gzip stream (RFC 1952)
of that msgpack.

The CRC starts at the attributes, so the broker stamps base_offset and leader epoch without
recomputing it. The broker only ever calls `read_header`, `validate` and `stamp`; records are
decoded by clients alone (`decode_records`).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import crc32c
import msgpack

from protocol.errors import CorruptMessageError, MessageTooLargeError, OdradekError, UsageError

MAGIC = 1
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_BYTES = HEADER.size  # 61
assert HEADER_BYTES == 61
LENGTH_PREFIX_BYTES = 12  # base_offset + batch_length: what precedes batch_length's span
CRC_START = 21
BASE_OFFSET_AT = 0
LEADER_EPOCH_AT = 12
_STAMP = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_OFFSET_AND_LENGTH = struct.Struct(">qi")

CODEC_MASK = 0x07
CODEC_NONE = 0
CODEC_GZIP = 1
TIMESTAMP_TYPE_BIT = 0x08  # 0: CreateTime, 1: LogAppendTime
KNOWN_ATTRIBUTE_BITS = CODEC_MASK | TIMESTAMP_TYPE_BIT
CODECS = {"none": CODEC_NONE, "gzip": CODEC_GZIP}

NO_PRODUCER_ID = -1
NO_PARTITION_LEADER_EPOCH = -1


class InvalidBatchError(CorruptMessageError):
    """A batch whose header or CRC does not hold. Never stored, never served."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch takes, header included."""
        return LENGTH_PREFIX_BYTES + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK


@dataclass(frozen=True, slots=True)
class Record:
    """One record as a client sees it (brokers never build these)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Unpack the header at `pos`. Raises InvalidBatchError if fewer than 61 bytes remain."""
    if pos < 0 or len(buf) - pos < HEADER_BYTES:
        raise InvalidBatchError(f"batch header needs {HEADER_BYTES} bytes, {len(buf) - pos} left")
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def peek_offset_and_length(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """(base_offset, batch_length) of the batch at `pos`, for scanning without a full unpack."""
    if pos < 0 or len(buf) - pos < LENGTH_PREFIX_BYTES:
        raise InvalidBatchError(f"batch needs {LENGTH_PREFIX_BYTES} bytes at {pos} to be scanned")
    base, length = _OFFSET_AND_LENGTH.unpack_from(buf, pos)
    return int(base), int(length)


def validate(
    buf: bytes | bytearray | memoryview, pos: int = 0, max_batch_bytes: int | None = None
) -> BatchHeader:
    """Check one batch's header fields and CRC; return its header.

    Checks: enough bytes, magic, a length that covers the header and fits the buffer (and
    `max_batch_bytes`), record_count >= 1 with last_offset_delta == record_count - 1,
    no unknown attribute bits, timestamps ordered, and the CRC.
    """
    header = read_header(buf, pos)
    if header.magic != MAGIC:
        raise InvalidBatchError(f"batch magic {header.magic}, expected {MAGIC}")
    if header.batch_length < HEADER_BYTES - LENGTH_PREFIX_BYTES:
        raise InvalidBatchError(f"batch length {header.batch_length} is shorter than its header")
    if max_batch_bytes is not None and header.size > max_batch_bytes:
        raise MessageTooLargeError(
            f"batch of {header.size} bytes is above the maximum of {max_batch_bytes}"
        )
    end = pos + header.size
    if end > len(buf):
        raise InvalidBatchError(f"batch of {header.size} bytes runs past the end of its buffer")
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        raise InvalidBatchError(
            f"record count {header.record_count} and last offset delta "
            f"{header.last_offset_delta} disagree"
        )
    if header.attributes & ~KNOWN_ATTRIBUTE_BITS or header.codec not in CODECS.values():
        raise InvalidBatchError(f"unknown batch attributes {header.attributes:#x}")
    if header.max_timestamp < header.first_timestamp:
        raise InvalidBatchError("max timestamp is before the first timestamp")
    crc = crc32c.crc32c(memoryview(buf)[pos + CRC_START : end])
    if crc != header.crc:
        raise InvalidBatchError(f"batch CRC {header.crc:#010x} does not match {crc:#010x}")
    return header


def iter_batches(
    buf: bytes | bytearray | memoryview, check_crc: bool = True
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each whole batch in `buf`; a partial tail is not yielded.

    A length too short to hold the header raises InvalidBatchError (the scan could not move
    on); with check_crc each whole batch is also `validate`d, without only its header is read.
    """
    pos = 0
    end = len(buf)
    while end - pos >= HEADER_BYTES:
        header = read_header(buf, pos)
        if header.batch_length < HEADER_BYTES - LENGTH_PREFIX_BYTES:
            raise InvalidBatchError(f"batch length {header.batch_length} at {pos} is too short")
        if pos + header.size > end:
            return
        if check_crc:
            header = validate(buf, pos)
        yield pos, header
        pos += header.size


def stamp(batch: bytearray | memoryview, base_offset: int, leader_epoch: int, pos: int = 0) -> None:
    """Write the leader-assigned base offset and leader epoch in place. The CRC stays valid."""
    _STAMP.pack_into(batch, pos + BASE_OFFSET_AT, base_offset)
    _EPOCH.pack_into(batch, pos + LEADER_EPOCH_AT, leader_epoch)


# ----- client side: building and decoding records -------------------------------------------

RecordInput = tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]] | None, int]
"""(key, value, headers, timestamp_ms) as a producer hands it to `build_batch`."""


def build_batch(
    records: Sequence[RecordInput],
    base_offset: int = 0,
    codec: int = CODEC_NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """Encode records into one batch. Timestamps are ms; the first record's is the base.

    Raises UsageError for no records, an unknown codec, or values that do not fit the layout
    (a key that is not bytes, a timestamp outside int64...).
    """
    if not records:
        raise UsageError("a batch needs at least one record")
    if codec not in CODECS.values():
        raise UsageError(f"unknown compression codec {codec}")
    try:
        first_ts = records[0][3]
        max_ts = first_ts
        rows = []
        for delta, (key, value, headers, ts) in enumerate(records):
            if ts > max_ts:
                max_ts = ts
            rows.append((delta, ts - first_ts, key, value, headers))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"records must be (key, value, headers, timestamp_ms): {exc}") from None
    payload = _compress(_pack_rows(rows), codec)
    return _assemble(
        payload, len(records), first_ts, max_ts, base_offset, codec, producer_id, producer_epoch,
        base_sequence,
    )  # fmt: skip


def build_batch_from_values(
    values: Sequence[bytes],
    timestamp_ms: int,
    codec: int = CODEC_NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """The bulk path: key-less, header-less records sharing one timestamp."""
    if not values:
        raise UsageError("a batch needs at least one record")
    if codec not in CODECS.values():
        raise UsageError(f"unknown compression codec {codec}")
    rows = [(i, 0, None, v, None) for i, v in enumerate(values)]
    payload = _compress(_pack_rows(rows), codec)
    return _assemble(
        payload, len(values), timestamp_ms, timestamp_ms, 0, codec, producer_id, producer_epoch,
        base_sequence,
    )  # fmt: skip


_PRODUCER = struct.Struct(">qhi")
PRODUCER_AT = 43


def with_producer(
    batch: bytes | bytearray, producer_id: int, producer_epoch: int, base_sequence: int
) -> bytes:
    """A copy of a built batch carrying these idempotent-producer fields, its CRC recomputed."""
    out = bytearray(batch)
    try:
        _PRODUCER.pack_into(out, PRODUCER_AT, producer_id, producer_epoch, base_sequence)
    except struct.error as exc:
        raise UsageError(f"producer field out of range: {exc}") from None
    struct.pack_into(">I", out, 17, crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def _pack_rows(rows: Sequence[tuple[object, ...]]) -> bytes:
    try:
        payload: bytes = msgpack.packb(rows, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise UsageError(f"records do not encode: {exc}") from None
    return payload


def _compress(payload: bytes, codec: int) -> bytes:
    if codec == CODEC_GZIP:
        # wbits 31: a gzip stream (header and CRC-32 trailer), level 1 for speed.
        gz = zlib.compressobj(1, zlib.DEFLATED, 31)
        return gz.compress(payload) + gz.flush()
    return payload


def _decompress(payload: bytes, max_records_bytes: int) -> bytes:
    """Inflate a gzip payload, refusing to produce more than `max_records_bytes` (a bomb)."""
    gz = zlib.decompressobj(47)  # 32 + 15: gzip or zlib header, detected
    try:
        out = gz.decompress(payload, max_records_bytes + 1)
    except zlib.error as exc:
        raise InvalidBatchError(f"records do not decompress: {exc}") from None
    if len(out) > max_records_bytes:
        raise InvalidBatchError(f"records inflate past {max_records_bytes} bytes")
    if not gz.eof or gz.unused_data:
        raise InvalidBatchError("compressed records are truncated or followed by garbage")
    return out


def _assemble(
    payload: bytes,
    count: int,
    first_ts: int,
    max_ts: int,
    base_offset: int,
    attributes: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
) -> bytes:
    header = bytearray(HEADER_BYTES)
    try:
        HEADER.pack_into(
            header, 0, base_offset, HEADER_BYTES - LENGTH_PREFIX_BYTES + len(payload),
            NO_PARTITION_LEADER_EPOCH, MAGIC, 0, attributes, count - 1, first_ts, max_ts,
            producer_id, producer_epoch, base_sequence, count,
        )  # fmt: skip
    except struct.error as exc:
        raise UsageError(f"batch header field out of range: {exc}") from None
    crc = crc32c.crc32c(memoryview(header)[CRC_START:])
    crc = crc32c.crc32c(payload, crc)
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + payload


DEFAULT_MAX_RECORDS_BYTES = 100 * 1024 * 1024
"""The most bytes a batch's records may inflate to on the client (as much as a whole frame)."""


def decode_records(
    buf: bytes | memoryview, pos: int = 0, max_records_bytes: int = DEFAULT_MAX_RECORDS_BYTES
) -> tuple[BatchHeader, list[Record]]:
    """Decode one batch's records after validating it. Client side only.

    Raises InvalidBatchError for anything the batch's bytes do not hold up: a bad header or
    CRC, records that do not decompress (or inflate past `max_records_bytes`) or decode, a
    record count or an offset delta that disagrees with the header, a value of the wrong type.
    """
    header = validate(buf, pos)
    payload = bytes(memoryview(buf)[pos + HEADER_BYTES : pos + header.size])
    if header.codec == CODEC_GZIP:
        payload = _decompress(payload, max_records_bytes)
    limit = len(payload)  # no declared length can exceed the bytes that would hold it
    try:
        rows = msgpack.unpackb(
            payload, use_list=True, raw=False, strict_map_key=True, max_str_len=limit,
            max_bin_len=limit, max_array_len=limit, max_map_len=limit, max_ext_len=limit,
        )  # fmt: skip
    except Exception as exc:  # msgpack raises several unrelated types for garbage
        raise InvalidBatchError(f"records do not decode: {exc}") from None
    if type(rows) is not list or len(rows) != header.record_count:
        raise InvalidBatchError("record count does not match the records")
    base, first_ts = header.base_offset, header.first_timestamp
    return header, [_record(i, row, base, first_ts) for i, row in enumerate(rows)]


def _record(index: int, row: object, base_offset: int, first_ts: int) -> Record:
    """One decoded row, checked: [offset_delta == index, timestamp_delta, key, value, headers]."""
    if type(row) is not list or len(row) != 5:
        raise InvalidBatchError(f"record {index} is not a 5-field array")
    delta, ts_delta, key, value, headers = row
    if type(delta) is not int or delta != index:
        raise InvalidBatchError(f"record {index} has offset delta {delta!r}")
    if type(ts_delta) is not int:
        raise InvalidBatchError(f"record {index} has a timestamp delta of type {type(ts_delta)}")
    if not (key is None or type(key) is bytes) or not (value is None or type(value) is bytes):
        raise InvalidBatchError(f"record {index}: key and value must be bytes or nil")
    return Record(base_offset + delta, first_ts + ts_delta, key, value, _headers(index, headers))


def _headers(index: int, headers: object) -> list[tuple[str, bytes | None]] | None:
    if headers is None:
        return None
    if type(headers) is not list:
        raise InvalidBatchError(f"record {index}: headers must be an array or nil")
    out = []
    for h in headers:
        if (
            type(h) is not list
            or len(h) != 2
            or type(h[0]) is not str
            or not (h[1] is None or type(h[1]) is bytes)
        ):
            raise InvalidBatchError(f"record {index}: a header must be [str, bytes or nil]")
        out.append((h[0], h[1]))
    return out


def decode_all(buf: bytes | memoryview) -> list[Record]:
    """Every record of every whole batch in `buf` (a fetch response's records field)."""
    out: list[Record] = []
    for pos, _ in iter_batches(buf, check_crc=False):
        out.extend(decode_records(buf, pos)[1])
    return out


def as_odradek_error(exc: Exception) -> OdradekError:
    return exc if isinstance(exc, OdradekError) else InvalidBatchError(str(exc))
