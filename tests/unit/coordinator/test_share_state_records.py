"""`__share_group_state` records against bytes built by hand from Kafka 4.2's JSON schemas
(ShareSnapshotKey/Value, ShareUpdateKey/Value), field by field."""

from __future__ import annotations

import struct
import uuid

import pytest

from coordinator.share import records as r
from protocol.batch import decode_records, iter_batches
from protocol.errors import CorruptMessageError

TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
KEY = r.ShareKey("jobs", TOPIC_ID, 3)


def _key_bytes(record_type: int) -> bytes:
    # int16 record type, string GroupId (int16 length), uuid TopicId, int32 Partition
    return struct.pack(">hh", record_type, 4) + b"jobs" + TOPIC_ID.bytes + struct.pack(">i", 3)


def _batch_bytes(first: int, last: int, state: int, count: int) -> bytes:
    return struct.pack(">qqbh", first, last, state, count) + b"\x00"  # + empty tagged fields


def test_snapshot_key_and_value_are_kafkas_bytes() -> None:
    value = r.ShareSnapshot(7, 2, 5, 100, 1_700_000_000_000, 1_700_000_000_123, (
        r.StateBatch(100, 104, 2, 1), r.StateBatch(105, 105, 0, 3),
    ))  # fmt: skip
    key, data = r.encode(r.ShareRecord(r.SNAPSHOT, KEY, value))
    assert key == _key_bytes(0)
    expected = (
        struct.pack(">h", 0)  # value version
        + struct.pack(">iiiq", 7, 2, 5, 100)  # SnapshotEpoch, StateEpoch, LeaderEpoch, Start
        + struct.pack(">qq", 1_700_000_000_000, 1_700_000_000_123)  # Create/WriteTimestamp
        + b"\x03"  # compact array: 2 batches + 1
        + _batch_bytes(100, 104, 2, 1)
        + _batch_bytes(105, 105, 0, 3)
        + b"\x00"  # no tagged fields
    )
    assert data == expected
    assert r.decode(key, data) == r.ShareRecord(r.SNAPSHOT, KEY, value)


def test_update_key_and_value_are_kafkas_bytes() -> None:
    value = r.ShareUpdate(7, 5, -1, (r.StateBatch(110, 119, 4, 5),))
    key, data = r.encode(r.ShareRecord(r.UPDATE, KEY, value))
    assert key == _key_bytes(1)
    expected = (
        struct.pack(">h", 0)
        + struct.pack(">iiq", 7, 5, -1)  # SnapshotEpoch, LeaderEpoch, StartOffset
        + b"\x02"
        + _batch_bytes(110, 119, 4, 5)
        + b"\x00"
    )
    assert data == expected
    assert r.decode(key, data) == r.ShareRecord(r.UPDATE, KEY, value)


def test_delivery_complete_count_is_tag_0_only_when_set() -> None:
    value = r.ShareUpdate(1, 0, 10, (), delivery_complete_count=4)
    _, data = r.encode(r.ShareRecord(r.UPDATE, KEY, value))
    assert data is not None
    # empty array (0 + 1), then one tagged field: tag 0, size 4, int32 4
    assert data.endswith(b"\x01" + b"\x01\x00\x04" + struct.pack(">i", 4))
    assert r.decode_value(r.UPDATE, data) == value


def test_tombstone_and_unknown_tags() -> None:
    key, data = r.encode(r.ShareRecord(r.SNAPSHOT, KEY, None))
    assert data is None and r.decode(key, None).value is None
    # an unknown tagged field (tag 9, 2 bytes) on the value is skipped
    raw = struct.pack(">hiiq", 0, 1, 0, 5) + b"\x01" + b"\x01\x09\x02ab"
    assert r.decode_value(r.UPDATE, raw) == r.ShareUpdate(1, 0, 5, ())


@pytest.mark.parametrize(
    "key, value",
    [
        (_key_bytes(0)[:-1], None),  # key cut short
        (struct.pack(">hh", 2, 0) + TOPIC_ID.bytes + b"\0\0\0\0", None),  # unknown type
        (_key_bytes(1), struct.pack(">h", 1) + b"\0" * 20),  # unknown value version
        (_key_bytes(1), struct.pack(">hiiq", 0, 1, 0, 5) + b"\x01\x00\x00"),  # trailing bytes
    ],
)
def test_bad_records_do_not_decode(key: bytes, value: bytes | None) -> None:
    with pytest.raises(CorruptMessageError):
        r.decode(key, value)


def test_coordinator_key_and_partition_follow_kafka() -> None:
    # Kafka prints a Uuid as URL-safe base64 without padding
    assert KEY.coordinator_key() == "jobs:Dx4tPEtaaXiHlqW0w9Lh8A:3"
    assert 0 <= r.partition_for(KEY, 50) < 50
    assert r.partition_for(KEY, 1) == 0


def test_a_built_batch_holds_the_records() -> None:
    records = [
        r.ShareRecord(r.SNAPSHOT, KEY, r.ShareSnapshot(0, 0, 0, 0, 1, 1, ())),
        r.ShareRecord(r.UPDATE, KEY, r.ShareUpdate(0, 0, -1, (r.StateBatch(0, 0, 2, 1),))),
    ]
    batch = r.build(records, 1_000)
    [(pos, _header)] = list(iter_batches(batch, check_crc=True))
    decoded = [r.decode(x.key, x.value) for x in decode_records(batch, pos)[1]]
    assert decoded == records
