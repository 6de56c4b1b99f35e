"""Kafka groups on the coordinator's state table, as pure functions on a manual clock: the
member-id round trip (KIP-394), protocol choice, the leader's SyncGroup, errors, the two kinds
of group kept apart, session expiry and a leader that never syncs, and replay."""

from __future__ import annotations

from coordinator.group import classic, membership
from coordinator.group import group as group_ops
from coordinator.group import offsets as offset_ops
from coordinator.group.group import ClassicJoinAnswer, Group, GroupLimits, SyncAnswer
from coordinator.group.states import State, kafka_name
from protocol.errors import (
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

RANGE = [("range", b"meta-range"), ("roundrobin", b"meta-rr")]


def _join(g: Group, mid: str, now: int = 0, protocols=RANGE, fresh: str | None = None):  # type: ignore[no-untyped-def]
    return classic.join_classic(g, mid, "cli", "/10.0.0.1", 10_000, 30_000, "consumer", protocols,
                            now, fresh)  # fmt: skip


def _member(g: Group, name: str, now: int = 0) -> None:
    first = _join(g, "", now, fresh=name)
    assert first.response.error_code == MemberIdRequiredError.code
    assert first.response.member_id == name


def test_member_id_required_then_join_and_sync() -> None:
    g = Group("g")
    _member(g, "a")
    assert "a" in g.pending_members and not g.members
    done = _join(g, "a")
    assert g.state is State.AWAITING_SYNC and kafka_name(g.state) == "CompletingRebalance"
    answer: ClassicJoinAnswer = done.joins["a"]
    assert (answer.error_code, answer.generation_id, answer.leader) == (0, 1, "a")
    assert answer.protocol_name == "range" and answer.members == [("a", b"meta-range")]
    synced = classic.sync(g, 1, "a", {"a": b"assign-a"})
    assert synced.response == SyncAnswer(0, b"assign-a")
    assert g.state is State.READY and kafka_name(g.state) == "Stable"
    (record,) = synced.records
    assert record.value["protocol_type"] == "consumer" and record.value["leader"] == "a"
    assert record.value["members"][0]["assignment_bytes"] == b"assign-a"


def test_two_members_leader_assigns_follower_waits() -> None:
    g = Group("g")
    _member(g, "a")
    _join(g, "a")
    classic.sync(g, 1, "a", {"a": b"all"})
    _member(g, "b")
    assert _join(g, "b").joins == {}  # a must rejoin first
    assert g.state is State.PREPARE_FOR_REBALANCE
    assert membership.heartbeat(g, 1, "a", 100).response == RebalanceInProgressError.code
    done = _join(g, "a", 200)
    assert set(done.joins) == {"a", "b"}
    assert done.joins["a"].members and not done.joins["b"].members  # only the leader sees all
    assert membership.heartbeat(g, 2, "b", 300).response == 0  # heartbeats are fine while syncing
    assert classic.sync(g, 2, "b", {}).response is None  # b waits for the leader
    leader = classic.sync(g, 2, "a", {"a": b"pa", "b": b"pb"})
    assert leader.syncs["b"] == SyncAnswer(0, b"pb")
    assert classic.sync(g, 2, "b", {}).response == SyncAnswer(0, b"pb")  # Ready: at once


def test_protocol_vote_and_inconsistent_protocols() -> None:
    g = Group("g")
    _member(g, "a")
    _join(g, "a", protocols=[("roundrobin", b"x"), ("range", b"y")])
    classic.sync(g, 1, "a", {})
    _member(g, "b")
    bad = _join(g, "b", protocols=[("sticky", b"z")])
    assert bad.response.error_code == InconsistentGroupProtocolError.code
    _join(g, "b", protocols=[("range", b"y2"), ("roundrobin", b"x2")])
    done = _join(g, "a", protocols=[("roundrobin", b"x"), ("range", b"y")])
    assert done.joins["a"].protocol_name == "roundrobin"  # first voter's choice on a tie


def test_errors_unknown_member_and_illegal_generation() -> None:
    g = Group("g")
    assert _join(g, "nobody").response.error_code == UnknownMemberIdError.code
    _member(g, "a")
    _join(g, "a")
    assert classic.sync(g, 7, "a", {}).response.error_code == IllegalGenerationError.code
    assert classic.sync(g, 1, "zz", {}).response.error_code == UnknownMemberIdError.code
    assert (
        offset_ops.commit(g, 1, "a", [("t", 0, 5, None)], 0).response
        == RebalanceInProgressError.code
    )
    classic.sync(g, 1, "a", {})
    assert offset_ops.commit(g, 1, "a", [("t", 0, 5, None)], 0).response == 0
    assert (
        offset_ops.commit(g, 0, "a", [("t", 0, 5, None)], 0).response == IllegalGenerationError.code
    )


def test_native_and_kafka_groups_are_kept_apart() -> None:
    kafka = Group("k")
    _member(kafka, "a")
    _join(kafka, "a")
    native = membership.join(
        kafka, "n1", "odradek", 10_000, 30_000, ["t"], None, "range", 0, {"t": 1}
    )
    assert native.response.error_code == InconsistentGroupProtocolError.code
    assert "Kafka consumer group" in native.response.error_message
    n = Group("n")
    membership.join(n, "n1", "odradek", 10_000, 30_000, ["t"], None, "range", 0, {"t": 1})
    refused = _join(n, "", fresh="k1")
    assert refused.response.error_code == InconsistentGroupProtocolError.code
    assert "odradek consumer group" in refused.response.error_message


def test_session_expiry_and_a_leader_that_never_syncs() -> None:
    g = Group("g")
    for name in ("a", "b"):
        _member(g, name)
    assert _join(g, "a").joins == {}  # b, given its id, is still to come back
    done = _join(g, "b")
    assert set(done.joins) == {"a", "b"} and g.state is State.AWAITING_SYNC
    # the leader never sends SyncGroup: after the rebalance timeout it is dropped
    membership.heartbeat(g, 1, "b", 29_000)
    membership.tick(g, 30_001, {})
    assert set(g.members) == {"b"} and g.state is State.PREPARE_FOR_REBALANCE
    _join(g, "b", 30_100)
    assert g.state is State.AWAITING_SYNC and g.leader_id == "b"
    classic.sync(g, g.generation, "b", {"b": b"x"})
    membership.tick(g, 30_100 + 10_001, {})  # b stops heartbeating
    assert g.state is State.EMPTY and not g.members
    assert g.protocol_type == "consumer"  # still described as what it was
    native = membership.join(
        g, "n1", "odradek", 10_000, 30_000, ["t"], None, "range", 50_000, {"t": 1}
    )
    assert native.response is None or native.response.error_code == 0  # an empty group is free
    assert not g.is_kafka


def test_a_commit_keeps_the_session_on_the_monotonic_clock() -> None:
    g = Group("g")
    _member(g, "a")
    _join(g, "a")
    classic.sync(g, 1, "a", {})
    wall = 1_700_000_000_000
    done = offset_ops.commit(g, 1, "a", [("t", 0, 3, None)], 1_000, wall)
    assert done.records[0].value["commit_ms"] == wall
    assert g.members["a"].deadline_ms == 1_000 + 10_000
    membership.tick(g, 11_001, {})
    assert not g.members, "a member whose last request was a commit still expires"


def test_replay_restores_a_kafka_group() -> None:
    g = Group("g")
    _member(g, "a")
    _join(g, "a")
    record = classic.sync(g, 1, "a", {"a": b"assign"}).records[0]
    loaded: dict[str, Group] = {}
    group_ops.replay(loaded, record, 5)
    back = loaded["g"]
    assert back.is_kafka and back.state is State.READY and back.leader_id == "a"
    assert back.members["a"].assignment_bytes == b"assign"
    assert back.members["a"].client_host == "/10.0.0.1"
    assert classic.sync(back, 1, "a", {}).response == SyncAnswer(0, b"assign")
    assert membership.heartbeat(back, 1, "a", 10).response == 0


def test_unchanged_follower_rejoining_gets_the_current_generation() -> None:
    g = Group("g")
    for name in ("a", "b"):
        _member(g, name)
    _join(g, "a")
    _join(g, "b")
    classic.sync(g, 1, "a", {})
    again = _join(g, "b", 500)
    assert again.response.generation_id == 1 and g.state is State.READY


def test_a_pending_member_that_never_returns_stops_holding_the_rebalance() -> None:
    g = Group("g")
    _member(g, "a")
    _member(g, "ghost")
    assert _join(g, "a").joins == {}
    done = membership.tick(g, 10_001, {})  # ghost's session passed: it is forgotten
    assert set(done.joins) == {"a"} and g.state is State.AWAITING_SYNC


def _delayed_join(g: Group, mid: str, now: int, delay_ms: int, rebalance_ms: int = 30_000):  # type: ignore[no-untyped-def]
    limits = GroupLimits(initial_rebalance_delay_ms=delay_ms)
    return classic.join_classic(g, mid, "cli", "/10.0.0.1", 10_000, rebalance_ms, "consumer",
                                RANGE, now, None, limits)  # fmt: skip


def test_an_empty_groups_first_rebalance_waits_for_the_initial_delay() -> None:
    """group.initial.rebalance.delay.ms (Kafka's InitialDelayedJoin): the first join into an
    Empty group does not complete at once; a member joining within the delay moves the
    deadline on by one delay; then both are answered in one generation."""
    g = Group("g")
    g.pending_members.update({"a": 10_000, "b": 10_000})
    assert _delayed_join(g, "a", 0, 3000).joins == {}
    assert g.state is State.PREPARE_FOR_REBALANCE
    assert membership.tick(g, 2999, {}).joins == {}
    assert _delayed_join(g, "b", 2000, 3000).joins == {}  # all joined, still held
    assert membership.tick(g, 3000, {}).joins == {}  # b is new: waits on until 6000
    assert membership.tick(g, 5999, {}).joins == {}
    done = membership.tick(g, 6000, {})
    assert set(done.joins) == {"a", "b"} and g.generation == 1
    assert g.state is State.AWAITING_SYNC and g.initial_join is None


def test_the_initial_delay_ends_within_the_rebalance_timeout() -> None:
    """Delay 3000 of a 7000 rebalance timeout: members joining all along extend it to 6000,
    then by the 1000 that remains to 7000, and there it completes though one more joined."""
    g = Group("g")
    g.pending_members.update({f"m{i}": 60_000 for i in range(4)})
    _delayed_join(g, "m0", 0, 3000, rebalance_ms=7000)
    _delayed_join(g, "m1", 1000, 3000, rebalance_ms=7000)
    assert membership.tick(g, 3000, {}).joins == {}  # m1 is new: until 6000
    _delayed_join(g, "m2", 5000, 3000, rebalance_ms=7000)
    assert membership.tick(g, 6000, {}).joins == {}  # m2 is new: until 7000, nothing left
    _delayed_join(g, "m3", 6500, 3000, rebalance_ms=7000)
    assert membership.tick(g, 6999, {}).joins == {}
    done = membership.tick(g, 7000, {})
    assert set(done.joins) == {"m0", "m1", "m2", "m3"} and g.generation == 1


def test_without_an_initial_delay_or_out_of_stable_the_join_completes_at_once() -> None:
    g = Group("g")
    g.pending_members["a"] = 10_000
    assert set(_delayed_join(g, "a", 0, 0).joins) == {"a"}  # delay 0: as before
    classic.sync(g, 1, "a", {"a": b"all"})
    g.pending_members["b"] = 10_000
    _delayed_join(g, "b", 100, 3000)  # not out of Empty: no initial delay
    assert set(_delayed_join(g, "a", 200, 3000).joins) == {"a", "b"}
