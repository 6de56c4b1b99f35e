"""Record batches: Kafka's RecordBatch v2, the unit a producer sends, the log stores and a
consumer fetches.

The same bytes travel all three ways. Layout (big-endian), 61-byte header then the records:

    offset  size  field
         0     8  base_offset            stamped by the leader on append
         8     4  batch_length           bytes after this field (header rest + records)
        12     4  partition_leader_epoch stamped by the leader on append
        16     1  magic                  MAGIC (2)
        17     4  crc                    CRC32C of bytes [21, end)
        21     2  attributes             bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4,
                                         4 zstd), bit 3 timestamp type (1: LogAppendTime),
                                         bit 4 transactional, bit 5 control, bit 6 delete
                                         horizon (KIP-534, set by the log cleaner); others 0
        23     4  last_offset_delta      record_count - 1 (compacted: may be more)
        27     8  first_timestamp        ms since the epoch: the first record's (with the
                                         delete horizon bit: the horizon)
        35     8  max_timestamp          the largest record timestamp
        43     8  producer_id            -1: none
        51     2  producer_epoch         -1: none
        53     4  base_sequence          -1: none
        57     4  record_count
        61     -  records                back to back, the whole section compressed by the
                                         codec (protocol/compression.py)

One record (varint: zigzag LEB128 of an int32, varlong of an int64; a length of -1 is null):

    varint   length          bytes of the record after this field
    int8     attributes      0 (unused)
    varlong  timestamp_delta from first_timestamp (may be negative)
    varint   offset_delta    the record's index in the batch: 0, 1, ... (compacted: its
                             original delta; deltas increase but may skip)
    varint   key_length      then that many key bytes; -1: null key
    varint   value_length    then that many value bytes; -1: null value
    varint   header_count    then per header: varint key length, UTF-8 key (never null),
                             varint value length (-1: null), value bytes

A record with no headers and one with an empty list look the same; `Record.headers` is None
for both. With LogAppendTime a record's timestamp is the batch's max_timestamp.

Compacted batches: Kafka's log cleaner rewrites a batch keeping its base offset, its
last_offset_delta and each kept record's offset delta, so record_count may be below
last_offset_delta + 1, and 0 (an empty batch kept for its producer's state). It may set the
delete horizon bit; first_timestamp then holds the horizon (after the records' timestamps, so
max_timestamp may be below it) and record timestamps are still first_timestamp + their delta.
Gaps between batches follow. `validate` and `iter_batches` take all of that, as every stored
batch passes them; `check_client_batch` refuses it on produce (a producer writes none of it).

The CRC starts at the attributes, so the broker stamps base_offset and leader epoch without
recomputing it. The broker only ever calls `read_header`, `validate`, `check_client_batch`,
`iter_batches` and `stamp`; records are built and decoded by clients alone: built by our C
encoder (protocol/_encoder.c), decoded here with aiokafka's compiled (Cython) record classes,
imported on first use so a broker never loads them (the consumer and Spark use our C walker).

Decoding hands aiokafka only buffers it cannot read past: its varint reader stops at a byte
without the continuation bit and checks bounds only between fields, so the bytes it reads must
be a bytes or bytearray object or a slice of one (CPython keeps a NUL after their last byte,
which ends any varint); anything else is copied first. Lengths it cannot allocate, bad UTF-8 in
a header key and every other complaint become InvalidBatchError.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter, lt
from typing import Any, NamedTuple

import crc32c

from protocol import compression
from protocol._encoder import encode_records
from protocol.errors import (
    CorruptMessageError,
    InvalidRecordError,
    MessageTooLargeError,
    OdradekError,
    UsageError,
)

MAGIC = 2
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_BYTES = HEADER.size  # 61
assert HEADER_BYTES == 61
LENGTH_PREFIX_BYTES = 12  # base_offset + batch_length: what precedes batch_length's span
CRC_START = 21
BASE_OFFSET_AT = 0
LEADER_EPOCH_AT = 12
MAGIC_AT = 16
CRC_AT = 17
ATTRIBUTES_AT = 21
_STAMP = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_OFFSET_AND_LENGTH = struct.Struct(">qi")

CODEC_MASK = 0x07
CODEC_NONE = compression.NONE
CODEC_GZIP = compression.GZIP
CODEC_SNAPPY = compression.SNAPPY
CODEC_LZ4 = compression.LZ4
CODEC_ZSTD = compression.ZSTD
TIMESTAMP_TYPE_BIT = 0x08  # 0: CreateTime, 1: LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40  # KIP-534: first_timestamp is the delete horizon (log cleaner only)
KNOWN_ATTRIBUTE_BITS = (
    CODEC_MASK | TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT | DELETE_HORIZON_BIT
)
CODECS = {name: codec for codec, name in compression.NAMES.items()}

NO_PRODUCER_ID = -1
NO_PARTITION_LEADER_EPOCH = -1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class InvalidBatchError(CorruptMessageError):
    """A batch whose header, CRC or records do not hold. Never stored, never served."""


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

    Checks: enough bytes, magic 2, a length that covers the header and fits the buffer (and
    `max_batch_bytes`), 0 <= record_count <= last_offset_delta + 1 (fewer, or none, once
    compacted), attributes of Kafka's known bits with a codec 0-4, timestamps ordered (unless
    first_timestamp is a delete horizon), and the CRC. What only the log cleaner writes is
    accepted here: `check_client_batch` refuses it on produce.
    """
    header = read_header(buf, pos)
    _check_fields(header, len(buf) - pos, max_batch_bytes)
    _check_crc(buf, pos, header)
    return header


def _check_crc(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> None:
    crc = crc32c.crc32c(memoryview(buf)[pos + CRC_START : pos + header.size])
    if crc != header.crc:
        raise InvalidBatchError(f"batch CRC {header.crc:#010x} does not match {crc:#010x}")


def _check_fields(header: BatchHeader, room: int, max_batch_bytes: int | None = None) -> None:
    """validate's checks but the CRC; `room`: the bytes the buffer holds from the batch on."""
    if header.magic != MAGIC:
        raise InvalidBatchError(f"batch magic {header.magic}, expected {MAGIC}")
    if header.batch_length < HEADER_BYTES - LENGTH_PREFIX_BYTES:
        raise InvalidBatchError(f"batch length {header.batch_length} is shorter than its header")
    if max_batch_bytes is not None and header.size > max_batch_bytes:
        raise MessageTooLargeError(
            f"batch of {header.size} bytes is above the maximum of {max_batch_bytes}"
        )
    if header.size > room:
        raise InvalidBatchError(f"batch of {header.size} bytes runs past the end of its buffer")
    if header.record_count < 0 or header.last_offset_delta < max(header.record_count - 1, 0):
        raise InvalidBatchError(
            f"record count {header.record_count} and last offset delta "
            f"{header.last_offset_delta} disagree"
        )
    if header.attributes & ~KNOWN_ATTRIBUTE_BITS or header.codec not in compression.NAMES:
        raise InvalidBatchError(f"unknown batch attributes {header.attributes:#x}")
    if header.max_timestamp < header.first_timestamp and not (
        header.attributes & DELETE_HORIZON_BIT
    ):
        raise InvalidBatchError("max timestamp is before the first timestamp")


def check_client_batch(header: BatchHeader) -> None:
    """Refuse, on a client's produce, what only brokers write or odradek does not do.

    Control batches (transaction markers, protocol/control.py) are written by brokers alone;
    a transactional batch needs a producer id and sequence (the log checks its producer
    state). A producer's batch holds every offset it spans (record_count ==
    last_offset_delta + 1 >= 1) and no delete horizon: fewer records, or the horizon bit, are
    the log cleaner's (`validate` accepts them, as stored batches). Kafka's LogValidator
    checks the same for a client's append. Followers copy batches without this check. Raises
    InvalidRecordError (INVALID_RECORD, as Kafka answers).
    """
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        raise InvalidRecordError(
            f"a produced batch's record count {header.record_count} must be its last offset "
            f"delta {header.last_offset_delta} + 1 (only the log cleaner leaves gaps)"
        )
    if header.attributes & DELETE_HORIZON_BIT:
        raise InvalidRecordError("a delete horizon is set by the log cleaner, not by clients")
    if header.attributes & CONTROL_BIT:
        raise InvalidRecordError("control batches are written by brokers, not by clients")
    if header.attributes & TRANSACTIONAL_BIT and (
        header.producer_id < 0 or header.base_sequence < 0
    ):
        raise InvalidRecordError("a transactional batch needs a producer id and a sequence")


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
        if check_crc:  # validate's checks, on the header already read
            _check_fields(header, end - pos)
            _check_crc(buf, pos, header)
        yield pos, header
        pos += header.size


def stamp(batch: bytearray | memoryview, base_offset: int, leader_epoch: int, pos: int = 0) -> None:
    """Write the leader-assigned base offset and leader epoch in place. The CRC stays valid."""
    _STAMP.pack_into(batch, pos + BASE_OFFSET_AT, base_offset)
    _EPOCH.pack_into(batch, pos + LEADER_EPOCH_AT, leader_epoch)


# ----- client side: building records -------------------------------------------------------

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
    try:
        keys, values, headers, stamps = zip(*records, strict=True)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"records must be (key, value, headers, timestamp_ms): {exc}") from None
    return build_columns(keys, values, headers, stamps, base_offset, codec,
                         producer_id, producer_epoch, base_sequence)  # fmt: skip


def build_batch_from_values(
    values: Sequence[bytes],
    timestamp_ms: int,
    codec: int = CODEC_NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """The bulk path: key-less, header-less records sharing one timestamp."""
    if not values:
        raise UsageError("a batch needs at least one record")
    n = len(values)
    return build_columns([None] * n, values, None, [timestamp_ms] * n, 0, codec,
                         producer_id, producer_epoch, base_sequence, transactional)  # fmt: skip


def build_batch_from_section(
    section: bytes, count: int, timestamp_ms: int, codec: int = CODEC_NONE
) -> bytes:
    """A batch around a records section already encoded (protocol/_encoder.c's encode_arrow:
    `count` records, every timestamp delta 0), without producer fields."""
    if count <= 0:
        raise UsageError("a batch needs at least one record")
    payload: bytes | memoryview = section
    if codec != CODEC_NONE:
        payload = compression.compress(codec, payload)
    return _assemble(payload, count, timestamp_ms, timestamp_ms, 0, codec, NO_PRODUCER_ID, -1, -1)


def build_columns(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    headers: Sequence[Sequence[tuple[str, bytes | None]] | None] | None,
    stamps: Sequence[int],
    base_offset: int = 0,
    codec: int = CODEC_NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """One batch from records given as columns (the producer keeps them so): `headers` None
    means no record has any. No Python code runs per record: protocol/_encoder.c encodes them.
    `transactional`: a transactional producer's batch (TRANSACTIONAL_BIT; it needs a producer
    id and sequence, as an idempotent producer's).
    """
    if codec not in compression.NAMES:
        raise UsageError(f"unknown compression codec {codec}")
    n = len(values)
    if n == 0 or len(keys) != n or len(stamps) != n or (headers is not None and len(headers) != n):
        raise UsageError("a batch needs at least one record, and every column one per record")
    first, max_ts = _timestamps(stamps)
    try:
        payload: bytes | memoryview = encode_records(
            _as_list(keys), _as_list(values), None if headers is None else _as_list(headers),
            _as_list(stamps), first,
        )  # fmt: skip
    except (TypeError, ValueError, OverflowError) as exc:
        raise UsageError(f"records do not encode: {exc}") from None
    if codec != CODEC_NONE:
        payload = compression.compress(codec, payload)
    attributes = codec | (TRANSACTIONAL_BIT if transactional else 0)
    return _assemble(payload, n, first, max_ts, base_offset, attributes, producer_id,
                     producer_epoch, base_sequence)  # fmt: skip


def _timestamps(stamps: Sequence[int]) -> tuple[int, int]:
    """(first, max), after checking every delta from the first fits an int64."""
    try:
        first, low, high = stamps[0], min(stamps), max(stamps)
        if low < INT64_MIN or high > INT64_MAX or high - low > INT64_MAX:
            raise UsageError(f"timestamps from {low} to {high} do not fit the batch")
    except TypeError as exc:
        raise UsageError(f"timestamps must be integers: {exc}") from None
    return first, high


def _as_list(column: Sequence[Any]) -> list[Any]:
    return column if type(column) is list else list(column)


_PRODUCER = struct.Struct(">qhi")
PRODUCER_AT = 43
_ATTRIBUTES = struct.Struct(">h")
ATTRIBUTES_AT = 21


def with_producer(
    batch: bytes | bytearray,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool = False,
) -> bytes:
    """A copy of a built batch carrying these idempotent-producer fields (and the
    TRANSACTIONAL_BIT when `transactional`), its CRC recomputed."""
    out = bytearray(batch)
    try:
        _PRODUCER.pack_into(out, PRODUCER_AT, producer_id, producer_epoch, base_sequence)
    except struct.error as exc:
        raise UsageError(f"producer field out of range: {exc}") from None
    if transactional:
        (attributes,) = _ATTRIBUTES.unpack_from(out, ATTRIBUTES_AT)
        _ATTRIBUTES.pack_into(out, ATTRIBUTES_AT, attributes | TRANSACTIONAL_BIT)
    _CRC.pack_into(out, CRC_AT, crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def _assemble(
    payload: bytes | bytearray | memoryview,
    count: int,
    first_ts: int,
    max_ts: int,
    base_offset: int,
    attributes: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
) -> bytes:
    """A header for `payload` (the records section, already compressed), CRC included."""
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
    _CRC.pack_into(header, CRC_AT, crc32c.crc32c(payload, crc))
    return bytes(header) + payload


# ----- client side: decoding records --------------------------------------------------------
# The consumer and the Spark connector decode fetched records with our C walker instead
# (protocol/columns.py, protocol/_records.c); these stay for the group coordinator and tests.

DEFAULT_MAX_RECORDS_BYTES = 100 * 1024 * 1024
"""The most bytes a batch's records may inflate to on the client (as much as a whole frame)."""


class RecordColumns(NamedTuple):
    """One batch's records, field by field (index i of each list is record i)."""

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[list[tuple[str, bytes | None]] | None]

    def sliced(self, start: int, stop: int | None = None) -> RecordColumns:
        """Records [start, stop) of these."""
        return RecordColumns(self.offsets[start:stop], self.timestamps[start:stop],
                             self.keys[start:stop], self.values[start:stop],
                             self.headers[start:stop])  # fmt: skip


_OFFSET = attrgetter("offset")
_TIMESTAMP = attrgetter("timestamp")
_KEY = attrgetter("key")
_VALUE = attrgetter("value")
_HEADERS = attrgetter("headers")


def decode_columns(
    buf: bytes | bytearray | memoryview,
    pos: int,
    header: BatchHeader,
    max_records_bytes: int = DEFAULT_MAX_RECORDS_BYTES,
) -> RecordColumns:
    """The records of the batch at `pos` whose `header` was read there (its CRC is the
    caller's business: `validate` or `iter_batches` checked it, or the user chose not to).

    Raises InvalidBatchError for anything the batch's bytes do not hold up: header fields,
    records that do not decompress (or would inflate past `max_records_bytes`) or decode, a
    record count or an offset delta that disagrees with the header (deltas must increase and
    stay within the batch's last offset delta: compacted batches skip some).
    """
    if pos < 0:
        raise InvalidBatchError(f"no batch at position {pos}")
    _check_fields(header, len(buf) - pos)
    data = _records_buffer(buf, pos, header, max_records_bytes)
    codec = _codec()
    try:
        records = list(codec.Reader(data))
    except codec.errors as exc:
        raise InvalidBatchError(
            f"records at offset {header.base_offset} do not decode: {exc}"
        ) from None
    offsets = list(map(_OFFSET, records))
    base = header.base_offset
    if offsets and (
        offsets[0] < base
        or offsets[-1] > header.last_offset
        or not all(map(lt, offsets, offsets[1:]))
    ):
        raise InvalidBatchError(
            f"records at offset {base}: offset deltas do not increase within the batch's span"
        )
    headers: list[Any] = list(map(_HEADERS, records))
    headers = [h or None for h in headers] if any(headers) else [None] * len(records)
    return RecordColumns(offsets, list(map(_TIMESTAMP, records)), list(map(_KEY, records)),
                         list(map(_VALUE, records)), headers)  # fmt: skip


def _records_buffer(
    buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader, max_records_bytes: int
) -> bytes | bytearray | memoryview:
    """The batch as aiokafka's reader may take it: uncompressed, and in a bytes or bytearray
    object (see the module docstring), with the codec bits of its attributes cleared."""
    end = pos + header.size
    view = memoryview(buf)
    if header.codec == CODEC_NONE:
        if isinstance(buf, bytes | bytearray) or (
            isinstance(view.obj, bytes | bytearray) and view.c_contiguous and view.format == "B"
        ):
            return view[pos:end]
        return bytes(view[pos:end])
    try:
        inflated = compression.decompress(
            header.codec, view[pos + HEADER_BYTES : end], max_records_bytes
        )
    except compression.CodecError as exc:
        raise InvalidBatchError(
            f"records at offset {header.base_offset} do not decompress: {exc}"
        ) from None
    head = bytearray(view[pos : pos + HEADER_BYTES])
    head[ATTRIBUTES_AT + 1] &= ~CODEC_MASK & 0xFF  # the low byte of the big-endian int16
    return bytes(head) + inflated


def decode_records(
    buf: bytes | memoryview, pos: int = 0, max_records_bytes: int = DEFAULT_MAX_RECORDS_BYTES
) -> tuple[BatchHeader, list[Record]]:
    """Decode one batch's records after validating it. Client side only.

    Raises InvalidBatchError for anything the batch's bytes do not hold up: a bad header or
    CRC, records that do not decompress (or inflate past `max_records_bytes`) or decode, a
    record count or an offset delta that disagrees with the header.
    """
    header = validate(buf, pos)
    columns = decode_columns(buf, pos, header, max_records_bytes)
    return header, list(map(Record, *columns))


def decode_all(buf: bytes | memoryview) -> list[Record]:
    """Every record of every whole batch in `buf` (a fetch response's records field)."""
    out: list[Record] = []
    for pos, _ in iter_batches(buf, check_crc=False):
        out.extend(decode_records(buf, pos)[1])
    return out


def as_odradek_error(exc: Exception) -> OdradekError:
    return exc if isinstance(exc, OdradekError) else InvalidBatchError(str(exc))


# ----- the record codec, loaded on first use -----------------------------------------------


class _Codec:
    """aiokafka's compiled record classes. `aiokafka.record._crecords` has no pure-Python
    fallback (that is aiokafka.record.default_records), so importing it proves they are the
    Cython ones; a broken install fails here, loudly, rather than running 10x slower."""

    def __init__(self) -> None:
        from aiokafka.errors import CorruptRecordException  # type: ignore[import-untyped]
        from aiokafka.record._crecords import (  # type: ignore[import-untyped]
            DefaultRecordBatch,
            DefaultRecordBatchBuilder,
        )

        self.Builder: Any = DefaultRecordBatchBuilder
        self.Reader: Any = DefaultRecordBatch
        # What the reader raises on hostile bytes: its own error, bad UTF-8 in a header key
        # (ValueError), and a length it cannot allocate (OverflowError, MemoryError).
        self.errors = (CorruptRecordException, ValueError, OverflowError, MemoryError)


_CODEC: _Codec | None = None


_CODEC_LOCK = threading.Lock()


def _codec() -> _Codec:
    """The codec, imported on first use (the broker never loads it); under a lock, because two
    threads importing aiokafka at once trip over its circular imports."""
    global _CODEC
    if _CODEC is None:
        with _CODEC_LOCK:
            if _CODEC is None:
                _CODEC = _Codec()
    return _CODEC
