"""The group state machine as pure functions, on injected time (no broker, no sockets)."""

from __future__ import annotations

import pytest

from coordinator.group import membership
from coordinator.group import offsets as offset_ops
from coordinator.group.group import Group, GroupLimits, Result, replay
from coordinator.group.records import (
    GroupKey,
    OffsetKey,
    build,
    decode,
    java_string_hash,
    partition_for,
)
from coordinator.group.states import TABLE, IllegalTransitionError, State, check_transition
from protocol.batch import decode_all
from protocol.errors import (
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    NonEmptyGroupError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

COUNTS = {"topic1": 3}
SESSION_MS = 3000
REBALANCE_MS = 5000


def join(
    group: Group,
    member: str,
    now: int,
    strategy: str = "range",
    topics: tuple[str, ...] = ("topic1",),
    counts: dict[str, int] = COUNTS,
) -> Result:
    return membership.join(
        group, member, member, SESSION_MS, REBALANCE_MS, list(topics), None, strategy, now, counts
    )


def owned(result: Result) -> dict[str, list[int]]:
    return {m: sorted(p for tp in r.partitions_to_own for p in tp.partitions)
            for m, r in result.joins.items()}  # fmt: skip


def test_an_initial_delay_gives_members_started_together_one_generation() -> None:
    """group.initial.rebalance.delay.ms holds an Empty group's first rebalance (native groups
    too): two members joining within it share generation 1, nobody gives partitions back."""
    g = Group("g")
    limits = GroupLimits(initial_rebalance_delay_ms=3000)
    for member, now in (("c1", 0), ("c2", 500)):
        r = membership.join(g, member, member, SESSION_MS, REBALANCE_MS, ["topic1"], None,
                            "range", now, COUNTS, limits)  # fmt: skip
        assert r.joins == {} and g.state is State.PREPARE_FOR_REBALANCE
    assert membership.tick(g, 3000, COUNTS).joins == {}  # c2 joined since: until 5000
    done = membership.tick(g, 5000, COUNTS)
    assert owned(done) == {"c1": [0, 1], "c2": [2]} and g.generation == 1


def test_first_member_gets_everything_at_once() -> None:
    g = Group("g")
    r = join(g, "c1", 0)
    assert g.state is State.REBALANCING and g.generation == 1
    assert owned(r) == {"c1": [0, 1, 2]}
    assert [rec.key for rec in r.records] == [GroupKey("g")]
    assert membership.heartbeat(g, 1, "c1", 10).response == 0
    assert g.state is State.READY


def test_seed000_rebalance_round_through_heartbeats() -> None:
    g = Group("g")
    join(g, "c1", 0)
    membership.heartbeat(g, 1, "c1", 10)
    r = join(g, "c2", 100)  # c1 has not rejoined yet: c2's join waits
    assert r.joins == {} and g.state is State.PREPARE_FOR_REBALANCE
    assert membership.heartbeat(g, 1, "c1", 200).response == RebalanceInProgressError.code
    r = join(g, "c1", 300)
    assert g.generation == 2 and owned(r) == {"c1": [0, 1], "c2": [2]}
    assert membership.heartbeat(g, 1, "c1", 400).response == IllegalGenerationError.code
    assert membership.heartbeat(g, 2, "c1", 400).response == 0
    assert g.state is State.REBALANCING  # c2 has not heartbeated the new generation yet
    assert membership.heartbeat(g, 2, "c2", 400).response == 0
    assert g.state is State.READY


def test_session_timeout_removes_a_silent_member() -> None:
    g = Group("g")
    join(g, "c1", 0)
    join(g, "c2", 0)
    join(g, "c1", 0)
    for m in ("c1", "c2"):
        membership.heartbeat(g, 2, m, 1000)
    membership.heartbeat(g, 2, "c1", 3500)
    assert membership.tick(g, 3999, COUNTS).records == []  # c2's session ends at 4000
    r = membership.tick(g, 4000, COUNTS)
    assert "c2" not in g.members and g.state is State.PREPARE_FOR_REBALANCE
    assert r.joins == {}
    r = join(g, "c1", 4100)
    assert owned(r) == {"c1": [0, 1, 2]} and g.generation == 3


def test_rebalance_timeout_drops_members_that_do_not_rejoin() -> None:
    g = Group("g")
    join(g, "c1", 0)
    join(g, "c2", 0)
    join(g, "c1", 0)
    join(g, "c3", 1000)  # c1, c2 must rejoin within REBALANCE_MS
    for now in range(1000, 5000, 500):  # c1 and c2 heartbeat but never rejoin
        membership.heartbeat(g, 2, "c1", now)
        membership.heartbeat(g, 2, "c2", now)
        assert membership.tick(g, now, COUNTS).joins == {}
    r = membership.tick(g, 6000, COUNTS)
    assert set(g.members) == {"c3"} and owned(r) == {"c3": [0, 1, 2]}


def test_leave_and_empty_group() -> None:
    g = Group("g")
    join(g, "c1", 0)
    r = membership.leave(g, "c1", 10, COUNTS)
    assert g.state is State.EMPTY and r.records and r.response == 0
    assert membership.leave(g, "c1", 10, COUNTS).response == UnknownMemberIdError.code


def test_partition_count_change_and_new_pattern_topic_trigger_rebalance() -> None:
    g = Group("g")
    join(g, "c1", 0)
    membership.heartbeat(g, 1, "c1", 0)
    assert membership.tick(g, 100, COUNTS).records == [] and g.state is State.READY
    membership.tick(g, 200, {"topic1": 4})
    assert g.state is State.PREPARE_FOR_REBALANCE
    r = join(g, "c1", 300, counts={"topic1": 4})
    assert owned(r) == {"c1": [0, 1, 2, 3]}
    p = Group("p")
    membership.join(
        p, "c1", "c1", SESSION_MS, REBALANCE_MS, [], r"logs-.*", "range", 0, {"logs-a": 1}
    )
    membership.heartbeat(p, 1, "c1", 0)
    membership.tick(p, 100, {"logs-a": 1, "other": 2, "__consumer_offsets": 10})
    assert p.state is State.READY
    membership.tick(p, 200, {"logs-a": 1, "logs-b": 2})
    assert p.state is State.PREPARE_FOR_REBALANCE


def test_join_validation() -> None:
    g = Group("g")
    r = membership.join(g, "c1", "c1", 10, REBALANCE_MS, ["t"], None, "range", 0, COUNTS)
    assert r.response.error_code == InvalidSessionTimeoutError.code
    join(g, "c1", 0, strategy="range")
    r = join(g, "c2", 0, strategy="sticky")
    assert r.response.error_code == InconsistentGroupProtocolError.code


def test_commit_is_fenced_by_generation_and_member() -> None:
    g = Group("g")
    join(g, "c1", 0)
    offsets = [("topic1", 0, 42, None)]
    assert offset_ops.commit(g, 1, "c1", offsets, 0).response == 0
    assert offset_ops.commit(g, 0, "c1", offsets, 0).response == IllegalGenerationError.code
    assert offset_ops.commit(g, 1, "zz", offsets, 0).response == UnknownMemberIdError.code
    assert offset_ops.commit(g, -1, "", offsets, 0).response == UnknownMemberIdError.code
    join(g, "c2", 10)  # PrepareForRebalance: generation-1 commits still accepted (revocation)
    assert offset_ops.commit(g, 1, "c1", offsets, 20).response == 0
    membership.leave(g, "c1", 30, COUNTS)
    membership.leave(g, "c2", 30, COUNTS)
    assert offset_ops.commit(g, -1, "", offsets, 40).response == 0  # inactive group: admin commit
    # a consumer that assign()s may send a member id of its own (librdkafka's KIP-848 consumer)
    assert offset_ops.commit(g, -1, "own-id", offsets, 40).response == 0


def test_replay_rebuilds_groups_and_offsets_like_a_new_coordinator() -> None:
    g = Group("g")
    log = []
    log += join(g, "c1", 0).records
    log += join(g, "c2", 0).records
    log += join(g, "c1", 0).records
    committed = offset_ops.commit(g, 2, "c1", [("topic1", 0, 7, "m"), ("topic1", 1, 9, None)], 5)
    log += committed.records
    log += offset_ops.commit(g, 2, "c2", [("topic1", 0, 8, None)], 6).records
    batch = build(log, 1_700_000_000_000)
    loaded: dict[str, Group] = {}
    for rec in decode_all(batch):
        replay(loaded, decode(rec.key, rec.value), 1000)
    h = loaded["g"]
    assert h.generation == 2 and h.state is State.READY and set(h.members) == {"c1", "c2"}
    assert {m: sorted(x.assignment) for m, x in h.members.items()} == {
        m: sorted(x.assignment) for m, x in g.members.items()
    }
    assert {tp: e.offset for tp, e in h.offsets.items()} == {("topic1", 0): 8, ("topic1", 1): 9}
    assert h.members["c2"].deadline_ms == 1000 + SESSION_MS  # a fresh session after loading
    assert membership.heartbeat(h, 2, "c1", 1100).response == 0  # seed 000 phase 5: carry on
    assert membership.heartbeat(h, 1, "c2", 1100).response == IllegalGenerationError.code  # phase 4


def test_delete_only_when_empty_and_tombstones_remove() -> None:
    g = Group("g")
    join(g, "c1", 0)
    assert offset_ops.delete(g).response == NonEmptyGroupError.code
    membership.leave(g, "c1", 0, COUNTS)
    for rec in offset_ops.commit(g, -1, "", [("topic1", 0, 3, None)], 0).records:
        replay({"g": g}, rec, 0)
    r = offset_ops.delete(g)
    keys = {rec.key for rec in r.records}
    assert keys == {OffsetKey("g", "topic1", 0), GroupKey("g")}
    groups = {"g": g}
    for rec in r.records:
        replay(groups, rec, 0)
    assert groups == {}


def test_state_table_edges() -> None:
    assert check_transition(State.CATCH_UP, State.READY) is State.READY
    with pytest.raises(IllegalTransitionError):
        check_transition(State.DOWN, State.READY)
    assert all(spec.does for spec in TABLE.values())


def test_group_hash_is_javas() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE
    assert partition_for("polygenelubricants", 10) == 0
    assert all(0 <= partition_for(f"group{i}", 7) < 7 for i in range(100))


def test_a_full_group_refuses_a_new_member_with_group_max_size_reached() -> None:
    g = Group("g")
    limits = GroupLimits(max_members=1)
    args = (SESSION_MS, REBALANCE_MS, ["topic1"], None, "range", 0, COUNTS, limits)
    assert membership.join(g, "c1", "c1", *args).records
    r = membership.join(g, "c2", "c2", *args)
    assert r.response is not None and r.response.error_code == GroupMaxSizeReachedError.code
    assert "has 1 members" in (r.response.error_message or "") and set(g.members) == {"c1"}
