"""Kafka's classic group protocol: JoinGroup with the members' assignors, then SyncGroup.

Members join with the assignors they support (name and opaque metadata each); when all have,
the generation is bumped, the protocol most members prefer among those all support is chosen,
the leader (kept, or the first to join) is answered with every member's metadata and the
others with none, and the group waits in Awaiting sync for the leader's SyncGroup. Its
assignment (opaque bytes per member) is written in the group record, then every SyncGroup is
answered with its member's part: Ready. A JoinGroup v4+ without a member id gets
MEMBER_ID_REQUIRED and a fresh id to rejoin with (KIP-394). A static member (KIP-345) that
comes back with a fresh id takes its old place, without a rebalance while nothing changed.
Pure functions on a `Group` (group.py); heartbeats, leaves and expiry are membership.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from coordinator.group.group import (
    DEFAULT_LIMITS,
    NONE,
    ClassicJoinAnswer,
    Group,
    GroupLimits,
    Member,
    Result,
    SyncAnswer,
    check_member,
    group_record,
    merge_results,
    prepare_rebalance,
    replace_static,
    static_member_id,
    undo_static,
)
from coordinator.group.states import State
from protocol.errors import (
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)


def join_classic(
    group: Group,
    member_id: str,
    client_id: str,
    client_host: str,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    protocol_type: str,
    protocols: list[tuple[str, bytes]],
    now_ms: int,
    new_member_id: str | None = None,
    limits: GroupLimits = DEFAULT_LIMITS,
    instance_id: str | None = None,
    skip_assignment: bool = False,
) -> Result:
    """A Kafka JoinGroup. `member_id` "" with `new_member_id` given (v4+, KIP-394): answer
    MEMBER_ID_REQUIRED with that id; "" without it (v0-3): join at once with a fresh id.
    With an `instance_id` (v5+, KIP-345) and no member id the member joins at once with
    `new_member_id`, replacing the static member of that instance id if there is one
    (`_rejoin_static`). `skip_assignment`: the client reads JoinGroup v9+ (KIP-814)."""

    def error(code: int, message: str | None = None, mid: str = member_id) -> Result:
        return Result(response=ClassicJoinAnswer(code, -1, None, None, "", mid, [], message))

    if not limits.min_session_timeout_ms <= session_timeout_ms <= limits.max_session_timeout_ms:
        return error(InvalidSessionTimeoutError.code)
    if not protocol_type or not protocols:
        return error(InconsistentGroupProtocolError.code, "a member needs a protocol")
    if group.members and not group.is_kafka:
        return error(
            InconsistentGroupProtocolError.code,
            f"group {group.group_id} is an odradek consumer group (the coordinator assigns its "
            "partitions); a Kafka client cannot join it: use another group id",
        )
    if group.members and protocol_type != group.protocol_type:
        why = f"group {group.group_id} has protocol type {group.protocol_type!r}"
        return error(InconsistentGroupProtocolError.code, why)
    if group.members and not _supported_by_all(group, protocols, member_id):
        return error(InconsistentGroupProtocolError.code,
                     "none of the member's assignors is supported by every member")  # fmt: skip
    if not member_id and instance_id:
        if new_member_id is None:
            return error(InvalidSessionTimeoutError.code, "no member id")
        known = static_member_id(group, instance_id)
        if known is not None:
            return _rejoin_static(group, known, new_member_id, client_id, client_host,
                                  session_timeout_ms, rebalance_timeout_ms, protocols, now_ms,
                                  skip_assignment)  # fmt: skip
        if len(group.members) >= limits.max_members:
            return error(GroupMaxSizeReachedError.code)
        member_id = new_member_id  # a new static member joins at once (no KIP-394 round trip)
        group.members[member_id] = Member(member_id, client_id, session_timeout_ms,
                                          rebalance_timeout_ms, (), None,
                                          instance_id=instance_id)  # fmt: skip
    if not member_id:
        if new_member_id is None:
            return error(InvalidSessionTimeoutError.code, "no member id")
        group.pending_members[new_member_id] = now_ms + session_timeout_ms
        return error(MemberIdRequiredError.code, None, new_member_id)
    if instance_id and (code := check_member(group, member_id, instance_id)) != NONE:
        return error(code, _fenced_why(group, member_id, instance_id, code))
    member = group.members.get(member_id)
    if member is None:
        if member_id not in group.pending_members:
            return error(UnknownMemberIdError.code)
        if len(group.members) >= limits.max_members:
            return error(GroupMaxSizeReachedError.code)
        del group.pending_members[member_id]
        member = Member(member_id, client_id, session_timeout_ms, rebalance_timeout_ms, (), None)
        group.members[member_id] = member
    elif group.state in (State.READY, State.AWAITING_SYNC) and _unchanged(group, member, protocols):
        # a known member rejoining with nothing new: the current generation, no rebalance
        member.deadline_ms = now_ms + session_timeout_ms
        return Result(response=_classic_answer(group, member_id))
    member.client_id, member.client_host, member.protocols = client_id, client_host, protocols
    member.session_timeout_ms, member.rebalance_timeout_ms = (
        session_timeout_ms,
        rebalance_timeout_ms,
    )
    member.joined = True
    member.deadline_ms = now_ms + session_timeout_ms
    group.protocol_type = protocol_type
    if group.state is not State.PREPARE_FOR_REBALANCE:
        prepare_rebalance(group, now_ms, limits.initial_rebalance_delay_ms)
    return complete_classic(group, now_ms) if all_joined(group) else Result()


def _fenced_why(group: Group, member_id: str, instance_id: str, code: int) -> str:
    if code == FencedInstanceIdError.code:
        return (f"instance id {instance_id} belongs to member "
                f"{static_member_id(group, instance_id)}, not {member_id}")  # fmt: skip
    return f"no member {member_id} with instance id {instance_id} in group {group.group_id}"


def _rejoin_static(
    group: Group, old_id: str, new_id: str, client_id: str, client_host: str,
    session_timeout_ms: int, rebalance_timeout_ms: int, protocols: list[tuple[str, bytes]],
    now_ms: int, skip_assignment: bool,
) -> Result:  # fmt: skip
    """A known static member back without its member id (Kafka's
    updateStaticMemberThenRebalanceOrCompleteJoin): `new_id` replaces `old_id`. While Ready,
    if the group's protocol would stay the same, the group record is rewritten and the member
    answered with the current generation, without a rebalance: a v9+ leader gets the members
    with skip_assignment (it must not assign again), an older one is told the leader is its old
    id, so it syncs as a follower and gets its assignment back. Otherwise (Ready with a protocol
    change, Awaiting sync, where the leader may be assigning to the old id, or Prepare for
    rebalance) it joins the rebalance."""
    leader_before = group.leader_id or ""
    undo = undo_static(group, old_id, new_id)
    fenced = replace_static(group, old_id, new_id)
    m = group.members[new_id]
    m.client_id, m.client_host, m.protocols = client_id, client_host, protocols
    m.session_timeout_ms, m.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
    m.deadline_ms = now_ms + session_timeout_ms
    if group.state is State.READY and choose_protocol(group.members.values()) == group.strategy:
        answer = _classic_answer(group, new_id)
        if skip_assignment:
            answer = replace(answer, skip_assignment=new_id == group.leader_id)
        else:
            answer = replace(answer, leader=leader_before, members=[])
        done = Result(records=[group_record(group)], response=answer, undo=undo)
        return merge_results(fenced, done)
    m.joined = True
    if group.state is not State.PREPARE_FOR_REBALANCE:
        prepare_rebalance(group, now_ms)
    return merge_results(fenced, complete_classic(group, now_ms) if all_joined(group) else Result())


def all_joined(group: Group) -> bool:
    """Every member rejoined, and no new member is still to come back with its id (Kafka's
    hasAllMembersJoined: pending members hold the rebalance until they join or expire), and
    no initial delay holds the group's first rebalance (membership.tick ends it)."""
    return (all(m.joined for m in group.members.values()) and not group.pending_members
            and group.initial_join is None)  # fmt: skip


def _supported_by_all(group: Group, protocols: list[tuple[str, bytes]], member_id: str) -> bool:
    names = {n for n, _ in protocols}
    for m in group.members.values():
        if m.member_id != member_id and m.protocols:
            names &= {n for n, _ in m.protocols}
    return bool(names)


def _unchanged(group: Group, member: Member, protocols: list[tuple[str, bytes]]) -> bool:
    return member.member_id != group.leader_id and member.protocols == protocols


def choose_protocol(members: Iterable[Member]) -> str | None:
    """Kafka's vote: among the protocols every member supports, each member votes for the
    first of its own list; most votes wins (ties: the first voter's choice)."""
    members = list(members)
    if not members:
        return None
    common = set.intersection(*({n for n, _ in m.protocols} for m in members))
    votes: dict[str, int] = {}
    for m in members:
        choice = next((n for n, _ in m.protocols if n in common), None)
        if choice is not None:
            votes[choice] = votes.get(choice, 0) + 1
    return max(votes, key=lambda n: votes[n]) if votes else None


def complete_classic(group: Group, now_ms: int) -> Result:
    """Everyone joined: bump, choose a protocol and a leader, answer every JoinGroup."""
    group.initial_join = None
    group.generation += 1
    group.strategy = choose_protocol(group.members.values())
    if group.leader_id not in group.members:
        group.leader_id = next(iter(group.members))
    group.move(State.AWAITING_SYNC)
    timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
    group.rebalance_deadline_ms = now_ms + timeout
    joins: dict[str, Any] = {}
    for mid, m in group.members.items():
        m.joined = False
        m.deadline_ms = now_ms + m.session_timeout_ms
        joins[mid] = _classic_answer(group, mid)
    return Result(joins=joins)


def _classic_answer(group: Group, member_id: str) -> ClassicJoinAnswer:
    members = []
    instances = {}
    if member_id == group.leader_id:
        members = [(m.member_id, m.metadata_for(group.strategy)) for m in group.members.values()]
        instances = {m.member_id: m.instance_id for m in group.members.values() if m.instance_id}
    return ClassicJoinAnswer(NONE, group.generation, group.protocol_type, group.strategy,
                             group.leader_id or "", member_id, members,
                             instances=instances)  # fmt: skip


def sync(
    group: Group,
    generation: int,
    member_id: str,
    assignments: Mapping[str, bytes],
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    instance_id: str | None = None,
) -> Result:
    """A Kafka SyncGroup. The response is a SyncAnswer, or None: wait for the leader's."""
    code = check_member(group, member_id, instance_id)
    if code != NONE:
        return Result(response=SyncAnswer(code))
    member = group.members[member_id]
    if generation != group.generation:
        return Result(response=SyncAnswer(IllegalGenerationError.code))
    if (protocol_type is not None and protocol_type != group.protocol_type) or (
        protocol_name is not None and protocol_name != group.strategy
    ):
        return Result(response=SyncAnswer(InconsistentGroupProtocolError.code))
    if group.state is State.PREPARE_FOR_REBALANCE:
        return Result(response=SyncAnswer(RebalanceInProgressError.code))
    if group.state is State.READY:
        return Result(response=SyncAnswer(NONE, member.assignment_bytes))
    if group.state is not State.AWAITING_SYNC or member_id != group.leader_id:
        return Result()  # wait for the leader's
    for mid, m in group.members.items():
        m.assignment_bytes = bytes(assignments.get(mid, b""))
    group.move(State.READY)
    syncs = {mid: SyncAnswer(NONE, m.assignment_bytes) for mid, m in group.members.items()}
    return Result(records=[group_record(group)], response=syncs[member_id], syncs=syncs)
