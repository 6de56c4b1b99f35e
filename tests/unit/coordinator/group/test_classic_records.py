"""Offset commits and classic groups in Kafka's bytes (classic_records.py): golden bytes laid out
by hand from Kafka's OffsetCommit{Key,Value}.json and GroupMetadata{Key,Value}.json, every value
version read, round trips, tombstones in both key formats, the msgpack records written before
issue 33 still loading, and a log mixing both formats replayed in order."""

from __future__ import annotations

import struct
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.group import classic
from coordinator.group import classic_records as kafka
from coordinator.group import group as group_ops
from coordinator.group.group import Group, Member
from coordinator.group.records import (
    CoordinatorRecord,
    GroupKey,
    OffsetKey,
    build,
    decode,
    legacy_key,
    offset_record,
)
from coordinator.group.states import State
from protocol.batch import decode_all
from protocol.errors import CorruptMessageError


def s16(text: str | None) -> bytes:  # a non-flexible string: int16 length, -1 for null
    if text is None:
        return b"\xff\xff"
    return struct.pack(">h", len(text.encode())) + text.encode()


def b32(data: bytes) -> bytes:  # non-flexible bytes: int32 length
    return struct.pack(">i", len(data)) + data


def cs(text: str | None) -> bytes:  # a compact string: uvarint(length + 1), 0 for null
    return b"\x00" if text is None else bytes([len(text) + 1]) + text.encode()


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def _log(records: list[CoordinatorRecord]) -> list[tuple[bytes, bytes | None]]:
    """What `build` writes for `records`: (key, value) bytes, in order."""
    return [(r.key or b"", r.value) for r in decode_all(build(records, 1_000))]


def _replay(pairs: list[tuple[bytes, bytes | None]], now_ms: int = 0) -> dict[str, Group]:
    groups: dict[str, Group] = {}
    for key, value in pairs:
        group_ops.replay(groups, decode(key, value), now_ms)
    return groups


# ----- golden bytes -----------------------------------------------------------------------


def test_offset_commit_key_and_value_golden() -> None:
    record = offset_record("grp", "orders", 3, 42, "meta", 1_700_000_000_000, leader_epoch=7)
    [(key, value)] = _log([record])
    assert key == i16(1) + s16("grp") + s16("orders") + i32(3)
    # OffsetCommitValue v3: offset, leaderEpoch, metadata, commitTimestamp (Kafka 4.x's version)
    assert value == i16(3) + i64(42) + i32(7) + s16("meta") + i64(1_700_000_000_000)
    assert decode(key, value) == record


def test_offset_without_metadata_or_epoch_is_written_as_kafka_does() -> None:
    """A null metadata is Kafka's NO_METADATA (""), an unknown leader epoch -1; the record
    kept in memory says the same, so an offset reads alike before and after a reload."""
    record = offset_record("g", "t", 0, 5, None, 9)
    assert record.value == {"offset": 5, "metadata": "", "commit_ms": 9, "leader_epoch": -1}
    [(_, value)] = _log([record])
    assert value == i16(3) + i64(5) + i32(-1) + s16("") + i64(9)


def _kafka_group() -> Group:
    """A Stable Kafka group of two members (b static), as its leader's SyncGroup leaves it."""
    protocols = [("range", b"sub-range"), ("roundrobin", b"sub-rr")]
    g = Group("billing", State.READY, 5, "range", protocol_type="consumer", leader_id="a")
    for mid, iid in (("a", None), ("b", "inst-b")):
        g.members[mid] = Member(
            mid, f"cli-{mid}", 10_000, 30_000, (), None, client_host="/10.0.0.1",
            protocols=list(protocols), assignment_bytes=f"asg-{mid}".encode(), instance_id=iid,
        )  # fmt: skip
    return g


def test_group_metadata_key_and_value_golden() -> None:
    g = _kafka_group()
    [(key, value)] = _log([group_ops.group_record(g)])
    assert key == i16(2) + s16("billing")
    members = {
        "a": s16("a") + s16(None) + s16("cli-a") + s16("/10.0.0.1") + i32(30_000) + i32(10_000)
        + b32(b"sub-range") + b32(b"asg-a"),
        "b": s16("b") + s16("inst-b") + s16("cli-b") + s16("/10.0.0.1") + i32(30_000)
        + i32(10_000) + b32(b"sub-range") + b32(b"asg-b"),
    }  # fmt: skip
    # GroupMetadataValue v3: protocolType, generation, protocol, leader, currentStateTimestamp
    want = i16(3) + s16("consumer") + i32(5) + s16("range") + s16("a") + i64(-1) + i32(2)
    assert value == want + members["a"] + members["b"]


def test_empty_kafka_group_record_golden() -> None:
    g = Group("g", generation=4, protocol_type="consumer")
    [(key, value)] = _log([group_ops.group_record(g)])
    assert value == i16(3) + s16("consumer") + i32(4) + s16(None) + s16(None) + i64(-1) + i32(0)
    back = _replay([(key, value)])["g"]
    assert (back.state, back.generation, back.protocol_type, back.members) == (
        State.EMPTY, 4, "consumer", {})  # fmt: skip


# ----- reading every version ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (i16(0) + i64(5) + s16("m") + i64(10), {"leader_epoch": -1}),
        (i16(1) + i64(5) + s16("m") + i64(10) + i64(99), {"leader_epoch": -1, "expire_ms": 99}),
        (i16(2) + i64(5) + s16("m") + i64(10), {"leader_epoch": -1}),
        (i16(3) + i64(5) + i32(2) + s16("m") + i64(10), {"leader_epoch": 2}),
        # v4, flexible: a compact string, then tagged fields (one unknown tag 9, skipped)
        (i16(4) + i64(5) + i32(2) + cs("m") + i64(10) + b"\x01\x09\x02zz", {"leader_epoch": 2}),
    ],
)
def test_offset_commit_value_versions(raw: bytes, want: dict[str, Any]) -> None:
    assert kafka.decode_offset_value(raw) == {"offset": 5, "metadata": "m", "commit_ms": 10,
                                              **want}  # fmt: skip


def test_group_metadata_value_v0_and_v4() -> None:
    v0 = (i16(0) + s16("consumer") + i32(3) + s16("range") + s16("m1") + i32(1)
          + s16("m1") + s16("c") + s16("h") + i32(6000) + b32(b"s") + b32(b"a"))  # fmt: skip
    got = kafka.decode_group_value(v0)
    assert got["members"] == [{"id": "m1", "instance_id": None, "client_id": "c",
                               "client_host": "h", "session_timeout_ms": 6000,
                               "rebalance_timeout_ms": 6000, "subscription": b"s",
                               "assignment_bytes": b"a"}]  # fmt: skip
    v4 = (i16(4) + cs("consumer") + i32(3) + cs("range") + cs("m1") + i64(77) + b"\x02"
          + cs("m1") + cs("i1") + cs("c") + cs("h") + i32(9000) + i32(6000) + b"\x02s"
          + b"\x02a" + b"\x00" + b"\x00")  # fmt: skip
    got4 = kafka.decode_group_value(v4)
    assert got4["members"][0] == {**got["members"][0], "instance_id": "i1",
                                  "rebalance_timeout_ms": 9000}  # fmt: skip
    assert (got4["protocol_type"], got4["generation"], got4["strategy"], got4["leader"]) == (
        "consumer", 3, "range", "m1")  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (i16(1) + s16("g"), None),  # key truncated
        (i16(2) + s16("g") + b"x", None),  # bytes after the key
        (i16(1) + s16("g") + s16("t") + i32(0), i16(3) + i64(1)),  # value truncated
        (i16(1) + s16("g") + s16("t") + i32(0), i16(5) + i64(1)),  # a version not known
        # an absurd member count
        (
            i16(2) + s16("g"),
            i16(3) + s16("c") + i32(1) + s16(None) + s16(None) + i64(0) + i32(1 << 30),
        ),
    ],
)
def test_corrupt_records_are_refused(key: bytes, value: bytes | None) -> None:
    with pytest.raises(CorruptMessageError):
        decode(key, value)


@given(record_type=st.sampled_from([0, 1, 2]), key=st.binary(max_size=30),
       value=st.none() | st.binary(max_size=60))  # fmt: skip
def test_any_bytes_decode_or_are_refused_as_corrupt(
    record_type: int, key: bytes, value: bytes | None
) -> None:
    """Whatever follows a classic record's type: a record, or CorruptMessageError (which the
    coordinator's load logs and skips), never another exception."""
    try:
        record = decode(i16(record_type) + key, value)
    except CorruptMessageError:
        return
    assert isinstance(record.key, GroupKey if record_type == 2 else OffsetKey)


# ----- round trips ------------------------------------------------------------------------

names = st.text(max_size=20)
int32s = st.integers(-(2**31), 2**31 - 1)
members = st.fixed_dictionaries({
    "id": names, "instance_id": st.none() | names, "client_id": names, "client_host": names,
    "rebalance_timeout_ms": int32s, "session_timeout_ms": int32s,
    "subscription": st.binary(max_size=40), "assignment_bytes": st.binary(max_size=40),
})  # fmt: skip


@given(
    protocol_type=names.filter(bool), generation=int32s, strategy=st.none() | names,
    leader=st.none() | names, members=st.lists(members, max_size=4),
)  # fmt: skip
def test_group_value_round_trip(
    protocol_type: str, generation: int, strategy: str | None, leader: str | None,
    members: list[dict[str, Any]],
) -> None:  # fmt: skip
    value = {"protocol_type": protocol_type, "generation": generation, "strategy": strategy,
             "leader": leader, "members": members}  # fmt: skip
    assert kafka.decode_group_value(kafka.encode_group_value(value)) == value


@given(offset=st.integers(-1, 2**63 - 1), epoch=st.integers(-1, 2**31 - 1),
       metadata=names, stamp=st.integers(0, 2**62))  # fmt: skip
def test_offset_round_trip(offset: int, epoch: int, metadata: str, stamp: int) -> None:
    record = offset_record("g", "t", 1, offset, metadata, stamp, epoch)
    [(key, value)] = _log([record])
    assert decode(key, value) == record


def test_kafka_group_reloads_as_the_service_needs_it() -> None:
    g = _kafka_group()
    back = _replay(_log([group_ops.group_record(g)]), now_ms=500)["billing"]
    assert (back.generation, back.strategy, back.protocol_type, back.leader_id) == (
        5, "range", "consumer", "a")  # fmt: skip
    assert back.state is State.READY
    for mid, m in g.members.items():
        b = back.members[mid]
        assert (b.client_id, b.client_host, b.instance_id, b.assignment_bytes) == (
            m.client_id, m.client_host, m.instance_id, m.assignment_bytes)  # fmt: skip
        assert (b.session_timeout_ms, b.rebalance_timeout_ms) == (10_000, 30_000)
        assert b.protocols == [("range", b"sub-range")]  # the chosen protocol's metadata
        assert b.deadline_ms == 500 + 10_000  # a fresh session
    # a follower's SyncGroup after the failover gets its assignment back
    assert classic.sync(back, 5, "b", {}, instance_id="inst-b").response.assignment == b"asg-b"


# ----- tombstones and native groups -----------------------------------------------------------


def test_tombstones_are_written_in_both_key_formats() -> None:
    """So an old msgpack record cannot come back once the Kafka tombstone is cleaned away."""
    okey, gkey = OffsetKey("g", "t", 2), GroupKey("g")
    pairs = _log([CoordinatorRecord(okey, None), CoordinatorRecord(gkey, None)])
    assert pairs == [
        (i16(1) + s16("g") + s16("t") + i32(2), None),
        (legacy_key(okey), None),
        (i16(2) + s16("g"), None),
        (legacy_key(gkey), None),
    ]
    assert [decode(k, v) for k, v in pairs] == [CoordinatorRecord(okey, None)] * 2 + [
        CoordinatorRecord(gkey, None)] * 2  # fmt: skip


def test_native_group_keeps_its_msgpack_record() -> None:
    g = Group("n", generation=2, strategy="range", partition_counts={"t": 4})
    record = group_ops.group_record(g)
    [(key, value)] = _log([record])
    assert key == legacy_key(GroupKey("n")) and key[0] & 0xF0 == 0x90
    assert decode(key, value) == record
    assert _replay([(key, value)])["n"].partition_counts == {"t": 4}


# ----- records written before issue 33 --------------------------------------------------------


def _pack(obj: Any) -> bytes:
    out: bytes = msgpack.packb(obj, use_bin_type=True)
    return out


def test_old_msgpack_records_still_load() -> None:
    """A pre-issue-33 log: a msgpack offset (with and without its leader epoch) and a Kafka
    group's msgpack record, exactly as records.py and group.py wrote them."""
    kafka_group = {
        "generation": 3, "strategy": "range", "partition_counts": {},
        "protocol_type": "consumer", "leader": "m1",
        "members": [{"id": "m1", "client_id": "c", "session_timeout_ms": 6000,
                     "rebalance_timeout_ms": 9000, "topics": [], "pattern": None,
                     "assignment": [], "instance_id": "i1", "client_host": "/h",
                     "subscription": b"sub", "assignment_bytes": b"asg"}],
    }  # fmt: skip
    log = [
        (_pack(["offset", "g", "t", 0]), _pack({"offset": 7, "metadata": None, "commit_ms": 1})),
        (_pack(["offset", "g", "t", 1]),
         _pack({"offset": 8, "metadata": "x", "commit_ms": 2, "leader_epoch": 4})),
        (_pack(["group", "g"]), _pack(kafka_group)),
    ]  # fmt: skip
    g = _replay(log, now_ms=100)["g"]
    assert {tp: (e.offset, e.metadata, e.leader_epoch) for tp, e in g.offsets.items()} == {
        ("t", 0): (7, None, -1), ("t", 1): (8, "x", 4)}  # fmt: skip
    m = g.members["m1"]
    assert (g.generation, g.leader_id, g.state) == (3, "m1", State.READY)
    assert (m.instance_id, m.client_host, m.protocols, m.assignment_bytes) == (
        "i1", "/h", [("range", b"sub")], b"asg")  # fmt: skip
    # written again, the same group is Kafka's record, and reads back the same
    again = _replay(_log([group_ops.group_record(g)]), now_ms=100)["g"]
    assert again.members["m1"] == m and again.leader_id == "m1"


def test_a_log_mixing_both_formats_replays_in_order() -> None:
    old = [
        (_pack(["offset", "g", "t", 0]), _pack({"offset": 5, "metadata": "", "commit_ms": 1})),
        (_pack(["offset", "g", "t", 1]), _pack({"offset": 6, "metadata": "", "commit_ms": 1})),
        (_pack(["offset", "g", "t", 2]), _pack({"offset": 7, "metadata": "", "commit_ms": 1})),
    ]
    new = _log([
        offset_record("g", "t", 0, 50, None, 2),  # the same offset, now in Kafka's bytes
        CoordinatorRecord(OffsetKey("g", "t", 1), None),  # deleted: both keys' tombstones
    ])  # fmt: skip
    g = _replay(old + new)["g"]
    assert {tp: e.offset for tp, e in g.offsets.items()} == {("t", 0): 50, ("t", 2): 7}
    # compaction keeps the last record of each key's bytes, in offset order: the old record of
    # (t, 0) stays before its new one, (t, 1)'s goes with its tombstones (then those, later)
    kept: dict[bytes, tuple[int, bytes | None]] = {}
    for i, (k, v) in enumerate(old + new):
        kept[k] = (i, v)
    compacted = [(k, v) for k, (_, v) in sorted(kept.items(), key=lambda kv: kv[1][0]) if v]
    g = _replay(compacted)["g"]
    assert {tp: e.offset for tp, e in g.offsets.items()} == {("t", 0): 50, ("t", 2): 7}
