"""Static membership (KIP-345) as pure functions on a manual clock: a static member joins at
once, a restarted one (no member id, same instance id) takes its old place and assignment
without a rebalance while the group is Stable, the old id is fenced everywhere, a protocol
change or a rejoin while awaiting the leader's sync does rebalance, the leader's own rejoin
(before and after KIP-814's skip_assignment), removal by instance id, session expiry, the group
record's instance ids across a reload, and the same rejoin for native groups."""

from __future__ import annotations

from coordinator.group import classic, membership
from coordinator.group import group as group_ops
from coordinator.group import offsets as offset_ops
from coordinator.group.group import ClassicJoinAnswer, Group, Result, SyncAnswer
from coordinator.group.records import build, decode
from coordinator.group.states import State
from protocol.batch import decode_all
from protocol.errors import (
    FencedInstanceIdError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

RANGE = [("range", b"meta-range"), ("roundrobin", b"meta-rr")]
SESSION_MS = 10_000
FENCED = FencedInstanceIdError.code


def _join(  # type: ignore[no-untyped-def]
    g: Group, mid: str, iid: str | None, now: int = 0, fresh: str | None = None,
    protocols=RANGE, skip: bool = False,
) -> Result:  # fmt: skip
    return classic.join_classic(g, mid, "cli", "/10.0.0.1", SESSION_MS, 30_000, "consumer",
                            protocols, now, fresh, instance_id=iid,
                            skip_assignment=skip)  # fmt: skip


def _stable_pair() -> Group:
    """Static members a1 (instance ia, the leader) and b1 (ib), synced at generation 1...2."""
    g = Group("g")
    first = _join(g, "", "ia", fresh="a1")
    assert first.joins["a1"].error_code == 0  # no MEMBER_ID_REQUIRED round trip for static
    classic.sync(g, 1, "a1", {"a1": b"all"}, instance_id="ia")
    assert _join(g, "", "ib", 10, fresh="b1").joins == {}  # a1 must rejoin first
    done = _join(g, "a1", "ia", 20)
    assert set(done.joins) == {"a1", "b1"} and g.generation == 2
    assert done.joins["a1"].instances == {"a1": "ia", "b1": "ib"}  # the leader sees them
    classic.sync(g, 2, "a1", {"a1": b"pa", "b1": b"pb"}, instance_id="ia")
    assert g.state is State.READY
    return g


def test_static_follower_restart_gets_its_assignment_back_without_rebalance() -> None:
    g = _stable_pair()
    back = _join(g, "", "ib", 100, fresh="b2")
    answer: ClassicJoinAnswer = back.response
    assert (answer.error_code, answer.member_id, answer.generation_id) == (0, "b2", 2)
    assert answer.leader == "a1" and answer.members == [] and not answer.skip_assignment
    assert g.state is State.READY and g.generation == 2  # no rebalance
    assert list(g.members) == ["a1", "b2"] and g.members["b2"].instance_id == "ib"
    (record,) = back.records  # the new member id is recorded
    assert record.value is not None
    assert [(m["id"], m["instance_id"]) for m in record.value["members"]] == [
        ("a1", "ia"), ("b2", "ib")]  # fmt: skip
    # the old id's waiting requests, if any, are fenced
    assert back.joins["b1"].error_code == FENCED and back.syncs["b1"] == SyncAnswer(FENCED)
    # the new id syncs as a follower and gets the old assignment; the leader is untouched
    assert classic.sync(g, 2, "b2", {}, instance_id="ib").response == SyncAnswer(0, b"pb")
    assert membership.heartbeat(g, 2, "a1", 200, "ia").response == 0
    assert membership.heartbeat(g, 2, "b2", 200, "ib").response == 0


def test_old_member_id_is_fenced_everywhere() -> None:
    g = _stable_pair()
    _join(g, "", "ib", 100, fresh="b2")
    assert membership.heartbeat(g, 2, "b1", 200, "ib").response == FENCED
    assert classic.sync(g, 2, "b1", {}, instance_id="ib").response == SyncAnswer(FENCED)
    assert (
        offset_ops.commit(g, 2, "b1", [("t", 0, 5, None)], 200, instance_id="ib").response == FENCED
    )
    assert offset_ops.txn_commit(g, 2, "b1", [("t", 0, 5, None)], 200, "ib").response == FENCED
    rejoin = _join(g, "b1", "ib", 200)
    assert rejoin.response.error_code == FENCED and "b2" in rejoin.response.error_message
    assert membership.leave(g, "b1", 200, {}, "ib").response == FENCED
    assert g.state is State.READY and set(g.members) == {"a1", "b2"}
    # an instance id the group does not know, with a member id: unknown
    assert membership.heartbeat(g, 2, "b2", 200, "ic").response == UnknownMemberIdError.code
    assert offset_ops.commit(g, 2, "b2", [("t", 0, 5, None)], 200, instance_id="ib").response == 0


def test_leader_restart_before_skip_assignment_is_told_the_old_leader() -> None:
    g = _stable_pair()
    back = _join(g, "", "ia", 100, fresh="a2")
    answer: ClassicJoinAnswer = back.response
    # KIP-345 before KIP-814: the old leader id makes the client sync as a follower
    assert (answer.member_id, answer.leader, answer.members) == ("a2", "a1", [])
    assert g.leader_id == "a2" and g.state is State.READY and g.generation == 2
    assert classic.sync(g, 2, "a2", {}, instance_id="ia").response == SyncAnswer(0, b"pa")


def test_leader_restart_with_skip_assignment_gets_the_members() -> None:
    g = _stable_pair()
    answer: ClassicJoinAnswer = _join(g, "", "ia", 100, fresh="a2", skip=True).response
    assert (answer.member_id, answer.leader, answer.skip_assignment) == ("a2", "a2", True)
    assert [m for m, _ in answer.members] == ["a2", "b1"]
    assert answer.instances == {"a2": "ia", "b1": "ib"}
    follower: ClassicJoinAnswer = _join(g, "", "ib", 100, fresh="b2", skip=True).response
    assert (follower.leader, follower.skip_assignment, follower.members) == ("a2", False, [])
    assert g.state is State.READY and g.generation == 2


def test_protocol_change_on_rejoin_rebalances() -> None:
    g = _stable_pair()
    rr_only = [("roundrobin", b"meta-rr")]
    back = _join(g, "", "ib", 100, fresh="b2", protocols=rr_only)
    assert back.response is None and g.state is State.PREPARE_FOR_REBALANCE
    assert membership.heartbeat(g, 2, "a1", 150, "ia").response == RebalanceInProgressError.code
    done = _join(g, "a1", "ia", 200)
    assert set(done.joins) == {"a1", "b2"} and g.generation == 3 and g.strategy == "roundrobin"


def test_rejoin_while_awaiting_sync_rebalances() -> None:
    g = _stable_pair()
    _join(g, "", "ic", 100, fresh="c1")
    _join(g, "a1", "ia", 110)
    done = _join(g, "b1", "ib", 120)
    assert g.state is State.AWAITING_SYNC and set(done.joins) == {"a1", "b1", "c1"}
    back = _join(g, "", "ic", 130, fresh="c2")
    # the leader may be assigning to c1: start over so c2 gets a part
    assert back.response is None and g.state is State.PREPARE_FOR_REBALANCE
    assert back.syncs["c1"] == SyncAnswer(FENCED)


def test_admin_removes_a_static_member_by_instance_id() -> None:
    g = _stable_pair()
    assert membership.leave(g, "", 100, {}, "zz").response == UnknownMemberIdError.code
    gone = membership.leave(g, "", 100, {}, "ib")
    assert gone.response == 0 and set(g.members) == {"a1"}
    assert g.state is State.PREPARE_FOR_REBALANCE  # a rebalance at once


def test_static_member_that_does_not_return_expires_and_rebalances() -> None:
    g = _stable_pair()
    membership.heartbeat(g, 2, "a1", 9_000, "ia")
    membership.tick(g, SESSION_MS + 20, {})  # b1's session (from its join at 20) ran out
    assert set(g.members) == {"a1"} and g.state is State.PREPARE_FOR_REBALANCE


def test_group_record_keeps_instance_ids_across_a_reload() -> None:
    g = _stable_pair()
    record = group_ops.group_record(g)
    loaded: dict[str, Group] = {}
    for rec in decode_all(build([record], 0)):
        group_ops.replay(loaded, decode(rec.key, rec.value), 1000)
    back = loaded["g"]
    assert {m.member_id: m.instance_id for m in back.members.values()} == {"a1": "ia", "b1": "ib"}
    # after a coordinator failover the restarted static member still gets its place back
    answer: ClassicJoinAnswer = _join(back, "", "ib", 1100, fresh="b2").response
    assert (answer.error_code, answer.generation_id) == (0, 2) and back.state is State.READY
    assert classic.sync(back, 2, "b2", {}, instance_id="ib").response == SyncAnswer(0, b"pb")


# ----- native groups --------------------------------------------------------------------------


def _native(g: Group, mid: str, iid: str | None, now: int, topics: tuple[str, ...] = ("t",)):  # type: ignore[no-untyped-def]
    return membership.join(g, mid, "cli", SESSION_MS, 30_000, list(topics), None, "range", now,
                    {"t": 4, "u": 2}, instance_id=iid)  # fmt: skip


def test_native_static_member_rejoins_without_rebalance() -> None:
    g = Group("n")
    _native(g, "a1", "ia", 0)
    done = _native(g, "b1", "ib", 10)
    assert done.joins == {}
    done = _native(g, "a1", "ia", 20)
    assert g.generation == 2 and set(done.joins) == {"a1", "b1"}
    for m in ("a1", "b1"):
        membership.heartbeat(g, 2, m, 30, g.members[m].instance_id)
    assert g.state is State.READY
    held = sorted(g.members["b1"].assignment)
    back = _native(g, "b2", "ib", 100)
    assert back.response.error_code == 0 and back.response.generation_id == 2
    assert sorted((t, p) for tp in back.response.partitions_to_own
                  for t, p in ((tp.topic, q) for q in tp.partitions)) == held  # fmt: skip
    assert g.state is State.READY and g.generation == 2 and back.records
    assert membership.heartbeat(g, 2, "b1", 110, "ib").response == FENCED
    assert membership.heartbeat(g, 2, "b2", 110, "ib").response == 0


def test_native_static_rejoin_with_new_topics_rebalances() -> None:
    g = Group("n")
    _native(g, "a1", "ia", 0)
    membership.heartbeat(g, 1, "a1", 10, "ia")
    back = _native(g, "a2", "ia", 100, topics=("t", "u"))
    assert back.response is None and g.generation == 2 and set(back.joins) == {"a1", "a2"}
    assert back.joins["a1"].error_code == FENCED and back.joins["a2"].error_code == 0


def test_a_rejoin_whose_record_is_not_appended_is_undone() -> None:
    """Kafka rolls a static rejoin back when its group record fails to append: the old id is
    the group's again, with its old protocols (the restarted member retries its JoinGroup)."""
    g = _stable_pair()
    changed = [("range", b"new-meta"), ("roundrobin", b"meta-rr")]
    back = _join(g, "", "ib", 100, fresh="b2", protocols=changed)
    assert back.response.error_code == 0 and back.undo is not None
    back.undo()
    assert list(g.members) == ["a1", "b1"] and group_ops.static_member_id(g, "ib") == "b1"
    assert g.members["b1"].protocols == RANGE
    assert membership.heartbeat(g, 2, "b1", 200, "ib").response == 0
    assert membership.heartbeat(g, 2, "b2", 200, "ib").response == FENCED
    n = Group("n")
    _native(n, "a1", "ia", 0)
    membership.heartbeat(n, 1, "a1", 10, "ia")
    native = _native(n, "a2", "ia", 100)
    assert native.undo is not None
    native.undo()
    assert list(n.members) == ["a1"] and n.generation == 1
