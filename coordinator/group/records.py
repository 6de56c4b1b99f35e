"""Records of the internal topic `__consumer_offsets`: the coordinator's whole durable state.

Records are written in Kafka's own bytes, as Kafka 4.x writes them, in ordinary record batches
(protocol.batch.build_batch); a Kafka key starts with its int16 record type:

    0/1 OffsetCommit, 2 GroupMetadata (a Kafka client's classic group)  classic_records.py
    3-8 ConsumerGroup* (KIP-848 consumer groups)                        consumer_records.py
    9-15 ShareGroup* (KIP-932 share groups)                             share_records.py

Two records stay odradek's own msgpack, told apart by the key's first byte, a msgpack fixarray
(0x9N), where a Kafka key has the high byte of its type (0x00):

    key ["group", group]    a native group (protocol_type None: odradek's own join protocol,
                            where the coordinator assigns; Kafka has no such group, so no record
                            for it), value {"generation": int, "strategy": str|nil,
                            "members": [member...], "partition_counts": {topic: int},
                            "protocol_type": nil, "leader": nil}
      member = {"id", "client_id", "session_timeout_ms", "rebalance_timeout_ms", "topics",
                "pattern", "assignment": [[topic, partition], ...],
                "instance_id": str|nil (a static member's group.instance.id, KIP-345)}
    key ["offset", group, topic, partition]   value {"offset": int, "metadata": str|nil,
                            "commit_ms": int, "leader_epoch": int (optional)}
                            read only: offsets written before issue 33, and Kafka groups'
                            group records of that time (msgpack, with "protocol_type" set)

`OffsetKey` and `GroupKey` name the logical key, whichever its bytes: a log holding both
formats replays in offset order, a later record of either format replacing an earlier one.
Compaction keeps the last record of each key's *bytes*, so an old msgpack record and a new
Kafka one of the same offset both stay (replay still ends on the later one). Deleting must
remove both, or the old one would come back once the new tombstone is cleaned away: every
tombstone of an offset or a group is written twice, in Kafka's key and in the msgpack key
(`build`). An old msgpack record thus lingers until its offset or group is deleted or expires.

A later record for the same key replaces an earlier one; a tombstone deletes it. Loading a
coordinator is replaying them in offset order (coordinator/group/group.py `replay`).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from coordinator.group import classic_records as kafka
from coordinator.group.consumer_records import ConsumerKey
from coordinator.group.consumer_records import decode_key as decode_consumer_key
from coordinator.group.consumer_records import decode_value as decode_consumer_value
from coordinator.group.consumer_records import encode_key as encode_consumer_key
from coordinator.group.consumer_records import encode_value as encode_consumer_value
from coordinator.group.share_records import RECORD_TYPES as SHARE_RECORD_TYPES
from coordinator.group.share_records import ShareGroupKey
from coordinator.group.share_records import decode_key as decode_share_key
from coordinator.group.share_records import decode_value as decode_share_value
from coordinator.group.share_records import encode_key as encode_share_key
from coordinator.group.share_records import encode_value as encode_share_value
from protocol.batch import build_batch
from protocol.errors import CorruptMessageError

OFFSETS_TOPIC = "__consumer_offsets"
MAX_RECORDS_PER_BATCH = 10_000
# Kafka's offset.metadata.max.bytes (its default): a commit's metadata longer than this is
# refused with OFFSET_METADATA_TOO_LARGE (by the commit operations), so it always fits the
# int16 length of OffsetCommitValue's metadata string
OFFSET_METADATA_MAX_BYTES = 4096


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group_id: str


Key = OffsetKey | GroupKey | ConsumerKey | ShareGroupKey


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    key: Key
    value: dict[str, Any] | None  # None: tombstone


def offset_record(group_id: str, topic: str, partition: int, offset: int,
                  metadata: str | None, commit_ms: int,
                  leader_epoch: int = -1) -> CoordinatorRecord:  # fmt: skip
    """A commit's record; `leader_epoch` (Kafka's committed leader epoch, KIP-320: the epoch
    of the record before the offset, so a consumer can detect truncation), -1 when unknown.
    A null metadata is kept as "" (Kafka's NO_METADATA: its record's metadata is not
    nullable), so an offset reads the same before and after a reload."""
    value = {"offset": offset, "metadata": metadata or "", "commit_ms": commit_ms,
             "leader_epoch": leader_epoch if leader_epoch >= 0 else -1}  # fmt: skip
    return CoordinatorRecord(OffsetKey(group_id, topic, partition), value)


def metadata_too_large(metadata: str | None) -> bool:
    """Kafka's check of a commit's metadata (counted in characters, as Kafka's length())."""
    return metadata is not None and len(metadata) > OFFSET_METADATA_MAX_BYTES


def encode(record: CoordinatorRecord) -> list[tuple[bytes, bytes | None]]:
    """The (key, value) bytes written for `record`: one pair, or two for an offset's or a
    group's tombstone (Kafka's key and the old msgpack key, see above)."""
    key, value = record.key, record.value
    if isinstance(key, ConsumerKey):
        return [(encode_consumer_key(key), encode_consumer_value(key.record_type, value))]
    if isinstance(key, ShareGroupKey):
        return [(encode_share_key(key), encode_share_value(key.record_type, value))]
    if isinstance(key, OffsetKey):
        kafka_key = kafka.encode_offset_key(key.group_id, key.topic, key.partition)
        if value is not None:
            return [(kafka_key, kafka.encode_offset_value(value))]
    else:
        kafka_key = kafka.encode_group_key(key.group_id)
        if value is not None and value.get("protocol_type") is not None:
            return [(kafka_key, kafka.encode_group_value(value))]
        if value is not None:  # a native group: odradek's own record
            return [(legacy_key(key), encode_value(value))]
    return [(kafka_key, None), (legacy_key(key), None)]


def legacy_key(key: OffsetKey | GroupKey) -> bytes:
    """The msgpack key of records written before issue 33 (native groups' still)."""
    if isinstance(key, OffsetKey):
        raw = ["offset", key.group_id, key.topic, key.partition]
    else:
        raw = ["group", key.group_id]
    out: bytes = msgpack.packb(raw, use_bin_type=True)
    return out


def decode_key(data: bytes) -> Key:
    """A msgpack key (records.py's own format)."""
    try:
        raw = msgpack.unpackb(data, raw=False)
        if raw[0] == "offset" and len(raw) == 4:
            return OffsetKey(str(raw[1]), str(raw[2]), int(raw[3]))
        if raw[0] == "group" and len(raw) == 2:
            return GroupKey(str(raw[1]))
    except (ValueError, TypeError, IndexError, msgpack.ExtraData) as exc:
        raise CorruptMessageError(f"bad coordinator record key: {exc}") from None
    raise CorruptMessageError(f"unknown coordinator record key {raw!r}")


def encode_value(value: dict[str, Any] | None) -> bytes | None:
    if value is None:
        return None
    out: bytes = msgpack.packb(value, use_bin_type=True)
    return out


def decode_value(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        value = msgpack.unpackb(data, raw=False)
    except (ValueError, TypeError, msgpack.ExtraData) as exc:
        raise CorruptMessageError(f"bad coordinator record value: {exc}") from None
    if not isinstance(value, dict):
        raise CorruptMessageError("a coordinator record value must be a map")
    return value


def build(records: Sequence[CoordinatorRecord], timestamp_ms: int) -> bytes:
    """One batch holding `records` (1..MAX_RECORDS_PER_BATCH of them; a tombstone of an offset
    or a group is two records of the batch)."""
    assert 0 < len(records) <= MAX_RECORDS_PER_BATCH, len(records)
    pairs = [pair for r in records for pair in encode(r)]
    return build_batch([(k, v, None, timestamp_ms) for k, v in pairs])


def decode(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """A record of either format (msgpack key: 0x9N; Kafka key: its int16 type)."""
    if key is None:
        raise CorruptMessageError("a coordinator record needs a key")
    if key[:1] and key[0] & 0xF0 == 0x90:  # a msgpack fixarray: odradek's own record
        return CoordinatorRecord(decode_key(key), decode_value(value))
    if len(key) >= 2 and struct.unpack_from(">h", key)[0] in SHARE_RECORD_TYPES:
        skey = decode_share_key(key)
        return CoordinatorRecord(skey, decode_share_value(skey.record_type, value))
    if len(key) < 2 or struct.unpack_from(">h", key)[0] not in kafka.RECORD_TYPES:
        ckey = decode_consumer_key(key)
        return CoordinatorRecord(ckey, decode_consumer_value(ckey.record_type, value))
    record_type, group_id, topic, partition = kafka.decode_key(key)
    found = None if value is None else kafka.VALUE_DECODERS[record_type](value)
    if record_type == kafka.GROUP_METADATA:
        return CoordinatorRecord(GroupKey(group_id), found)
    return CoordinatorRecord(OffsetKey(group_id, topic, partition), found)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (UTF-16 code units, 32-bit wrap), as Kafka hashes group ids."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's abs(groupId.hashCode) % N (abs of MIN_VALUE taken as 0, as Utils.abs does)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
