"""KIP-932 share group records of `__consumer_offsets`, byte for byte as Kafka 4.2 writes them
(group-coordinator/src/main/resources/common/message/ShareGroup*.json).

The layout is the consumer groups' (consumer_records.py): key = int16 record type, then the
group id (and member id) as int16-length strings, not flexible; value = int16 version (0),
the fields, flexible (compact strings and arrays, uuids of 16 bytes, each struct ending with
its tagged fields: written empty, skipped when read). A tombstone has no value.

    10 ShareGroupMemberMetadata            key (group, member) value rack_id str?,
                                             client_id str, client_host str,
                                             subscribed_topic_names [str]
    11 ShareGroupMetadata                  key (group)         value epoch int32,
                                             metadata_hash int64
    12 ShareGroupTargetAssignmentMetadata  key (group)         value assignment_epoch int32
    13 ShareGroupTargetAssignmentMember    key (group, member) value topic_partitions [tp]
    14 ShareGroupCurrentMemberAssignment   key (group, member) value member_epoch int32,
                                             previous_member_epoch int32, state int8,
                                             assigned_partitions [tp]
    15 ShareGroupStatePartitionMetadata    key (group)         value
                                             initializing_topics [info], initialized_topics
                                             [info], deleting_topics [topic_id uuid,
                                             topic_name str]
      tp = topic_id uuid, partitions [int32]
      info = topic_id uuid, topic_name str, partitions [int32], create_timestamp int64

Type 9 (ShareGroupPartitionMetadata, the subscribed topics of Kafka 4.0's preview; 4.1 put
their hash in ShareGroupMetadata's metadata_hash instead) is read, never written. Values are
dicts with those snake_case names; a [tp] is a dict {topic id: partitions}, an [info] a dict
{topic name: (topic id, partitions)} and deleting_topics a dict {topic name: topic id}.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.group.consumer_records import (
    cstr,
    encode_field,
    group_key_bytes,
    read_field,
    read_group_key,
    read_group_value,
    uvarint,
)
from coordinator.record_reader import RecordReader

PARTITION_METADATA = 9  # read only
MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_METADATA = 12
TARGET_MEMBER = 13
CURRENT_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15
WITH_MEMBER = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
RECORD_TYPES = frozenset(range(PARTITION_METADATA, STATE_PARTITION_METADATA + 1))
MEMBER_STATE_STABLE = 0  # Kafka's MemberState.STABLE: a share member has no other state


@dataclass(frozen=True, slots=True)
class ShareGroupKey:
    record_type: int
    group_id: str
    member_id: str = ""


# record type -> the value's fields (name, kind), in order; kinds as consumer_records.py's
SCHEMAS: dict[int, tuple[tuple[str, str], ...]] = {
    PARTITION_METADATA: (("topics", "topics"),),
    MEMBER_METADATA: (
        ("rack_id", "nstring"),
        ("client_id", "string"),
        ("client_host", "string"),
        ("subscribed_topic_names", "strings"),
    ),
    GROUP_METADATA: (("epoch", "int32"), ("metadata_hash", "int64")),
    TARGET_METADATA: (("assignment_epoch", "int32"),),
    TARGET_MEMBER: (("topic_partitions", "tps"),),
    CURRENT_ASSIGNMENT: (
        ("member_epoch", "int32"),
        ("previous_member_epoch", "int32"),
        ("state", "int8"),
        ("assigned_partitions", "tps"),
    ),
    STATE_PARTITION_METADATA: (
        ("initializing_topics", "infos"),
        ("initialized_topics", "infos"),
        ("deleting_topics", "topic_infos"),
    ),
}
TopicInfos = Mapping[str, tuple[uuid.UUID, frozenset[int] | list[int]]]


# ----- writing ----------------------------------------------------------------------------


def _infos(infos: TopicInfos) -> bytes:
    out = [uvarint(len(infos) + 1)]
    for name in sorted(infos):
        topic_id, parts = infos[name]
        ps = sorted(parts)
        out.append(topic_id.bytes + cstr(name) + uvarint(len(ps) + 1))
        out.append(b"".join(struct.pack(">i", p) for p in ps))
        out.append(struct.pack(">q", 0) + b"\x00")  # create_timestamp: not kept; no tags
    return b"".join(out)


def _topic_infos(topics: Mapping[str, uuid.UUID]) -> bytes:
    out = [uvarint(len(topics) + 1)]
    for name in sorted(topics):
        out.append(topics[name].bytes + cstr(name) + b"\x00")
    return b"".join(out)


def _field(kind: str, v: Any) -> bytes:
    if kind == "int64":
        return struct.pack(">q", v)
    if kind == "infos":
        return _infos(v)
    if kind == "topic_infos":
        return _topic_infos(v)
    return encode_field(kind, v)


def encode_key(key: ShareGroupKey) -> bytes:
    member = key.member_id if key.record_type in WITH_MEMBER else None
    return group_key_bytes(key.record_type, key.group_id, member)


def encode_value(record_type: int, value: Mapping[str, Any] | None) -> bytes | None:
    if value is None:
        return None
    if record_type == PARTITION_METADATA:
        raise ValueError("ShareGroupPartitionMetadata (type 9) is read, never written")
    body = b"".join(_field(kind, value[name]) for name, kind in SCHEMAS[record_type])
    return b"\x00\x00" + body + b"\x00"  # version 0 ... no tagged fields


# ----- reading ----------------------------------------------------------------------------


def _read(r: RecordReader, kind: str) -> Any:
    if kind == "int64":
        return r.num(">q")
    if kind == "infos":
        infos: dict[str, tuple[uuid.UUID, frozenset[int]]] = {}
        for _ in range(r.count()):
            topic_id, name = uuid.UUID(bytes=r.take(16)), r.string()
            parts = frozenset(r.num(">i") for _ in range(r.count()))
            r.num(">q")  # create_timestamp
            r.tags()
            infos[name] = (topic_id, parts)
        return infos
    if kind == "topic_infos":
        topics: dict[str, uuid.UUID] = {}
        for _ in range(r.count()):
            topic_id, name = uuid.UUID(bytes=r.take(16)), r.string()
            r.tags()
            topics[name] = topic_id
        return topics
    return read_field(r, kind)


def decode_key(data: bytes) -> ShareGroupKey:
    return ShareGroupKey(*read_group_key(data, "share group", RECORD_TYPES, WITH_MEMBER))


def decode_value(record_type: int, data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    # later versions' tagged fields (e.g. an assignment timestamp) are skipped
    return read_group_value(record_type, data, "share group", SCHEMAS[record_type], _read)[0]
