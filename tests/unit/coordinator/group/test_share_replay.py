"""A share group's records and their replay (coordinator/group/share_replay.py), pure: after
any sequence of heartbeats, leaves, expiries and topic changes, replaying the records written
so far (through their bytes) into an empty shard gives the same group back; deleting it leaves
nothing."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.group import records, share_replay
from coordinator.group import share_records as sr
from coordinator.group.records import CoordinatorRecord
from coordinator.group.share_group import (
    ShareConfig,
    ShareGroup,
    ShareHeartbeatIn,
    expire,
    heartbeat,
)
from coordinator.group.share_records import ShareGroupKey

A, B = uuid.UUID(int=1), uuid.UUID(int=2)
CONFIG = ShareConfig(session_timeout_ms=1_000, heartbeat_interval_ms=100)
SMALL = {"a": (A, 2), "b": (B, 1)}
GROWN = {"a": (A, 3), "b": (B, 1)}
Topics = dict[str, tuple[uuid.UUID, int]]


class Log:
    """The group and the records written for it, as the service writes them."""

    def __init__(self) -> None:
        self.group = ShareGroup("g")
        self.written: list[CoordinatorRecord] = []
        self.exists = False

    def step(self, change: Callable[[ShareGroup], object]) -> None:
        before = share_replay.snapshot(self.group if self.exists else None)
        change(self.group)
        self.exists = True
        self.written += share_replay.changes("g", before, share_replay.snapshot(self.group))

    def beat(self, member: str, epoch: int, topics: tuple[str, ...] | None = None,
             cluster: Topics = SMALL, now_ms: int = 0) -> int:  # fmt: skip
        out = []
        self.step(lambda g: out.append(heartbeat(
            g, ShareHeartbeatIn("g", member, epoch, None, topics, "c-" + member, "/h"),
            cluster, CONFIG, now_ms)))  # fmt: skip
        return out[0].member_epoch


def replayed(written: list[CoordinatorRecord]) -> dict[str, ShareGroup]:
    """The shard's share groups after loading `written` from their bytes."""
    groups: dict[str, ShareGroup] = {}
    for r in written:
        for k, v in records.encode(r):
            got = records.decode(k, v)
            assert isinstance(got.key, ShareGroupKey)
            share_replay.replay(groups, got.key, got.value)
    return groups


def same(live: ShareGroup, loaded: ShareGroup) -> None:
    assert share_replay.snapshot(loaded) == share_replay.snapshot(live)
    assert all(m.session_deadline_ms == 0 for m in loaded.members.values())  # fresh sessions


def test_a_join_writes_kafkas_records_in_kafkas_order() -> None:
    log = Log()
    assert log.beat("m1", 0, ("a",)) == 1
    kinds = [(r.key.record_type, r.value is None) for r in log.written
             if isinstance(r.key, ShareGroupKey)]  # fmt: skip
    assert kinds == [(k, False) for k in (sr.MEMBER_METADATA, sr.GROUP_METADATA,
                     sr.TARGET_MEMBER, sr.TARGET_METADATA, sr.CURRENT_ASSIGNMENT,
                     sr.STATE_PARTITION_METADATA)]  # fmt: skip
    by_kind = {r.key.record_type: r.value for r in log.written if isinstance(r.key, ShareGroupKey)}
    assert by_kind[sr.GROUP_METADATA] == {"epoch": 1, "metadata_hash": log.group.metadata_hash}
    assert log.group.metadata_hash != 0
    assert by_kind[sr.CURRENT_ASSIGNMENT] == {
        "member_epoch": 1, "previous_member_epoch": 0, "state": 0,
        "assigned_partitions": {A: frozenset({0, 1})}}  # fmt: skip
    assert by_kind[sr.STATE_PARTITION_METADATA] == {
        "initializing_topics": {}, "initialized_topics": {"a": (A, [0, 1])},
        "deleting_topics": {}}  # fmt: skip
    count = len(log.written)
    log.beat("m1", 1)  # a plain heartbeat changes nothing durable: no record
    assert len(log.written) == count
    same(log.group, replayed(log.written)["g"])


def test_a_member_leaving_is_tombstoned_and_the_group_is_deleted_to_nothing() -> None:
    log = Log()
    log.beat("m1", 0, ("a",))
    log.beat("m2", 0, ("a", "b"))
    log.beat("m2", -1)
    gone = [r.key.record_type for r in log.written if r.value is None]
    assert gone == [sr.CURRENT_ASSIGNMENT, sr.TARGET_MEMBER, sr.MEMBER_METADATA]
    loaded = replayed(log.written)["g"]
    same(log.group, loaded)
    assert (loaded.group_epoch, list(loaded.members)) == (3, ["m1"])
    log.beat("m1", -1)
    deleted = log.written + share_replay.delete_records(log.group)
    assert replayed(deleted) == {}


OPS = st.lists(
    st.tuples(
        st.sampled_from(["join", "beat", "leave", "expire", "grow"]),
        st.sampled_from(["m1", "m2", "m3"]),
        st.sampled_from([("a",), ("b",), ("a", "b")]),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_replaying_the_records_gives_the_group_back_after_any_operations(
    ops: list[tuple[str, str, tuple[str, ...]]],
) -> None:
    log, cluster, now = Log(), SMALL, 0
    for op, member, topics in ops:
        now += 400
        known = log.group.members.get(member)
        if op == "join":
            log.beat(member, 0, topics, cluster, now)
        elif op == "beat" and known is not None:
            log.beat(member, known.epoch, None, cluster, now)
        elif op == "leave" and known is not None:
            log.beat(member, -1, None, cluster, now)
        elif op == "expire":
            log.step(lambda g, now=now, cluster=cluster: expire(g, cluster, now, 1_000))
        elif op == "grow":
            cluster = GROWN
        if log.exists:
            same(log.group, replayed(log.written)["g"])
