"""A group's membership: odradek's own join protocol, and the life both join protocols share.

A rebalance (seed 000): a join, leave, session expiry or subscription change moves the group to
PrepareForRebalance; members learn it from their heartbeats (REBALANCE_IN_PROGRESS) and rejoin;
when all have (or the rebalance timeout passes, dropping the rest) the generation is bumped, the
assignor runs (here, on the coordinator: odradek's protocol), a group record is written, every
pending JoinGroup is answered, and the group waits in Rebalancing for one heartbeat of the new
generation from each member, then is Ready. A Kafka group completes its rebalance the classic
way instead (classic.py). Heartbeat, leave and `tick` (session expiry, rebalance timeout,
subscription changes) serve both. Pure functions on a `Group` (group.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.group.assignors import assignor
from coordinator.group.classic import all_joined, complete_classic
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
    join_error,
    merge_results,
    prepare_rebalance,
    replace_static,
    static_member_id,
    to_wire,
    undo_static,
)
from coordinator.group.states import State
from protocol.api.group import JoinGroupResponse
from protocol.errors import (
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from protocol.patterns import compile_pattern


def join(
    group: Group,
    member_id: str,
    client_id: str,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    topics: list[str],
    pattern: str | None,
    strategy: str,
    now_ms: int,
    partition_counts: Mapping[str, int],
    limits: GroupLimits = DEFAULT_LIMITS,
    instance_id: str | None = None,
) -> Result:
    """`member_id`: the member's own, or a fresh one the service made for a new member.
    `instance_id`: a static member's; with a fresh member id it replaces the member known by
    that instance id (static rejoin: no rebalance while Ready with the same subscription)."""
    if not limits.min_session_timeout_ms <= session_timeout_ms <= limits.max_session_timeout_ms:
        return join_error(InvalidSessionTimeoutError.code, member_id)
    try:
        assignor(strategy)
        if pattern:
            compile_pattern(pattern)
    except Exception as exc:
        return join_error(InconsistentGroupProtocolError.code, member_id, str(exc))
    if not group.members:
        group.protocol_type = None  # an empty group takes either kind
    if group.members and group.is_kafka:
        return join_error(
            InconsistentGroupProtocolError.code, member_id,
            f"group {group.group_id} is a Kafka consumer group (its members assign partitions "
            "themselves); an odradek consumer cannot join it: use another group id",
        )  # fmt: skip
    if group.members and group.strategy not in (None, strategy):
        return join_error(
            InconsistentGroupProtocolError.code, member_id,
            f"group {group.group_id} uses {group.strategy!r}, not {strategy!r}",
        )  # fmt: skip
    replaced = Result()
    known = static_member_id(group, instance_id)
    if member_id in group.members and instance_id:
        code = check_member(group, member_id, instance_id)
        if code != NONE:
            return join_error(code, member_id, f"instance id {instance_id} is {known}'s")
    elif known is not None:  # a static member back with a fresh id: it takes its old place
        old = group.members[known]
        same = old.topics == tuple(topics) and old.pattern == pattern
        undo = undo_static(group, known, member_id)
        replaced = replace_static(group, known, member_id)
        if same and group.state is State.READY:
            old.session_timeout_ms, old.rebalance_timeout_ms = (
                session_timeout_ms, rebalance_timeout_ms)  # fmt: skip
            old.client_id = client_id
            old.deadline_ms = now_ms + session_timeout_ms
            answer = JoinGroupResponse(NONE, group.generation, member_id, to_wire(old.assignment))
            done = Result(records=[group_record(group)], response=answer, undo=undo)
            return merge_results(replaced, done)
    member = group.members.get(member_id)
    if member is None:
        if len(group.members) >= limits.max_members:
            return join_error(GroupMaxSizeReachedError.code, member_id,
                               f"group {group.group_id} has {limits.max_members} members, "
                               "the most a group may have")  # fmt: skip
        member = Member(member_id, client_id, session_timeout_ms, rebalance_timeout_ms,
                        tuple(topics), pattern, instance_id=instance_id or None)  # fmt: skip
        group.members[member_id] = member
    else:
        member.topics, member.pattern = tuple(topics), pattern
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
    group.strategy = strategy
    member.joined = True
    member.deadline_ms = now_ms + session_timeout_ms
    if group.state is not State.PREPARE_FOR_REBALANCE:
        prepare_rebalance(group, now_ms, limits.initial_rebalance_delay_ms)
    return merge_results(replaced, _maybe_complete(group, now_ms, partition_counts))


def heartbeat(
    group: Group, generation: int, member_id: str, now_ms: int, instance_id: str | None = None
) -> Result:
    code = check_member(group, member_id, instance_id)
    if code != NONE:
        return Result(response=code)
    member = group.members[member_id]
    member.deadline_ms = now_ms + member.session_timeout_ms
    if group.state is State.PREPARE_FOR_REBALANCE:
        return Result(response=RebalanceInProgressError.code)
    if generation != group.generation:
        return Result(response=IllegalGenerationError.code)
    if group.state is State.AWAITING_SYNC:
        return Result(response=NONE)
    if group.state is State.REBALANCING:
        group.awaiting_heartbeat.discard(member_id)
        if not group.awaiting_heartbeat:
            group.move(State.READY)
    return Result(response=NONE)


def leave(
    group: Group, member_id: str, now_ms: int, partition_counts: Mapping[str, int],
    instance_id: str | None = None,
) -> Result:  # fmt: skip
    """One member leaves (Kafka's LeaveGroup, per member of a v3+ batch): by its member id, or,
    with member id "" and an instance id, the static member known by it (an admin's removal).
    The response is the member's error code."""
    if member_id and group.pending_members.pop(member_id, None) is not None:
        return Result(response=NONE)
    kafka = group.is_kafka
    if not member_id:
        member_id = static_member_id(group, instance_id) or ""
        if not member_id:
            return Result(response=UnknownMemberIdError.code)
    code = check_member(group, member_id, instance_id)
    if code != NONE:
        return Result(response=code)
    del group.members[member_id]
    result = _after_removal(group, now_ms, partition_counts)
    result.response = NONE
    gone = UnknownMemberIdError.code
    result.joins[member_id] = (
        ClassicJoinAnswer(gone, -1, None, None, "", member_id)
        if kafka
        else JoinGroupResponse(gone, -1, member_id, [])
    )
    result.syncs[member_id] = SyncAnswer(gone)
    return result


def tick(group: Group, now_ms: int, partition_counts: Mapping[str, int]) -> Result:
    """Session expiry, rebalance timeout, and subscription changes (counts of all topics)."""
    for pending, deadline in list(group.pending_members.items()):
        if deadline <= now_ms:
            del group.pending_members[pending]
    if group.state is State.AWAITING_SYNC and now_ms >= group.rebalance_deadline_ms:
        # the leader never sent its assignment: it is dropped, the rest rejoin
        if group.leader_id is not None:
            group.members.pop(group.leader_id, None)
        return _after_removal(group, now_ms, partition_counts)
    if group.state in (State.READY, State.REBALANCING, State.AWAITING_SYNC):
        expired = [m for m in group.members.values() if m.deadline_ms <= now_ms]
        if expired:
            for m in expired:
                del group.members[m.member_id]
            return _after_removal(group, now_ms, partition_counts)
        if (
            group.state is State.READY
            and not group.is_kafka  # a Kafka group's leader watches its topics itself
            and _subscription_changed(group, partition_counts)
        ):
            prepare_rebalance(group, now_ms)
        return Result()
    if group.state is State.PREPARE_FOR_REBALANCE and group.initial_join is not None:
        return _initial_join_due(group, now_ms, partition_counts)
    if group.state is State.PREPARE_FOR_REBALANCE:
        timed_out = now_ms >= group.rebalance_deadline_ms
        gone = [m for m in group.members.values()
                if not m.joined and (timed_out or m.deadline_ms <= now_ms)]  # fmt: skip
        for m in gone:
            del group.members[m.member_id]
        if gone:
            return _after_removal(group, now_ms, partition_counts)
        return _maybe_complete(group, now_ms, partition_counts)
    return Result()


def _initial_join_due(group: Group, now_ms: int, partition_counts: Mapping[str, int]) -> Result:
    """The first rebalance out of Empty, held (group.InitialJoin): at its deadline it waits
    on if members joined meanwhile, else completes with the members that joined (a Kafka
    group's pending KIP-394 members do not hold it, as in Kafka's completeClassicGroupJoin)."""
    wait = group.initial_join
    if wait is None or now_ms < wait.deadline_ms:
        return Result()
    group.initial_join = wait.next(group, now_ms)
    if group.initial_join is not None:
        return Result()
    if group.is_kafka and all(m.joined for m in group.members.values()):
        return complete_classic(group, now_ms)
    return _maybe_complete(group, now_ms, partition_counts)


def _after_removal(group: Group, now_ms: int, partition_counts: Mapping[str, int]) -> Result:
    if not group.members:
        group.initial_join = None
        group.move(State.EMPTY)
        group.generation += 1
        group.strategy = None
        group.leader_id = None  # protocol_type stays for describing; the next join resets it
        group.awaiting_heartbeat.clear()
        return Result(records=[group_record(group)])
    if group.state is not State.PREPARE_FOR_REBALANCE:
        prepare_rebalance(group, now_ms)
    return _maybe_complete(group, now_ms, partition_counts)


def _maybe_complete(group: Group, now_ms: int, partition_counts: Mapping[str, int]) -> Result:
    """All members rejoined: bump the generation, assign, record, answer every join."""
    if group.state is not State.PREPARE_FOR_REBALANCE or group.initial_join is not None:
        return Result()
    if group.is_kafka:
        return complete_classic(group, now_ms) if all_joined(group) else Result()
    if not all(m.joined for m in group.members.values()):
        return Result()
    subs = {mid: m.subscribed(partition_counts) for mid, m in group.members.items()}
    counts = {t: partition_counts[t] for s in subs.values() for t in s if t in partition_counts}
    current = {mid: m.assignment for mid, m in group.members.items()}
    assignment = assignor(group.strategy or "range")(subs, counts, current)
    group.generation += 1
    group.partition_counts = dict(sorted(counts.items()))
    group.move(State.REBALANCING)
    group.awaiting_heartbeat = set(group.members)
    joins: dict[str, JoinGroupResponse] = {}
    for mid, m in group.members.items():
        m.assignment = assignment.get(mid, [])
        m.joined = False
        m.deadline_ms = now_ms + m.session_timeout_ms
        joins[mid] = JoinGroupResponse(NONE, group.generation, mid, to_wire(m.assignment))
    return Result(records=[group_record(group)], joins=joins)


def _subscription_changed(group: Group, partition_counts: Mapping[str, int]) -> bool:
    wanted: set[str] = set()
    for m in group.members.values():
        wanted |= m.subscribed(partition_counts)
    now = {t: partition_counts[t] for t in wanted if t in partition_counts}
    return now != group.partition_counts
