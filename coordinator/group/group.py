"""One consumer group's state and the pure operations on it (Kafka's CoordinatorResult style).

Every operation takes the group, the request's fields, `now_ms` (injected time) and, where an
assignment may be made, the current partition count of each topic; it changes the in-memory
membership and returns a `Result`: the records to append to the offsets partition, the direct
response (None for a JoinGroup that must wait for the rebalance), and the JoinGroup responses
the operation completed (member id -> response). The service (service.py) appends the records
and answers only once they are replicated. Committed offsets enter memory only through
`replay`, after their records were appended, so memory never shows an offset the log may lose;
loading a coordinator is `replay` of every record of its partition, in order.

A rebalance (seed 000): a join, leave, session expiry or subscription change moves the group to
PrepareForRebalance; members learn it from their heartbeats (REBALANCE_IN_PROGRESS) and rejoin;
when all have (or the rebalance timeout passes, dropping the rest) the generation is bumped, the
assignor runs, a group record is written, every pending JoinGroup is answered, and the group
waits in Rebalancing for one heartbeat of the new generation from each member, then is Ready.

Kafka groups (the classic protocol, `join_classic` / `sync`): members join with the assignors
they support (name and opaque metadata each); when all have, the generation is bumped, the
protocol most members prefer among those all support is chosen, the leader (kept, or the first
to join) is answered with every member's metadata and the others with none, and the group
waits in Awaiting sync for the leader's SyncGroup. Its assignment (opaque bytes per member) is
written in the group record, then every SyncGroup is answered with its member's part: Ready.
A JoinGroup v4+ without a member id gets MEMBER_ID_REQUIRED and a fresh id to rejoin with
(KIP-394). A group is native or Kafka by its first member; the other kind is refused with
INCONSISTENT_GROUP_PROTOCOL.

Static members (KIP-345, a group instance id, both kinds) keep their place across restarts:
see "static membership" below; the group record keeps each member's instance id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from coordinator.group.assignors import TP, assignor
from coordinator.group.records import CoordinatorRecord, GroupKey, OffsetKey, offset_record
from coordinator.group.states import State, check_transition
from protocol.api.group import JoinGroupResponse, TopicPartitions
from protocol.errors import (
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    NonEmptyGroupError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

NONE = 0


@dataclass(frozen=True, slots=True)
class GroupLimits:
    min_session_timeout_ms: int = 100
    max_session_timeout_ms: int = 300_000
    max_members: int = 1000


@dataclass(slots=True)
class Member:
    member_id: str
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    topics: tuple[str, ...]
    pattern: str | None
    assignment: list[TP] = field(default_factory=list)
    deadline_ms: int = 0  # session expiry: last heartbeat + session timeout
    joined: bool = False  # has sent JoinGroup in the current rebalance
    # Kafka groups only: the client's host, its protocols (assignor name, metadata) in order
    # of preference, and its opaque assignment from the leader's SyncGroup
    client_host: str = ""
    protocols: list[tuple[str, bytes]] = field(default_factory=list)
    assignment_bytes: bytes = b""
    # static membership (KIP-345): the member's group.instance.id; None: a dynamic member
    instance_id: str | None = None

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")

    def subscribed(self, all_topics: Iterable[str]) -> set[str]:
        found = set(self.topics)
        if self.pattern:
            rx = re.compile(self.pattern)
            found.update(t for t in all_topics if not t.startswith("__") and rx.fullmatch(t))
        return found


@dataclass(slots=True)
class OffsetEntry:
    offset: int
    metadata: str | None
    commit_ms: int
    leader_epoch: int = -1  # the committed leader epoch (KIP-320); -1: not given


Commit = tuple[Any, ...]  # (topic, partition, offset, metadata[, leader epoch])


def _offset_records(
    group_id: str, offsets: list[Commit], commit_ms: int
) -> list[CoordinatorRecord]:
    return [
        offset_record(group_id, c[0], c[1], c[2], c[3], commit_ms, c[4] if len(c) > 4 else -1)
        for c in offsets
    ]


def _entry(value: Mapping[str, Any]) -> OffsetEntry:
    epoch = int(value.get("leader_epoch", -1))
    return OffsetEntry(int(value["offset"]), value.get("metadata"),
                       int(value.get("commit_ms", 0)), epoch)  # fmt: skip


@dataclass(slots=True)
class Group:
    group_id: str
    state: State = State.EMPTY
    generation: int = 0
    strategy: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    offsets: dict[tuple[str, int], OffsetEntry] = field(default_factory=dict)
    partition_counts: dict[str, int] = field(default_factory=dict)  # at the last assignment
    rebalance_deadline_ms: int = 0
    awaiting_heartbeat: set[str] = field(default_factory=set)
    # Kafka groups: protocol_type is set ("consumer", ...) while it has members; None: native
    protocol_type: str | None = None
    leader_id: str | None = None
    pending_members: dict[str, int] = field(default_factory=dict)  # KIP-394 id -> deadline
    # KIP-98/447: offsets a transaction committed (TxnOffsetCommit), by producer id; they
    # become the group's offsets when the transaction's COMMIT marker is written, and are
    # dropped at its ABORT
    pending_txn: dict[int, dict[tuple[str, int], OffsetEntry]] = field(default_factory=dict)
    # KIP-848: the group's consumer-protocol state (consumer_group.ConsumerGroup) while it is a
    # consumer group; its offsets stay in `offsets` above, shared by both kinds
    consumer: Any = None

    def move(self, target: State) -> None:
        self.state = check_transition(self.state, target)

    @property
    def is_kafka(self) -> bool:
        return self.protocol_type is not None


@dataclass(slots=True)
class Result:
    records: list[CoordinatorRecord] = field(default_factory=list)
    response: Any = None
    joins: dict[str, Any] = field(default_factory=dict)  # member -> its JoinGroup answer
    syncs: dict[str, SyncAnswer] = field(default_factory=dict)  # member -> its SyncGroup answer
    # a static member's rejoin without a rebalance: undoes it if its group record is not
    # appended (Kafka rolls the replacement back, so the old member id stays the group's)
    undo: Callable[[], None] | None = None


@dataclass(frozen=True, slots=True)
class ClassicJoinAnswer:
    """A Kafka JoinGroup answer: the leader gets `members` (id, metadata), others none."""

    error_code: int
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    member_id: str
    members: list[tuple[str, bytes]] = field(default_factory=list)
    error_message: str | None = None
    skip_assignment: bool = False  # KIP-814: the leader's own static rejoin, nothing to assign
    instances: Mapping[str, str] = field(default_factory=dict)  # member id -> its instance id


@dataclass(frozen=True, slots=True)
class SyncAnswer:
    error_code: int
    assignment: bytes = b""


def _join_error(code: int, member_id: str = "", message: str | None = None) -> Result:
    return Result(response=JoinGroupResponse(code, -1, member_id, [], message))


# ----- static membership (KIP-345) ----------------------------------------------------------
#
# A member that names a group.instance.id is static: it keeps its place (and its assignment)
# across restarts. Rejoining without a member id (a restarted process) it gets a new member id
# that replaces the old one; while the group is Ready and the group's protocol would stay the
# same, there is no rebalance: the group record is rewritten with the new id and the member is
# answered with the current generation (Kafka's updateStaticMemberThenRebalanceOrCompleteJoin).
# The old id is fenced: its requests, and any request naming the instance id with another
# member id, get FENCED_INSTANCE_ID. A static member does not leave on close; it goes at its
# session expiry, or when an admin removes it by instance id (LeaveGroup v3+).


def static_member_id(group: Group, instance_id: str | None) -> str | None:
    """The member id the group knows for `instance_id` (None: no such static member)."""
    if not instance_id:
        return None
    return next((m.member_id for m in group.members.values() if m.instance_id == instance_id),
                None)  # fmt: skip


def check_member(group: Group, member_id: str, instance_id: str | None) -> int:
    """Kafka's validateMember: a dynamic member must be known; a static one must be the member
    its instance id is known by (another id: FENCED_INSTANCE_ID, an unknown instance:
    UNKNOWN_MEMBER_ID)."""
    if not instance_id:
        return NONE if member_id in group.members else UnknownMemberIdError.code
    known = static_member_id(group, instance_id)
    if known is None:
        return UnknownMemberIdError.code
    return NONE if known == member_id else FencedInstanceIdError.code


def _replace_static(group: Group, old_id: str, new_id: str) -> Result:
    """The member `old_id` becomes `new_id` in place (same assignment, same leadership); a
    JoinGroup or SyncGroup the old id still waits on is answered FENCED_INSTANCE_ID."""
    group.members = {(new_id if mid == old_id else mid): m for mid, m in group.members.items()}
    group.members[new_id].member_id = new_id
    if group.leader_id == old_id:
        group.leader_id = new_id
    if old_id in group.awaiting_heartbeat:
        group.awaiting_heartbeat.discard(old_id)
        group.awaiting_heartbeat.add(new_id)
    fenced = FencedInstanceIdError.code
    join_answer = (ClassicJoinAnswer(fenced, -1, None, None, "", old_id) if group.is_kafka
                   else JoinGroupResponse(fenced, -1, old_id, []))  # fmt: skip
    return Result(joins={old_id: join_answer}, syncs={old_id: SyncAnswer(fenced)})


def _undo_static(group: Group, old_id: str, new_id: str) -> Callable[[], None]:
    """Put `old_id` back in the place `new_id` is about to take, with the settings it had."""
    m = group.members[old_id]
    saved = (m.client_id, m.client_host, list(m.protocols), m.session_timeout_ms,
             m.rebalance_timeout_ms)  # fmt: skip

    def undo() -> None:
        if new_id not in group.members or old_id in group.members:
            return  # the group moved on meanwhile
        _replace_static(group, new_id, old_id)
        back = group.members[old_id]
        (back.client_id, back.client_host, back.protocols, back.session_timeout_ms,
         back.rebalance_timeout_ms) = saved  # fmt: skip

    return undo


def _merge(first: Result, then: Result) -> Result:
    then.records[:0] = first.records
    then.joins = {**first.joins, **then.joins}
    then.syncs = {**first.syncs, **then.syncs}
    return then


# ----- membership -------------------------------------------------------------------------


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
    limits: GroupLimits = GroupLimits(),
    instance_id: str | None = None,
) -> Result:
    """`member_id`: the member's own, or a fresh one the service made for a new member.
    `instance_id`: a static member's; with a fresh member id it replaces the member known by
    that instance id (static rejoin: no rebalance while Ready with the same subscription)."""
    if not limits.min_session_timeout_ms <= session_timeout_ms <= limits.max_session_timeout_ms:
        return _join_error(InvalidSessionTimeoutError.code, member_id)
    try:
        assignor(strategy)
        if pattern:
            re.compile(pattern)
    except Exception as exc:
        return _join_error(InconsistentGroupProtocolError.code, member_id, str(exc))
    if not group.members:
        group.protocol_type = None  # an empty group takes either kind
    if group.members and group.is_kafka:
        return _join_error(
            InconsistentGroupProtocolError.code, member_id,
            f"group {group.group_id} is a Kafka consumer group (its members assign partitions "
            "themselves); an odradek consumer cannot join it: use another group id",
        )  # fmt: skip
    if group.members and group.strategy not in (None, strategy):
        return _join_error(
            InconsistentGroupProtocolError.code, member_id,
            f"group {group.group_id} uses {group.strategy!r}, not {strategy!r}",
        )  # fmt: skip
    replaced = Result()
    known = static_member_id(group, instance_id)
    if member_id in group.members and instance_id:
        code = check_member(group, member_id, instance_id)
        if code != NONE:
            return _join_error(code, member_id, f"instance id {instance_id} is {known}'s")
    elif known is not None:  # a static member back with a fresh id: it takes its old place
        old = group.members[known]
        same = old.topics == tuple(topics) and old.pattern == pattern
        undo = _undo_static(group, known, member_id)
        replaced = _replace_static(group, known, member_id)
        if same and group.state is State.READY:
            old.session_timeout_ms, old.rebalance_timeout_ms = (
                session_timeout_ms, rebalance_timeout_ms)  # fmt: skip
            old.client_id = client_id
            old.deadline_ms = now_ms + session_timeout_ms
            answer = JoinGroupResponse(NONE, group.generation, member_id, to_wire(old.assignment))
            done = Result(records=[group_record(group)], response=answer, undo=undo)
            return _merge(replaced, done)
    member = group.members.get(member_id)
    if member is None:
        if len(group.members) >= limits.max_members:
            return _join_error(GroupMaxSizeReachedError.code, member_id,
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
        _prepare(group, now_ms)
    return _merge(replaced, _maybe_complete(group, now_ms, partition_counts))


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
            _prepare(group, now_ms)
        return Result()
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


def _prepare(group: Group, now_ms: int) -> None:
    group.move(State.PREPARE_FOR_REBALANCE)
    timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
    group.rebalance_deadline_ms = now_ms + timeout
    group.awaiting_heartbeat.clear()


def _after_removal(group: Group, now_ms: int, partition_counts: Mapping[str, int]) -> Result:
    if not group.members:
        group.move(State.EMPTY)
        group.generation += 1
        group.strategy = None
        group.leader_id = None  # protocol_type stays for describing; the next join resets it
        group.awaiting_heartbeat.clear()
        return Result(records=[group_record(group)])
    if group.state is not State.PREPARE_FOR_REBALANCE:
        _prepare(group, now_ms)
    return _maybe_complete(group, now_ms, partition_counts)


def _maybe_complete(group: Group, now_ms: int, partition_counts: Mapping[str, int]) -> Result:
    """All members rejoined: bump the generation, assign, record, answer every join."""
    if group.state is not State.PREPARE_FOR_REBALANCE:
        return Result()
    if group.is_kafka:
        return _complete_classic(group, now_ms) if _all_joined(group) else Result()
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


def to_wire(assignment: Iterable[TP]) -> list[TopicPartitions]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(assignment):
        by_topic.setdefault(topic, []).append(partition)
    return [TopicPartitions(t, ps) for t, ps in by_topic.items()]


# ----- Kafka groups: the classic protocol ----------------------------------------------------


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
    limits: GroupLimits = GroupLimits(),
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
        _prepare(group, now_ms)
    return _complete_classic(group, now_ms) if _all_joined(group) else Result()


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
    undo = _undo_static(group, old_id, new_id)
    fenced = _replace_static(group, old_id, new_id)
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
        return _merge(fenced, done)
    m.joined = True
    if group.state is not State.PREPARE_FOR_REBALANCE:
        _prepare(group, now_ms)
    return _merge(fenced, _complete_classic(group, now_ms) if _all_joined(group) else Result())


def _all_joined(group: Group) -> bool:
    """Every member rejoined, and no new member is still to come back with its id (Kafka's
    hasAllMembersJoined: pending members hold the rebalance until they join or expire)."""
    return all(m.joined for m in group.members.values()) and not group.pending_members


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


def _complete_classic(group: Group, now_ms: int) -> Result:
    """Everyone joined: bump, choose a protocol and a leader, answer every JoinGroup."""
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


# ----- offsets ------------------------------------------------------------------------------


def commit(
    group: Group, generation: int, member_id: str, offsets: list[Commit],
    now_ms: int, commit_ms: int | None = None, instance_id: str | None = None,
) -> Result:  # fmt: skip
    """Validate a commit; the response is one error code for all its partitions. `now_ms` is
    the monotonic clock (the member's session runs on it); `commit_ms` the wall clock written
    in the offset records (default `now_ms`). A static member's `instance_id` must be its own
    (a fenced member's commit gets FENCED_INSTANCE_ID)."""
    if generation < 0 and not member_id and not instance_id:
        if group.members:  # only an inactive group takes commits from outside it
            return Result(response=UnknownMemberIdError.code)
    else:
        code = check_member(group, member_id, instance_id)
        if code != NONE:
            return Result(response=code)
        member = group.members[member_id]
        if generation != group.generation:
            return Result(response=IllegalGenerationError.code)
        if group.state is State.AWAITING_SYNC:
            return Result(response=RebalanceInProgressError.code)
        if group.state is State.REBALANCING and member_id in group.awaiting_heartbeat:
            group.awaiting_heartbeat.discard(member_id)
            if not group.awaiting_heartbeat:
                group.move(State.READY)
        member.deadline_ms = now_ms + member.session_timeout_ms
    stamp = now_ms if commit_ms is None else commit_ms
    records = _offset_records(group.group_id, offsets, stamp)
    return Result(records=records, response=NONE)


def txn_commit(
    group: Group, generation: int, member_id: str, offsets: list[Commit],
    commit_ms: int, instance_id: str | None = None,
) -> Result:  # fmt: skip
    """TxnOffsetCommit's checks (Kafka's validateOffsetCommit for a transaction): a member id,
    when given, must be the group's (and a static member's instance id its own); a generation,
    when given (>= 0), the current one. Old clients (TxnOffsetCommit before v3) send neither,
    and their commit is taken as it is."""
    if member_id or instance_id:
        code = check_member(group, member_id, instance_id)
        if code != NONE:
            return Result(response=code)
    if generation >= 0 and generation != group.generation:
        return Result(response=IllegalGenerationError.code)
    records = _offset_records(group.group_id, offsets, commit_ms)
    return Result(records=records, response=NONE)


def expire_offsets(group: Group, now_ms: int, retention_ms: int, empty_since_ms: int) -> Result:
    """KIP-211, for a group with no members: tombstones for the offsets committed longer than
    `retention_ms` before now and before the group became empty (`empty_since_ms`), and for
    the group itself when that leaves it no offsets (Kafka's group goes Dead)."""
    if group.members:
        return Result()
    expired = [
        tp for tp, entry in group.offsets.items()
        if now_ms - max(entry.commit_ms, empty_since_ms) >= retention_ms
    ]  # fmt: skip
    records = [CoordinatorRecord(OffsetKey(group.group_id, t, p), None) for t, p in expired]
    if expired and len(expired) == len(group.offsets):
        records.append(CoordinatorRecord(GroupKey(group.group_id), None))
    return Result(records=records)


def delete(group: Group) -> Result:
    if group.members:
        return Result(response=NonEmptyGroupError.code)
    records = [CoordinatorRecord(OffsetKey(group.group_id, t, p), None) for t, p in group.offsets]
    records.append(CoordinatorRecord(GroupKey(group.group_id), None))
    return Result(records=records, response=NONE)


# ----- records ------------------------------------------------------------------------------


def group_record(group: Group) -> CoordinatorRecord:
    members: list[dict[str, Any]] = [
        {"id": m.member_id, "client_id": m.client_id, "session_timeout_ms": m.session_timeout_ms,
         "rebalance_timeout_ms": m.rebalance_timeout_ms, "topics": list(m.topics),
         "pattern": m.pattern, "assignment": [list(tp) for tp in m.assignment],
         "instance_id": m.instance_id}
        for m in group.members.values()
    ]  # fmt: skip
    if group.is_kafka:  # Kafka's GroupMetadataValue: the chosen protocol's metadata only
        for entry, m in zip(members, group.members.values(), strict=True):
            entry["client_host"] = m.client_host
            entry["subscription"] = m.metadata_for(group.strategy)
            entry["assignment_bytes"] = m.assignment_bytes
    value = {"generation": group.generation, "strategy": group.strategy, "members": members,
             "partition_counts": group.partition_counts,
             "protocol_type": group.protocol_type, "leader": group.leader_id}  # fmt: skip
    return CoordinatorRecord(GroupKey(group.group_id), value)


def replay_txn(
    groups: dict[str, Group], producer_id: int, record: CoordinatorRecord, now_ms: int
) -> None:
    """Apply an offset record of a transaction (TxnOffsetCommit): pending until its marker."""
    key, value = record.key, record.value
    if not isinstance(key, OffsetKey) or value is None:
        replay(groups, record, now_ms)  # only offsets are transactional; anything else applies
        return
    group = groups.setdefault(key.group_id, Group(key.group_id))
    group.pending_txn.setdefault(producer_id, {})[(key.topic, key.partition)] = _entry(value)


def complete_txn(groups: dict[str, Group], producer_id: int, commit: bool) -> None:
    """A transaction's marker reached this offsets partition: its offsets become the groups'
    committed offsets (COMMIT) or are forgotten (ABORT)."""
    for group in groups.values():
        pending = group.pending_txn.pop(producer_id, None)
        if pending and commit:
            group.offsets.update(pending)


def has_pending_txn(group: Group, topic: str, partition: int) -> bool:
    """KIP-447's require_stable: an open transaction holds an offset for this partition."""
    return any((topic, partition) in offsets for offsets in group.pending_txn.values())


def replay(groups: dict[str, Group], record: CoordinatorRecord, now_ms: int) -> None:
    """Apply one record of the offsets partition (loading, or after a commit was appended)."""
    key, value = record.key, record.value
    if isinstance(key, OffsetKey):
        group = groups.setdefault(key.group_id, Group(key.group_id))
        if value is None:
            group.offsets.pop((key.topic, key.partition), None)
        else:
            group.offsets[(key.topic, key.partition)] = _entry(value)
        return
    if value is None:
        groups.pop(key.group_id, None)
        return
    group = groups.setdefault(key.group_id, Group(key.group_id))
    load_group_value(group, value, now_ms)


def load_group_value(group: Group, value: Mapping[str, Any], now_ms: int) -> None:
    """A loaded group is Ready with its recorded members; each gets a fresh session."""
    group.generation = int(value["generation"])
    group.strategy = value.get("strategy")
    group.protocol_type = value.get("protocol_type")
    group.leader_id = value.get("leader")
    group.partition_counts = {str(t): int(n) for t, n in value.get("partition_counts", {}).items()}
    group.members = {}
    for m in value.get("members", []):
        member = Member(
            str(m["id"]), str(m.get("client_id", "")), int(m["session_timeout_ms"]),
            int(m.get("rebalance_timeout_ms", m["session_timeout_ms"])),
            tuple(m.get("topics", [])), m.get("pattern"),
            [(str(t), int(p)) for t, p in m.get("assignment", [])],
            now_ms + int(m["session_timeout_ms"]),
        )  # fmt: skip
        member.instance_id = m.get("instance_id")  # GroupMetadataValue v3's groupInstanceId
        if group.protocol_type is not None:
            member.client_host = str(m.get("client_host", ""))
            member.protocols = [(group.strategy or "", bytes(m.get("subscription", b"")))]
            member.assignment_bytes = bytes(m.get("assignment_bytes", b""))
        group.members[member.member_id] = member
    group.state = State.READY if group.members else State.EMPTY
    group.awaiting_heartbeat = set()
