"""Records of the internal topic `__share_group_state`, byte for byte as Kafka 4.2 writes them
(its share-coordinator module's ShareSnapshotKey/Value and ShareUpdateKey/Value).

The key of both is the share partition, "groupId:topicId:partition"; its record type says
which value follows. A ShareSnapshot holds a share partition's whole state; a ShareUpdate
holds only what changed since (state batches that overlay the snapshot's, and a new start
offset or -1). A tombstone (no value) of both keys deletes the state (DeleteShareGroupState).
All integers are big-endian.

    key    int16 record type (0: ShareSnapshot, 1: ShareUpdate; Kafka's "coordinator-key"
                 apiKey, written where a key version would be)
           string GroupId (int16 length)   uuid TopicId (16 bytes)   int32 Partition

    value  int16 version (0), then, flexible (every struct ends with its tagged fields):
      ShareSnapshotValue: int32 SnapshotEpoch, int32 StateEpoch, int32 LeaderEpoch,
                          int64 StartOffset, int64 CreateTimestamp, int64 WriteTimestamp,
                          StateBatches
      ShareUpdateValue:   int32 SnapshotEpoch, int32 LeaderEpoch, int64 StartOffset,
                          StateBatches
      StateBatches: unsigned varint count + 1, then each {int64 FirstOffset, int64 LastOffset,
                    int8 DeliveryState (0 Available, 2 Acknowledged, 4 Archived),
                    int16 DeliveryCount, tagged fields}
      the value's tagged fields: tag 0 int32 DeliveryCompleteCount (KIP-1226), written only
                    when not -1

SnapshotEpoch was uint16 in Kafka 3.9's early access and is int32 since 4.1 (the same two
bytes wide no more: this is the 4.1+ layout). The values' record types are also checked against
the key's: a snapshot value under an update key does not decode.
"""

from __future__ import annotations

import base64
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.group.records import partition_for as _kafka_partition_for
from coordinator.record_reader import RecordReader
from protocol.batch import build_batch
from protocol.errors import CorruptMessageError
from protocol.varint import write_uvarint

SHARE_STATE_TOPIC = "__share_group_state"
SNAPSHOT, UPDATE = 0, 1  # the key's record type
VALUE_VERSION = 0
MAX_RECORDS_PER_BATCH = 1_000
NO_OFFSET = -1  # ShareUpdate's StartOffset when the start offset did not move
NO_COUNT = -1  # DeliveryCompleteCount unknown (its default, not written)
DELIVERY_COMPLETE_TAG = 0

_BATCH = struct.Struct(">qqbh")  # FirstOffset, LastOffset, DeliveryState, DeliveryCount
_SNAPSHOT_HEAD = struct.Struct(">iiiqqq")  # epochs, StartOffset, Create/WriteTimestamp
_UPDATE_HEAD = struct.Struct(">iiq")  # SnapshotEpoch, LeaderEpoch, StartOffset


@dataclass(frozen=True, slots=True)
class ShareKey:
    """A share partition: (group id, topic id, partition)."""

    group_id: str
    topic_id: uuid.UUID
    partition: int

    def coordinator_key(self) -> str:
        """Kafka's SharePartitionKey.asCoordinatorKey: "groupId:topicId:partition", the topic
        id as Kafka prints a Uuid (URL-safe base64, no padding)."""
        return f"{self.group_id}:{kafka_uuid(self.topic_id)}:{self.partition}"


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int  # 0 Available, 2 Acknowledged, 4 Archived
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp_ms: int
    write_timestamp_ms: int
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = NO_COUNT


@dataclass(frozen=True, slots=True)
class ShareUpdate:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int  # NO_OFFSET: unchanged
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = NO_COUNT


@dataclass(frozen=True, slots=True)
class ShareRecord:
    record_type: int  # SNAPSHOT or UPDATE
    key: ShareKey
    value: ShareSnapshot | ShareUpdate | None  # None: a tombstone


def kafka_uuid(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def partition_for(key: ShareKey, num_partitions: int) -> int:
    """Kafka's Utils.abs(key.asCoordinatorKey().hashCode()) % N."""
    return _kafka_partition_for(key.coordinator_key(), num_partitions)


# ----- encoding ----------------------------------------------------------------------------


def encode_key(record_type: int, key: ShareKey) -> bytes:
    raw = key.group_id.encode("utf-8")
    assert len(raw) <= 0x7FFF, "a group id must fit an int16 length"
    return (struct.pack(">hh", record_type, len(raw)) + raw + key.topic_id.bytes
            + struct.pack(">i", key.partition))  # fmt: skip


def _batches(batches: Sequence[StateBatch]) -> bytes:
    out = [write_uvarint(len(batches) + 1)]
    for b in batches:
        out += [_BATCH.pack(b.first_offset, b.last_offset, b.delivery_state,
                            b.delivery_count), b"\x00"]  # fmt: skip
    return b"".join(out)


def _tagged(delivery_complete_count: int) -> bytes:
    if delivery_complete_count == NO_COUNT:
        return b"\x00"
    data = struct.pack(">i", delivery_complete_count)
    return b"\x01" + write_uvarint(DELIVERY_COMPLETE_TAG) + write_uvarint(len(data)) + data


def encode_value(value: ShareSnapshot | ShareUpdate | None) -> bytes | None:
    if value is None:
        return None
    version = struct.pack(">h", VALUE_VERSION)
    if isinstance(value, ShareSnapshot):
        head = _SNAPSHOT_HEAD.pack(
            value.snapshot_epoch, value.state_epoch, value.leader_epoch, value.start_offset,
            value.create_timestamp_ms, value.write_timestamp_ms,
        )  # fmt: skip
    else:
        head = _UPDATE_HEAD.pack(value.snapshot_epoch, value.leader_epoch, value.start_offset)
    return (version + head + _batches(value.state_batches)
            + _tagged(value.delivery_complete_count))  # fmt: skip


def encode(record: ShareRecord) -> tuple[bytes, bytes | None]:
    assert record.value is None or isinstance(record.value, ShareSnapshot) == (
        record.record_type == SNAPSHOT
    ), record
    return encode_key(record.record_type, record.key), encode_value(record.value)


def build(records: Sequence[ShareRecord], time_ms: int) -> bytes:
    """One batch holding `records` (1..MAX_RECORDS_PER_BATCH of them)."""
    assert 0 < len(records) <= MAX_RECORDS_PER_BATCH, len(records)
    return build_batch([(*encode(r), None, time_ms) for r in records])


# ----- decoding ----------------------------------------------------------------------------


def decode_key(data: bytes) -> tuple[int, ShareKey]:
    reader = RecordReader(data, "share state")
    record_type, length = reader.unpack(">hh")
    if record_type not in (SNAPSHOT, UPDATE):
        raise CorruptMessageError(f"unknown share state record type {record_type}")
    try:
        group_id = reader.take(length).decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptMessageError("a group id is not UTF-8") from None
    topic_id = uuid.UUID(bytes=reader.take(16))
    (partition,) = reader.unpack(">i")
    reader.end()
    return record_type, ShareKey(group_id, topic_id, partition)


def _read_batches(reader: RecordReader) -> tuple[StateBatch, ...]:
    count = reader.uvarint() - 1
    out = []
    for _ in range(max(count, 0)):
        out.append(StateBatch(*reader.unpack(_BATCH.format)))
        _read_tagged(reader)
    return tuple(out)


def _read_tagged(reader: RecordReader) -> int:
    """The DeliveryCompleteCount tag if present (NO_COUNT if not); other tags are skipped."""
    found = NO_COUNT
    for _ in range(reader.uvarint()):
        tag, data = reader.uvarint(), reader.take(reader.uvarint())
        if tag == DELIVERY_COMPLETE_TAG:
            if len(data) != 4:
                raise CorruptMessageError(f"tagged field {tag} has {len(data)} bytes")
            (found,) = struct.unpack(">i", data)
    return found


def decode_value(record_type: int, data: bytes | None) -> ShareSnapshot | ShareUpdate | None:
    if data is None:
        return None
    reader = RecordReader(data, "share state")
    (version,) = reader.unpack(">h")
    if version != VALUE_VERSION:
        raise CorruptMessageError(f"unknown share state value version {version}")
    if record_type == SNAPSHOT:
        epoch, state_epoch, leader_epoch, start, created, written = reader.unpack(
            _SNAPSHOT_HEAD.format
        )
        batches = _read_batches(reader)
        count = _read_tagged(reader)
        reader.end()
        return ShareSnapshot(epoch, state_epoch, leader_epoch, start, created, written, batches,
                             count)  # fmt: skip
    epoch, leader_epoch, start = reader.unpack(_UPDATE_HEAD.format)
    batches = _read_batches(reader)
    count = _read_tagged(reader)
    reader.end()
    return ShareUpdate(epoch, leader_epoch, start, batches, count)


def decode(key: bytes | None, value: bytes | None) -> ShareRecord:
    if key is None:
        raise CorruptMessageError("a share state record needs a key")
    record_type, share_key = decode_key(key)
    return ShareRecord(record_type, share_key, decode_value(record_type, value))
