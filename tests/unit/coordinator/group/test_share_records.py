"""Share group records of `__consumer_offsets` (coordinator/group/share_records.py) against
bytes built by hand, field by field, from Kafka 4.2's JSON schemas (ShareGroup*Key/Value.json
of group-coordinator/src/main/resources/common/message), through records.py's encode/decode as
the coordinator writes and loads them."""

from __future__ import annotations

import struct
import uuid

import pytest

from coordinator.group import records
from coordinator.group import share_records as sr
from coordinator.group.records import CoordinatorRecord
from coordinator.group.share_records import ShareGroupKey
from protocol.errors import CorruptMessageError

T = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")


def key(kind: int, *names: str) -> bytes:
    """int16 record type, then each string as int16 length + UTF-8 (keys are not flexible)."""
    return struct.pack(">h", kind) + b"".join(struct.pack(">h", len(n)) + n.encode() for n in names)


def cstr(s: str) -> bytes:
    return bytes([len(s) + 1]) + s.encode()  # compact string: uvarint(length + 1)


def tps(parts: list[int]) -> bytes:
    """[TopicPartitions] of one topic T: compact array, uuid, compact int32 array, no tags."""
    return b"\x02" + T.bytes + bytes([len(parts) + 1]) + b"".join(
        struct.pack(">i", p) for p in parts) + b"\x00"  # fmt: skip


V0, NO_TAGS = b"\x00\x00", b"\x00"
CASES = [
    (  # 10 ShareGroupMemberMetadataValue: RackId (nullable), ClientId, ClientHost, topics
        ShareGroupKey(sr.MEMBER_METADATA, "jobs", "m-1"),
        {"rack_id": None, "client_id": "worker", "client_host": "/10.0.0.1",
         "subscribed_topic_names": ["a", "b"]},
        key(10, "jobs", "m-1"),
        V0 + b"\x00" + cstr("worker") + cstr("/10.0.0.1") + b"\x03" + cstr("a") + cstr("b")
        + NO_TAGS,
    ),
    (  # 11 ShareGroupMetadataValue: Epoch int32, MetadataHash int64
        ShareGroupKey(sr.GROUP_METADATA, "jobs"),
        {"epoch": 7, "metadata_hash": -2},
        key(11, "jobs"),
        V0 + struct.pack(">iq", 7, -2) + NO_TAGS,
    ),
    (  # 12 ShareGroupTargetAssignmentMetadataValue: AssignmentEpoch int32
        ShareGroupKey(sr.TARGET_METADATA, "jobs"),
        {"assignment_epoch": 7},
        key(12, "jobs"),
        V0 + struct.pack(">i", 7) + NO_TAGS,
    ),
    (  # 13 ShareGroupTargetAssignmentMemberValue: TopicPartitions [TopicId, Partitions]
        ShareGroupKey(sr.TARGET_MEMBER, "jobs", "m-1"),
        {"topic_partitions": {T: frozenset({0, 2})}},
        key(13, "jobs", "m-1"),
        V0 + tps([0, 2]) + NO_TAGS,
    ),
    (  # 14 ShareGroupCurrentMemberAssignmentValue: epochs, State int8, AssignedPartitions
        ShareGroupKey(sr.CURRENT_ASSIGNMENT, "jobs", "m-1"),
        {"member_epoch": 7, "previous_member_epoch": 6, "state": 0,
         "assigned_partitions": {T: frozenset({1})}},
        key(14, "jobs", "m-1"),
        V0 + struct.pack(">iib", 7, 6, 0) + tps([1]) + NO_TAGS,
    ),
    (  # 15 ShareGroupStatePartitionMetadataValue: Initializing, Initialized, Deleting topics
        ShareGroupKey(sr.STATE_PARTITION_METADATA, "jobs"),
        {"initializing_topics": {}, "initialized_topics": {"t": (T, frozenset({0, 1}))},
         "deleting_topics": {"gone": T}},
        key(15, "jobs"),
        V0 + b"\x01"  # InitializingTopics: none
        + b"\x02" + T.bytes + cstr("t") + b"\x03" + struct.pack(">ii", 0, 1)
        + struct.pack(">q", 0) + NO_TAGS  # CreateTimestamp, the info's tags
        + b"\x02" + T.bytes + cstr("gone") + NO_TAGS  # DeletingTopics [TopicId, TopicName]
        + NO_TAGS,
    ),
]  # fmt: skip


@pytest.mark.parametrize("k, value, key_bytes, value_bytes", CASES)
def test_each_record_is_kafkas_bytes_and_reads_back(
    k: ShareGroupKey, value: dict[str, object], key_bytes: bytes, value_bytes: bytes
) -> None:
    (pair,) = records.encode(CoordinatorRecord(k, value))
    assert pair == (key_bytes, value_bytes)
    assert records.decode(key_bytes, value_bytes) == CoordinatorRecord(k, value)


def test_a_tombstone_has_no_value_and_reads_back() -> None:
    k = ShareGroupKey(sr.MEMBER_METADATA, "jobs", "m-1")
    assert records.encode(CoordinatorRecord(k, None)) == [(key(10, "jobs", "m-1"), None)]
    assert records.decode(key(10, "jobs", "m-1"), None) == CoordinatorRecord(k, None)


def test_later_tagged_fields_are_skipped_and_a_preview_partition_metadata_is_read() -> None:
    # a later writer's tagged field (tag 0, 8 bytes) after AssignmentEpoch
    tagged = V0 + struct.pack(">i", 3) + b"\x01\x00\x08" + struct.pack(">q", 12345)
    got = records.decode(key(12, "jobs"), tagged)
    assert got.value == {"assignment_epoch": 3}
    # 9 ShareGroupPartitionMetadataValue (Kafka 4.0): Topics [TopicId, TopicName,
    # NumPartitions, PartitionMetadata []]
    preview = V0 + b"\x02" + T.bytes + cstr("t") + struct.pack(">i", 2) + b"\x01\x00" + NO_TAGS
    got = records.decode(key(9, "jobs"), preview)
    assert got.value == {"topics": [{"topic_id": T, "topic_name": "t", "num_partitions": 2}]}
    with pytest.raises(ValueError, match="never written"):
        records.encode(CoordinatorRecord(ShareGroupKey(9, "jobs"), got.value))


@pytest.mark.parametrize(
    "key_bytes, value_bytes, why",
    [
        (key(11, "jobs"), b"\x00\x01" + struct.pack(">iq", 1, 0) + NO_TAGS, "version 1 unknown"),
        (key(11, "jobs"), V0 + struct.pack(">i", 1), "truncated"),
        (key(11, "jobs"), V0 + struct.pack(">iq", 1, 0) + NO_TAGS + b"x", "bytes after"),
        (key(10, "jobs"), None, "truncated"),  # a member's key without its member id
    ],
)
def test_a_bad_record_is_a_corrupt_message_not_a_crash(
    key_bytes: bytes, value_bytes: bytes | None, why: str
) -> None:
    with pytest.raises(CorruptMessageError, match=why):
        records.decode(key_bytes, value_bytes)
