"""Records of the internal topic `__consumer_offsets`: the coordinator's whole durable state.

Each record is one msgpack key and one msgpack value (or none: a tombstone), in ordinary record
batches (protocol.batch.build_batch). Two kinds, told apart by the key's first element:

    key ["offset", group, topic, partition]   value {"offset": int, "metadata": str|nil,
                                                     "commit_ms": int}
    key ["group", group]                      value {"generation": int, "strategy": str|nil,
                                                     "members": [member...],
                                                     "partition_counts": {topic: int}}
      member = {"id", "client_id", "session_timeout_ms", "rebalance_timeout_ms", "topics",
                "pattern", "assignment": [[topic, partition], ...],
                "instance_id": str|nil (a static member's group.instance.id, KIP-345)}

KIP-848 consumer groups' records (key types 3-8) are Kafka's own bytes (consumer_records.py):
a msgpack key starts with a fixarray byte (0x9N), a Kafka key with its int16 type (0x00 ..).

A later record for the same key replaces an earlier one; a tombstone deletes it. Loading a
coordinator is replaying them in offset order (coordinator/group/group.py `replay`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from coordinator.group.consumer_records import ConsumerKey
from coordinator.group.consumer_records import decode_key as decode_consumer_key
from coordinator.group.consumer_records import decode_value as decode_consumer_value
from coordinator.group.consumer_records import encode_key as encode_consumer_key
from coordinator.group.consumer_records import encode_value as encode_consumer_value
from protocol.batch import build_batch
from protocol.errors import CorruptMessageError

OFFSETS_TOPIC = "__consumer_offsets"
MAX_RECORDS_PER_BATCH = 10_000


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group_id: str


Key = OffsetKey | GroupKey | ConsumerKey


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    key: Key
    value: dict[str, Any] | None  # None: tombstone


def offset_record(group_id: str, topic: str, partition: int, offset: int,
                  metadata: str | None, commit_ms: int,
                  leader_epoch: int = -1) -> CoordinatorRecord:  # fmt: skip
    """A commit's record; `leader_epoch` (Kafka's committed leader epoch, KIP-320: the epoch
    of the record before the offset, so a consumer can detect truncation) only when known."""
    value: dict[str, Any] = {"offset": offset, "metadata": metadata, "commit_ms": commit_ms}
    if leader_epoch >= 0:
        value["leader_epoch"] = leader_epoch
    return CoordinatorRecord(OffsetKey(group_id, topic, partition), value)


def encode_key(key: Key) -> bytes:
    if isinstance(key, ConsumerKey):
        return encode_consumer_key(key)
    if isinstance(key, OffsetKey):
        raw = ["offset", key.group_id, key.topic, key.partition]
    else:
        raw = ["group", key.group_id]
    out: bytes = msgpack.packb(raw, use_bin_type=True)
    return out


def decode_key(data: bytes) -> Key:
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
    """One batch holding `records` (1..MAX_RECORDS_PER_BATCH of them)."""
    assert 0 < len(records) <= MAX_RECORDS_PER_BATCH, len(records)
    return build_batch([(encode_key(r.key), _value_bytes(r), None, timestamp_ms) for r in records])


def _value_bytes(record: CoordinatorRecord) -> bytes | None:
    if isinstance(record.key, ConsumerKey):
        return encode_consumer_value(record.key.record_type, record.value)
    return encode_value(record.value)


def decode(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    if key is None:
        raise CorruptMessageError("a coordinator record needs a key")
    if key[:1] and key[0] & 0xF0 != 0x90:  # not a msgpack fixarray: a Kafka record's type
        ckey = decode_consumer_key(key)
        return CoordinatorRecord(ckey, decode_consumer_value(ckey.record_type, value))
    return CoordinatorRecord(decode_key(key), decode_value(value))


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
