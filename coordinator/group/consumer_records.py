"""KIP-848 consumer group records of `__consumer_offsets`, byte for byte as Kafka writes them
(group-coordinator/src/main/resources/common/message/ConsumerGroup*.json).

Key: int16 record type (the key schema's version) then the key fields, not flexible (a string
is int16 length + UTF-8). Value: int16 version (0) then the fields, flexible: a string is
uvarint(length+1) + UTF-8 (0: null), an array uvarint(count+1) (0: null), a uuid 16 bytes, and
each struct (the value itself and each array element) ends with its tagged fields:
uvarint(count), then per field uvarint(tag), uvarint(size), data. The one we write and read is
ConsumerGroupMemberMetadata's ClassicMemberMetadata (tag 0, a classic-protocol member of a
consumer group: session_timeout_ms int32, supported_protocols [name str, metadata bytes]);
others are skipped. A tombstone has no value.

    3 ConsumerGroupMetadata            key (group)          value epoch int32
    4 ConsumerGroupPartitionMetadata   key (group)          value topics [topic_id uuid,
                                         topic_name str, num_partitions int32,
                                         partition_metadata [] (deprecated: written empty)]
    5 ConsumerGroupMemberMetadata      key (group, member)  value instance_id str?, rack_id str?,
                                         client_id str, client_host str, subscribed_topic_names
                                         [str], subscribed_topic_regex str?, rebalance_timeout_ms
                                         int32, server_assignor str?, tag 0:
                                         classic_member_metadata (None: absent)
    6 ConsumerGroupTargetAssignmentMetadata key (group)     value assignment_epoch int32
    7 ConsumerGroupTargetAssignmentMember  key (group, member) value topic_partitions [tp]
    8 ConsumerGroupCurrentMemberAssignment key (group, member) value member_epoch int32,
                                         previous_member_epoch int32, state int8,
                                         assigned_partitions [tp],
                                         partitions_pending_revocation [tp]
      tp = topic_id uuid, partitions [int32]

Values are dicts with those snake_case names; a tp list is a dict {topic id: partitions}.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.record_reader import RecordReader
from protocol.errors import CorruptMessageError

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_METADATA = 6
TARGET_MEMBER = 7
CURRENT_ASSIGNMENT = 8
WITH_MEMBER = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
RECORD_TYPES = frozenset(range(GROUP_METADATA, CURRENT_ASSIGNMENT + 1))


@dataclass(frozen=True, slots=True)
class ConsumerKey:
    record_type: int
    group_id: str
    member_id: str = ""


# record type -> the value's fields (name, kind), in order
SCHEMAS: dict[int, tuple[tuple[str, str], ...]] = {
    GROUP_METADATA: (("epoch", "int32"),),
    PARTITION_METADATA: (("topics", "topics"),),
    MEMBER_METADATA: (
        ("instance_id", "nstring"),
        ("rack_id", "nstring"),
        ("client_id", "string"),
        ("client_host", "string"),
        ("subscribed_topic_names", "strings"),
        ("subscribed_topic_regex", "nstring"),
        ("rebalance_timeout_ms", "int32"),
        ("server_assignor", "nstring"),
    ),
    TARGET_METADATA: (("assignment_epoch", "int32"),),
    TARGET_MEMBER: (("topic_partitions", "tps"),),
    CURRENT_ASSIGNMENT: (
        ("member_epoch", "int32"),
        ("previous_member_epoch", "int32"),
        ("state", "int8"),
        ("assigned_partitions", "tps"),
        ("partitions_pending_revocation", "tps"),
    ),
}


# ----- writing ----------------------------------------------------------------------------


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def tps_bytes(tps: Mapping[uuid.UUID, frozenset[int] | list[int]]) -> bytes:
    out = [uvarint(len(tps) + 1)]
    for topic_id in sorted(tps, key=str):
        parts = sorted(tps[topic_id])
        out.append(topic_id.bytes + uvarint(len(parts) + 1))
        out.append(b"".join(struct.pack(">i", p) for p in parts) + b"\x00")
    return b"".join(out)


def _topics(topics: list[dict[str, Any]]) -> bytes:
    out = [uvarint(len(topics) + 1)]
    for t in topics:
        out.append(t["topic_id"].bytes + cstr(t["topic_name"]))
        out.append(struct.pack(">i", t["num_partitions"]) + b"\x01\x00")  # no racks; no tags
    return b"".join(out)


def encode_field(kind: str, v: Any) -> bytes:
    if kind == "int32":
        return struct.pack(">i", v)
    if kind == "int8":
        return struct.pack(">b", v)
    if kind in ("string", "nstring"):
        return cstr(v)
    if kind == "strings":
        return uvarint(len(v) + 1) + b"".join(cstr(s) for s in v)
    if kind == "tps":
        return tps_bytes(v)
    return _topics(v)


def group_key_bytes(record_type: int, group_id: str, member_id: str | None) -> bytes:
    """A KIP-848 or KIP-932 record's key: int16 type, the group (and member) id as int16-length
    strings; `member_id` None for the types keyed by the group alone."""
    out = struct.pack(">h", record_type)
    for s in [group_id] if member_id is None else [group_id, member_id]:
        raw = s.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out


def encode_key(key: ConsumerKey) -> bytes:
    member = key.member_id if key.record_type in WITH_MEMBER else None
    return group_key_bytes(key.record_type, key.group_id, member)


def _classic(value: Mapping[str, Any]) -> bytes:
    """ClassicMemberMetadata as a flexible struct (its own empty tagged fields at the end)."""
    protocols = value["supported_protocols"]
    out = [struct.pack(">i", value["session_timeout_ms"]), uvarint(len(protocols) + 1)]
    for name, metadata in protocols:
        out += [cstr(name), uvarint(len(metadata) + 1), bytes(metadata), b"\x00"]
    return b"".join(out) + b"\x00"


def encode_value(record_type: int, value: Mapping[str, Any] | None) -> bytes | None:
    if value is None:
        return None
    body = b"".join(encode_field(kind, value[name]) for name, kind in SCHEMAS[record_type])
    classic = value.get("classic_member_metadata") if record_type == MEMBER_METADATA else None
    if classic is None:
        return b"\x00\x00" + body + b"\x00"  # version 0 ... no tagged fields
    tagged = _classic(classic)
    return b"\x00\x00" + body + b"\x01\x00" + uvarint(len(tagged)) + tagged


# ----- reading ----------------------------------------------------------------------------


def read_field(r: RecordReader, kind: str) -> Any:
    if kind == "int32":
        return r.num(">i")
    if kind == "int8":
        return r.num(">b")
    if kind == "string":
        return r.nstring() or ""
    if kind == "nstring":
        return r.nstring()
    if kind == "strings":
        return [r.nstring() or "" for _ in range(r.count())]
    if kind == "tps":
        out: dict[uuid.UUID, frozenset[int]] = {}
        for _ in range(r.count()):
            topic_id = uuid.UUID(bytes=r.take(16))
            out[topic_id] = frozenset(r.num(">i") for _ in range(r.count()))
            r.tags()
        return out
    topics = []
    for _ in range(r.count()):
        topic_id = uuid.UUID(bytes=r.take(16))
        name, n = r.nstring() or "", r.num(">i")
        for _ in range(r.count()):  # deprecated rack lists: skipped
            r.num(">i")
            for _ in range(r.count()):
                r.nstring()
            r.tags()
        r.tags()
        topics.append({"topic_id": topic_id, "topic_name": name, "num_partitions": n})
    return topics


def read_group_key(
    data: bytes, what: str, record_types: frozenset[int], with_member: frozenset[int]
) -> tuple[int, str, str]:
    """(type, group id, member id or "") of a key `group_key_bytes` wrote; an unknown type is
    CorruptMessageError naming `what`."""
    r = RecordReader(data, what)
    record_type = r.num(">h")
    if record_type not in record_types:
        raise CorruptMessageError(f"unknown {what} record type {record_type}")
    group = r.take(r.num(">h")).decode()
    member = r.take(r.num(">h")).decode() if record_type in with_member else ""
    r.end()
    return record_type, group, member


def read_group_value(
    record_type: int, data: bytes, what: str, fields: tuple[tuple[str, str], ...],
    read: Callable[[RecordReader, str], Any],
) -> tuple[dict[str, Any], dict[int, bytes]]:  # fmt: skip
    """A version-0 flexible value: its `fields` read in order by `read`, and its tagged fields
    ({tag: bytes}); another version is CorruptMessageError."""
    r = RecordReader(data, what, flexible=True)
    version = r.num(">h")
    if version != 0:
        raise CorruptMessageError(f"record type {record_type} value version {version} unknown")
    value = {name: read(r, kind) for name, kind in fields}
    tagged = read_tagged(r)
    r.end()
    return value, tagged


def decode_key(data: bytes) -> ConsumerKey:
    return ConsumerKey(*read_group_key(data, "consumer group", RECORD_TYPES, WITH_MEMBER))


def decode_value(record_type: int, data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    value, tagged = read_group_value(
        record_type, data, "consumer group", SCHEMAS[record_type], read_field
    )
    if record_type == MEMBER_METADATA:
        raw = tagged.get(0)
        value["classic_member_metadata"] = None if raw is None else _read_classic(raw)
    return value


def read_tagged(r: RecordReader) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        out[tag] = r.take(r.uvarint())
    return out


def _read_classic(data: bytes) -> dict[str, Any]:
    r = RecordReader(data, "consumer group", flexible=True)
    session = r.num(">i")
    protocols = []
    for _ in range(r.count()):
        name = r.nstring() or ""
        protocols.append([name, r.blob()])
        r.tags()
    r.tags()
    return {"session_timeout_ms": session, "supported_protocols": protocols}
