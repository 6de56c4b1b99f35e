"""KIP-848 records: golden bytes laid out by hand from Kafka's ConsumerGroup*.json schemas,
round trips through records.py's build/decode dispatch (the classic records':
group/test_classic_records.py)."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.group import consumer_records as cr
from coordinator.group.consumer_records import ConsumerKey
from coordinator.group.records import (
    CoordinatorRecord,
    GroupKey,
    OffsetKey,
    decode,
    encode,
    legacy_key,
    offset_record,
)
from protocol.batch import decode_records
from protocol.errors import CorruptMessageError

T1 = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def s16(text: str) -> bytes:  # a non-flexible string: int16 length
    return struct.pack(">h", len(text)) + text.encode()


def cs(text: str) -> bytes:  # a compact string: uvarint(length + 1)
    return bytes([len(text) + 1]) + text.encode()


def test_member_key_golden() -> None:
    key = ConsumerKey(cr.CURRENT_ASSIGNMENT, "g", "m1")
    assert cr.encode_key(key) == b"\x00\x08" + s16("g") + s16("m1")
    assert cr.decode_key(cr.encode_key(key)) == key


def test_group_key_has_no_member() -> None:
    key = ConsumerKey(cr.GROUP_METADATA, "grp")
    assert cr.encode_key(key) == b"\x00\x03" + s16("grp")


def test_group_metadata_value_golden() -> None:
    # version 0, epoch int32, empty tagged fields
    assert cr.encode_value(cr.GROUP_METADATA, {"epoch": 7}) == b"\x00\x00\x00\x00\x00\x07\x00"


def test_current_assignment_value_golden() -> None:
    value = {
        "member_epoch": 5,
        "previous_member_epoch": 4,
        "state": 1,
        "assigned_partitions": {T1: frozenset({0, 2})},
        "partitions_pending_revocation": {},
    }
    want = (
        b"\x00\x00"  # version 0
        + struct.pack(">ii", 5, 4)
        + b"\x01"  # state int8
        + b"\x02"  # one TopicPartitions
        + T1.bytes
        + b"\x03"  # two partitions
        + struct.pack(">ii", 0, 2)
        + b"\x00"  # the struct's tagged fields
        + b"\x01"  # no partitions pending revocation
        + b"\x00"  # the value's tagged fields
    )
    data = cr.encode_value(cr.CURRENT_ASSIGNMENT, value)
    assert data == want
    assert cr.decode_value(cr.CURRENT_ASSIGNMENT, data) == value


def test_member_metadata_value_golden() -> None:
    value = {
        "instance_id": None,
        "rack_id": None,
        "client_id": "c",
        "client_host": "/h",
        "subscribed_topic_names": ["a", "b"],
        "subscribed_topic_regex": None,
        "rebalance_timeout_ms": 300000,
        "server_assignor": "uniform",
        "classic_member_metadata": None,  # a consumer-protocol member: tag 0 absent
    }
    want = (
        b"\x00\x00\x00\x00"  # version, null instance id, null rack id
        + cs("c")
        + cs("/h")
        + b"\x03"
        + cs("a")
        + cs("b")
        + b"\x00"  # null regex
        + struct.pack(">i", 300000)
        + cs("uniform")
        + b"\x00"
    )
    data = cr.encode_value(cr.MEMBER_METADATA, value)
    assert data == want
    assert cr.decode_value(cr.MEMBER_METADATA, data) == value


def test_member_metadata_classic_tagged_field_golden() -> None:
    """A classic member of a consumer group (online migration) carries Kafka's
    ClassicMemberMetadata as tag 0: session timeout, then its protocols (name, metadata)."""
    classic = {"session_timeout_ms": 45000, "supported_protocols": [["range", b"\x00\x01"]]}
    value = {
        "instance_id": None,
        "rack_id": None,
        "client_id": "",
        "client_host": "",
        "subscribed_topic_names": [],
        "subscribed_topic_regex": None,
        "rebalance_timeout_ms": -1,
        "server_assignor": None,
        "classic_member_metadata": classic,
    }
    struct_bytes = (
        struct.pack(">i", 45000)
        + b"\x02"  # one protocol
        + cs("range")
        + b"\x03\x00\x01"  # compact bytes
        + b"\x00"  # the protocol's tagged fields
        + b"\x00"  # the struct's tagged fields
    )
    plain = cr.encode_value(cr.MEMBER_METADATA, {**value, "classic_member_metadata": None})
    assert plain is not None
    data = cr.encode_value(cr.MEMBER_METADATA, value)
    assert data == plain[:-1] + b"\x01\x00" + bytes([len(struct_bytes)]) + struct_bytes
    assert cr.decode_value(cr.MEMBER_METADATA, data) == value
    unknown = plain[:-1] + b"\x01\x05\x03abc"  # a tag odradek does not know: skipped
    without = {**value, "classic_member_metadata": None}
    assert cr.decode_value(cr.MEMBER_METADATA, unknown) == without


def test_partition_metadata_golden() -> None:
    value = {"topics": [{"topic_id": T1, "topic_name": "t", "num_partitions": 3}]}
    want = b"\x00\x00\x02" + T1.bytes + cs("t") + struct.pack(">i", 3) + b"\x01\x00" + b"\x00"
    assert cr.encode_value(cr.PARTITION_METADATA, value) == want
    assert cr.decode_value(cr.PARTITION_METADATA, want) == value


def test_tombstone_has_no_value() -> None:
    assert cr.encode_value(cr.TARGET_MEMBER, None) is None
    assert cr.decode_value(cr.TARGET_MEMBER, None) is None


def test_dispatch_tells_msgpack_from_kafka_records() -> None:
    from coordinator.group.records import build

    records = [
        offset_record("g", "t", 0, 42, None, 1),
        CoordinatorRecord(ConsumerKey(cr.GROUP_METADATA, "g"), {"epoch": 3}),
        CoordinatorRecord(ConsumerKey(cr.TARGET_MEMBER, "g", "m"), None),
        CoordinatorRecord(
            ConsumerKey(cr.TARGET_MEMBER, "g", "m2"), {"topic_partitions": {T1: frozenset({1})}}
        ),
    ]
    batch = build(records, 1000)
    decoded = [decode(r.key, r.value) for r in decode_records(batch, 0)[1]]
    assert decoded == records
    assert legacy_key(OffsetKey("g", "t", 0))[0] & 0xF0 == 0x90
    assert legacy_key(GroupKey("g"))[0] & 0xF0 == 0x90
    assert encode(records[1])[0][0][0] == 0


def test_corrupt_records_are_refused() -> None:
    with pytest.raises(CorruptMessageError):
        cr.decode_key(b"\x00\x02" + s16("g"))  # type 2 is a classic group's, not ours
    with pytest.raises(CorruptMessageError):
        cr.decode_value(cr.GROUP_METADATA, b"\x00\x00\x00")
    with pytest.raises(CorruptMessageError):
        cr.decode_value(cr.GROUP_METADATA, b"\x00\x01\x00\x00\x00\x07\x00")


tps = st.dictionaries(
    st.uuids(), st.frozensets(st.integers(0, 10_000), min_size=1, max_size=5), max_size=4
)


@given(
    epoch=st.integers(-(2**31), 2**31 - 1),
    state=st.sampled_from([0, 1, 2]),
    assigned=tps,
    pending=tps,
    group=st.text(max_size=20),
    member=st.text(max_size=20),
)
def test_current_assignment_round_trip(
    epoch: int, state: int, assigned: dict, pending: dict, group: str, member: str
) -> None:
    key = ConsumerKey(cr.CURRENT_ASSIGNMENT, group, member)
    value = {
        "member_epoch": epoch,
        "previous_member_epoch": epoch // 2,
        "state": state,
        "assigned_partitions": assigned,
        "partitions_pending_revocation": pending,
    }
    data = cr.encode_value(cr.CURRENT_ASSIGNMENT, value)
    assert decode(cr.encode_key(key), data) == CoordinatorRecord(key, value)
