"""Records of the internal topic `__transaction_state`, byte for byte as Kafka writes them.

One record per change of a transactional id; the last one for a key is its state, and a
tombstone (no value) removes an expired id. Loading a coordinator is replaying them in offset
order (txn.py `replay`). All integers are big-endian; a string is its UTF-8 bytes after a length.

    key   int16 version (0)  string TransactionalId (int16 length)

    value int16 version (0 or 1), then TransactionLogValue at that version:
      int64  ProducerId
      int16  ProducerEpoch
      int32  TransactionTimeoutMs
      int8   TransactionStatus                  (the state's Kafka id, states.py)
      array  TransactionPartitions, null when Empty, of {string Topic, array int32 PartitionIds}
      int64  TransactionLastUpdateTimestampMs
      int64  TransactionStartTimestampMs
      v1 only: tagged fields, each written only when not its default:
        tag 0 int64 PreviousProducerId (-1)   tag 1 int64 NextProducerId (-1)
        tag 2 int16 ClientTransactionVersion (0)   tag 3 int16 NextProducerEpoch (-1)

v0 arrays have an int32 count (-1: null) and strings an int16 length. v1 is flexible: arrays
and strings have an unsigned varint of count + 1 (0: null), each struct (the partition entries
and the value itself) ends with its tagged fields (a varint count, then varint tag, varint size
and the field's bytes for each, in tag order). v0 has no room for the tagged fields: a value
written at v0 drops them, as Kafka does below transaction version 2. Topics and partition ids
are written sorted, so equal states encode to equal bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.group.records import java_string_hash
from coordinator.transaction.states import State, from_kafka_id, kafka_id
from protocol.batch import build_batch
from protocol.errors import CorruptMessageError
from protocol.varint import write_uvarint

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSIONS = (0, 1)
MAX_RECORDS_PER_BATCH = 10_000
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1

TP = tuple[str, int]

_FIXED_HEAD = struct.Struct(">qhib")  # ProducerId, ProducerEpoch, TimeoutMs, Status
_TIMESTAMPS = struct.Struct(">qq")  # LastUpdateTimestampMs, StartTimestampMs
# tag -> (field, struct format, default)
_TAGS: dict[int, tuple[str, str, int]] = {
    0: ("previous_producer_id", ">q", NO_PRODUCER_ID),
    1: ("next_producer_id", ">q", NO_PRODUCER_ID),
    2: ("client_txn_version", ">h", 0),
    3: ("next_producer_epoch", ">h", NO_PRODUCER_EPOCH),
}


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: State
    partitions: frozenset[TP]
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_txn_version: int = 0
    next_producer_epoch: int = NO_PRODUCER_EPOCH
    version: int = 1


@dataclass(frozen=True, slots=True)
class TxnRecord:
    transactional_id: str
    value: TxnLogValue | None  # None: tombstone (the id expired)
    # Not written: Kafka keeps the last epoch (KIP-360's retry check) in memory only, so a
    # record read back from the log has -1 here, and a retry across a coordinator move is fenced
    # (Kafka's limitation too). The live path replays the record it appended, with the hint.
    last_producer_epoch: int = NO_PRODUCER_EPOCH


class UnknownVersionError(CorruptMessageError):
    """A key or value version this broker does not know (a newer Kafka wrote it)."""


# ----- encoding ----------------------------------------------------------------------------


def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode("utf-8")
    assert len(raw) <= 0x7FFF, "a transactional id must fit an int16 length"
    return struct.pack(">hh", KEY_VERSION, len(raw)) + raw


def _by_topic(partitions: frozenset[TP]) -> list[tuple[str, list[int]]]:
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    return [(t, sorted(topics[t])) for t in sorted(topics)]


def _partitions_v0(value: TxnLogValue) -> bytes:
    if value.state is State.EMPTY:
        return struct.pack(">i", -1)
    topics = _by_topic(value.partitions)
    out = [struct.pack(">i", len(topics))]
    for topic, ids in topics:
        raw = topic.encode("utf-8")
        out.append(struct.pack(f">h{len(raw)}si{len(ids)}i", len(raw), raw, len(ids), *ids))
    return b"".join(out)


def _partitions_v1(value: TxnLogValue) -> bytes:
    if value.state is State.EMPTY:
        return b"\x00"
    topics = _by_topic(value.partitions)
    out = [write_uvarint(len(topics) + 1)]
    for topic, ids in topics:
        raw = topic.encode("utf-8")
        out += [write_uvarint(len(raw) + 1), raw, write_uvarint(len(ids) + 1)]
        out += [struct.pack(f">{len(ids)}i", *ids), b"\x00"]  # no tagged fields
    return b"".join(out)


def _tagged_fields(value: TxnLogValue) -> bytes:
    present = [
        (tag, struct.pack(fmt, getattr(value, name)))
        for tag, (name, fmt, default) in sorted(_TAGS.items())
        if getattr(value, name) != default
    ]
    out = [write_uvarint(len(present))]
    for tag, data in present:
        out += [write_uvarint(tag), write_uvarint(len(data)), data]
    return b"".join(out)


def encode_value(value: TxnLogValue | None) -> bytes | None:
    if value is None:
        return None
    assert value.version in VALUE_VERSIONS, value.version
    assert value.state is not State.EMPTY or not value.partitions, "Empty with partitions"
    head = struct.pack(">h", value.version) + _FIXED_HEAD.pack(
        value.producer_id, value.producer_epoch, value.timeout_ms, kafka_id(value.state)
    )
    stamps = _TIMESTAMPS.pack(value.last_update_ms, value.start_ms)
    if value.version == 0:
        return head + _partitions_v0(value) + stamps
    return head + _partitions_v1(value) + stamps + _tagged_fields(value)


# ----- decoding ----------------------------------------------------------------------------


class _Reader:
    """A cursor over one record's bytes; every read past the end raises CorruptMessageError."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, fmt: str) -> tuple[int, ...]:
        try:
            out = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error:
            raise CorruptMessageError("a transaction log record ends too soon") from None
        self.pos += struct.calcsize(fmt)
        return tuple(out)

    def uvarint(self) -> int:
        shift = result = 0
        while shift <= 28:
            (byte,) = self.unpack(">B")
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
        raise CorruptMessageError("an unsigned varint runs past 35 bits")

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptMessageError("a transaction log record ends too soon")
        self.pos += n
        return self.data[self.pos - n : self.pos]

    def text(self, n: int) -> str:
        try:
            return self.raw(n).decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptMessageError("a string is not UTF-8") from None

    def done(self) -> None:
        if self.pos != len(self.data):
            raise CorruptMessageError(f"{len(self.data) - self.pos} bytes after the record")


def decode_key(data: bytes) -> str:
    reader = _Reader(data)
    (version,) = reader.unpack(">h")
    if version != KEY_VERSION:
        raise UnknownVersionError(f"unknown transaction log key version {version}")
    (length,) = reader.unpack(">h")
    transactional_id = reader.text(length)
    reader.done()
    return transactional_id


def _read_partitions_v0(reader: _Reader) -> frozenset[TP]:
    (n_topics,) = reader.unpack(">i")
    found: set[TP] = set()
    for _ in range(max(n_topics, 0)):
        (length,) = reader.unpack(">h")
        topic = reader.text(length)
        (n_ids,) = reader.unpack(">i")
        found.update((topic, p) for p in reader.unpack(f">{max(n_ids, 0)}i"))
    return frozenset(found)


def _read_partitions_v1(reader: _Reader) -> frozenset[TP]:
    n_topics = reader.uvarint() - 1
    found: set[TP] = set()
    for _ in range(max(n_topics, 0)):
        topic = reader.text(reader.uvarint() - 1)
        n_ids = reader.uvarint() - 1
        found.update((topic, p) for p in reader.unpack(f">{max(n_ids, 0)}i"))
        _skip_tagged(reader)
    return frozenset(found)


def _skip_tagged(reader: _Reader) -> None:
    for _ in range(reader.uvarint()):
        reader.uvarint()
        reader.raw(reader.uvarint())


def _read_tagged(reader: _Reader) -> dict[str, int]:
    """Known tags by field name; unknown tags are skipped, as Kafka does."""
    fields: dict[str, int] = {}
    for _ in range(reader.uvarint()):
        tag, data = reader.uvarint(), reader.raw(reader.uvarint())
        if tag in _TAGS:
            name, fmt, _default = _TAGS[tag]
            if len(data) != struct.calcsize(fmt):
                raise CorruptMessageError(f"tagged field {tag} has {len(data)} bytes")
            fields[name] = struct.unpack(fmt, data)[0]
    return fields


def decode_value(data: bytes | None) -> TxnLogValue | None:
    if data is None:
        return None
    reader = _Reader(data)
    (version,) = reader.unpack(">h")
    if version not in VALUE_VERSIONS:
        raise UnknownVersionError(f"unknown transaction log value version {version}")
    producer_id, epoch, timeout_ms, status = reader.unpack(_FIXED_HEAD.format)
    try:
        state = from_kafka_id(status)
    except KeyError:
        raise CorruptMessageError(f"unknown transaction status {status}") from None
    read = _read_partitions_v0 if version == 0 else _read_partitions_v1
    partitions = read(reader)
    last_update_ms, start_ms = reader.unpack(_TIMESTAMPS.format)
    tagged = _read_tagged(reader) if version == 1 else {}
    reader.done()
    if state is State.EMPTY:
        partitions = frozenset()  # Kafka ignores them in Empty
    return TxnLogValue(producer_id, epoch, timeout_ms, state, partitions, last_update_ms,
                       start_ms, version=version, **tagged)  # fmt: skip


def decode(key: bytes | None, value: bytes | None) -> TxnRecord:
    if key is None:
        raise CorruptMessageError("a transaction log record needs a key")
    return TxnRecord(decode_key(key), decode_value(value))


# ----- batches and partitioning ------------------------------------------------------------


def build(records: Sequence[TxnRecord], time_ms: int) -> bytes:
    """One batch holding `records` (1..MAX_RECORDS_PER_BATCH of them)."""
    assert 0 < len(records) <= MAX_RECORDS_PER_BATCH, len(records)
    return build_batch(
        [(encode_key(r.transactional_id), encode_value(r.value), None, time_ms) for r in records]
    )


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """Kafka's Utils.abs(transactionalId.hashCode) % N: Java's String.hashCode over UTF-16 code
    units; Utils.abs is Math.abs except that Integer.MIN_VALUE maps to 0 (not `n & 0x7fffffff`,
    which is Utils.toPositive, the producer's partitioner)."""
    h = java_string_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
