"""Offset commits and classic groups in `__consumer_offsets`, byte for byte as Kafka 4.x writes
them (group-coordinator/src/main/resources/common/message/OffsetCommit{Key,Value}.json,
GroupMetadata{Key,Value}.json; GroupCoordinatorRecordHelpers).

Keys are not flexible: int16 record type (the key schema's version), then the fields, a string
being int16 length + UTF-8:

    1 OffsetCommitKey    group str, topic str, partition int32   (type 0: the same, older)
    2 GroupMetadataKey   group str

Values: int16 version, then the fields of that version. Written at v3, as Kafka 4.x does (not
flexible: a string has an int16 length, -1 for null; bytes an int32 length; an array an int32
count); read at v0-v4 (v4 is flexible: lengths and counts are uvarint(n + 1), 0 for null, and
each struct ends with tagged fields, which are skipped).

    OffsetCommitValue   offset int64, leader_epoch int32 (v3+; -1: none), metadata str,
                        commit_timestamp int64, expire_timestamp int64 (v1 only)
    GroupMetadataValue  protocol_type str, generation int32, protocol str?, leader str?,
                        current_state_timestamp int64 (v2+; written -1), members [member]
      member = member_id str, group_instance_id str? (v3+), client_id str, client_host str,
               rebalance_timeout int32 (v1+), session_timeout int32, subscription bytes,
               assignment bytes

A tombstone has no value. Values are dicts, in the shape group.py replays:
    offset  {"offset", "metadata", "commit_ms", "leader_epoch"} (+ "expire_ms" from a v1)
    group   {"protocol_type", "generation", "strategy", "leader", "members": [{"id",
             "instance_id", "client_id", "client_host", "rebalance_timeout_ms",
             "session_timeout_ms", "subscription", "assignment_bytes"}]}

Kafka's record holds all a classic group needs: its members' subscriptions and assignments stay
opaque bytes (read on demand by protocol/kafka/consumer_protocol.py, as the JoinGroup path
keeps them), and odradek's own fields (a native member's topics, the partition counts the
coordinator assigned from) belong to native groups, which Kafka does not have and which keep
their msgpack record (records.py). No tagged field of our own is written.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from coordinator.record_reader import RecordReader
from protocol.errors import CorruptMessageError

OFFSET_COMMIT = 1  # key type; 0 is its older twin
GROUP_METADATA = 2
OFFSET_TYPES = frozenset({0, OFFSET_COMMIT})
RECORD_TYPES = frozenset({0, OFFSET_COMMIT, GROUP_METADATA})
WRITE_VERSION = 3  # both values, as Kafka 4.x writes them
MAX_VERSION = 4
NO_EPOCH = -1


# ----- writing ----------------------------------------------------------------------------


def _str(s: str | None) -> bytes:
    if s is None:
        return b"\xff\xff"
    raw = s.encode()
    if len(raw) > 0x7FFF:
        raise CorruptMessageError(f"a string of {len(raw)} bytes does not fit a Kafka record")
    return struct.pack(">h", len(raw)) + raw


def _bytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def encode_offset_key(group_id: str, topic: str, partition: int) -> bytes:
    head = struct.pack(">h", OFFSET_COMMIT)
    return head + _str(group_id) + _str(topic) + struct.pack(">i", partition)


def encode_group_key(group_id: str) -> bytes:
    return struct.pack(">h", GROUP_METADATA) + _str(group_id)


def encode_offset_value(value: Mapping[str, Any]) -> bytes:
    """OffsetCommitValue v3 (a null metadata is written "", Kafka's NO_METADATA)."""
    head = struct.pack(">hqi", WRITE_VERSION, value["offset"], value.get("leader_epoch", NO_EPOCH))
    return head + _str(value.get("metadata") or "") + struct.pack(">q", value["commit_ms"])


def encode_group_value(value: Mapping[str, Any]) -> bytes:
    """GroupMetadataValue v3; currentStateTimestamp -1 (odradek does not keep it)."""
    out = [struct.pack(">h", WRITE_VERSION), _str(value["protocol_type"] or "")]
    out.append(struct.pack(">i", value["generation"]))
    out += [_str(value.get("strategy")), _str(value.get("leader")), struct.pack(">q", -1)]
    members = value.get("members", [])
    out.append(struct.pack(">i", len(members)))
    for m in members:
        out += [_str(m["id"]), _str(m.get("instance_id")), _str(m["client_id"])]
        out += [_str(m["client_host"])]
        out.append(struct.pack(">ii", m["rebalance_timeout_ms"], m["session_timeout_ms"]))
        out += [_bytes(m["subscription"]), _bytes(m["assignment_bytes"])]
    return b"".join(out)


# ----- reading ----------------------------------------------------------------------------


def decode_key(data: bytes) -> tuple[int, str, str, int]:
    """(record type, group, topic, partition); topic "" and partition -1 for a group key."""
    r = RecordReader(data, "classic group")
    record_type = r.num(">h")
    if record_type not in RECORD_TYPES:
        raise CorruptMessageError(f"unknown coordinator record type {record_type}")
    group = r.string()
    if record_type == GROUP_METADATA:
        r.end()
        return record_type, group, "", -1
    topic, partition = r.string(), r.num(">i")
    r.end()
    return record_type, group, topic, partition


def _versioned(data: bytes, what: str) -> tuple[RecordReader, int]:
    version = struct.unpack_from(">h", data)[0] if len(data) >= 2 else -1
    if not 0 <= version <= MAX_VERSION:
        raise CorruptMessageError(f"{what} version {version} unknown")
    r = RecordReader(data, "classic group", flexible=version >= 4)
    r.pos = 2
    return r, version


def decode_offset_value(data: bytes) -> dict[str, Any]:
    r, v = _versioned(data, "OffsetCommitValue")
    value: dict[str, Any] = {"offset": r.num(">q")}
    value["leader_epoch"] = r.num(">i") if v >= 3 else NO_EPOCH
    value["metadata"] = r.string()
    value["commit_ms"] = r.num(">q")
    if v == 1:
        value["expire_ms"] = r.num(">q")
    r.tags()
    r.end()
    return value


def _member(r: RecordReader, v: int) -> dict[str, Any]:
    m: dict[str, Any] = {"id": r.string(), "instance_id": r.nstring() if v >= 3 else None}
    m["client_id"], m["client_host"] = r.string(), r.string()
    rebalance = r.num(">i") if v >= 1 else None
    m["session_timeout_ms"] = r.num(">i")
    m["rebalance_timeout_ms"] = m["session_timeout_ms"] if rebalance is None else rebalance
    m["subscription"], m["assignment_bytes"] = r.blob(), r.blob()
    r.tags()
    return m


def decode_group_value(data: bytes) -> dict[str, Any]:
    r, v = _versioned(data, "GroupMetadataValue")
    value: dict[str, Any] = {"protocol_type": r.string(), "generation": r.num(">i")}
    value["strategy"], value["leader"] = r.nstring(), r.nstring()
    if v >= 2:
        r.num(">q")  # currentStateTimestamp: not kept
    value["members"] = [_member(r, v) for _ in range(r.count())]
    r.tags()
    r.end()
    return value


VALUE_DECODERS: dict[int, Callable[[bytes], dict[str, Any]]] = {
    0: decode_offset_value,
    OFFSET_COMMIT: decode_offset_value,
    GROUP_METADATA: decode_group_value,
}
