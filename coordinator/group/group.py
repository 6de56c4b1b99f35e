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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.group.assignors import TP, assignor
from coordinator.group.records import CoordinatorRecord, GroupKey, OffsetKey, offset_record
from coordinator.group.states import State, check_transition
from protocol.api.group import JoinGroupResponse, TopicPartitions
from protocol.errors import (
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
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

    def move(self, target: State) -> None:
        self.state = check_transition(self.state, target)


@dataclass(slots=True)
class Result:
    records: list[CoordinatorRecord] = field(default_factory=list)
    response: Any = None
    joins: dict[str, JoinGroupResponse] = field(default_factory=dict)


def _join_error(code: int, member_id: str = "", message: str | None = None) -> Result:
    return Result(response=JoinGroupResponse(code, -1, member_id, [], message))


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
) -> Result:
    """`member_id`: the member's own, or a fresh one the service made for a new member."""
    if not limits.min_session_timeout_ms <= session_timeout_ms <= limits.max_session_timeout_ms:
        return _join_error(InvalidSessionTimeoutError.code, member_id)
    try:
        assignor(strategy)
        if pattern:
            re.compile(pattern)
    except Exception as exc:
        return _join_error(InconsistentGroupProtocolError.code, member_id, str(exc))
    if group.members and group.strategy not in (None, strategy):
        return _join_error(
            InconsistentGroupProtocolError.code, member_id,
            f"group {group.group_id} uses {group.strategy!r}, not {strategy!r}",
        )  # fmt: skip
    member = group.members.get(member_id)
    if member is None:
        if len(group.members) >= limits.max_members:
            return _join_error(InvalidSessionTimeoutError.code, member_id, "group is full")
        member = Member(member_id, client_id, session_timeout_ms, rebalance_timeout_ms,
                        tuple(topics), pattern)  # fmt: skip
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
    return _maybe_complete(group, now_ms, partition_counts)


def heartbeat(group: Group, generation: int, member_id: str, now_ms: int) -> Result:
    member = group.members.get(member_id)
    if member is None:
        return Result(response=UnknownMemberIdError.code)
    member.deadline_ms = now_ms + member.session_timeout_ms
    if group.state is State.PREPARE_FOR_REBALANCE:
        return Result(response=RebalanceInProgressError.code)
    if generation != group.generation:
        return Result(response=IllegalGenerationError.code)
    if group.state is State.REBALANCING:
        group.awaiting_heartbeat.discard(member_id)
        if not group.awaiting_heartbeat:
            group.move(State.READY)
    return Result(response=NONE)


def leave(group: Group, member_id: str, now_ms: int, partition_counts: Mapping[str, int]) -> Result:
    if group.members.pop(member_id, None) is None:
        return Result(response=UnknownMemberIdError.code)
    result = _after_removal(group, now_ms, partition_counts)
    result.response = NONE
    result.joins[member_id] = JoinGroupResponse(UnknownMemberIdError.code, -1, member_id, [])
    return result


def tick(group: Group, now_ms: int, partition_counts: Mapping[str, int]) -> Result:
    """Session expiry, rebalance timeout, and subscription changes (counts of all topics)."""
    if group.state in (State.READY, State.REBALANCING):
        expired = [m for m in group.members.values() if m.deadline_ms <= now_ms]
        if expired:
            for m in expired:
                del group.members[m.member_id]
            return _after_removal(group, now_ms, partition_counts)
        if group.state is State.READY and _subscription_changed(group, partition_counts):
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
        group.awaiting_heartbeat.clear()
        return Result(records=[group_record(group)])
    if group.state is not State.PREPARE_FOR_REBALANCE:
        _prepare(group, now_ms)
    return _maybe_complete(group, now_ms, partition_counts)


def _maybe_complete(group: Group, now_ms: int, partition_counts: Mapping[str, int]) -> Result:
    """All members rejoined: bump the generation, assign, record, answer every join."""
    if group.state is not State.PREPARE_FOR_REBALANCE:
        return Result()
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


# ----- offsets ------------------------------------------------------------------------------


def commit(
    group: Group, generation: int, member_id: str, offsets: list[tuple[str, int, int, str | None]],
    now_ms: int,
) -> Result:  # fmt: skip
    """Validate a commit; the response is one error code for all its partitions."""
    if generation < 0 and not member_id:
        if group.members:  # only an inactive group takes commits from outside it
            return Result(response=UnknownMemberIdError.code)
    else:
        member = group.members.get(member_id)
        if member is None:
            return Result(response=UnknownMemberIdError.code)
        if generation != group.generation:
            return Result(response=IllegalGenerationError.code)
        if group.state is State.REBALANCING and member_id in group.awaiting_heartbeat:
            group.awaiting_heartbeat.discard(member_id)
            if not group.awaiting_heartbeat:
                group.move(State.READY)
        member.deadline_ms = now_ms + member.session_timeout_ms
    records = [offset_record(group.group_id, t, p, o, md, now_ms) for t, p, o, md in offsets]
    return Result(records=records, response=NONE)


def delete(group: Group) -> Result:
    if group.members:
        return Result(response=NonEmptyGroupError.code)
    records = [CoordinatorRecord(OffsetKey(group.group_id, t, p), None) for t, p in group.offsets]
    records.append(CoordinatorRecord(GroupKey(group.group_id), None))
    return Result(records=records, response=NONE)


# ----- records ------------------------------------------------------------------------------


def group_record(group: Group) -> CoordinatorRecord:
    members = [
        {"id": m.member_id, "client_id": m.client_id, "session_timeout_ms": m.session_timeout_ms,
         "rebalance_timeout_ms": m.rebalance_timeout_ms, "topics": list(m.topics),
         "pattern": m.pattern, "assignment": [list(tp) for tp in m.assignment]}
        for m in group.members.values()
    ]  # fmt: skip
    value = {"generation": group.generation, "strategy": group.strategy, "members": members,
             "partition_counts": group.partition_counts}  # fmt: skip
    return CoordinatorRecord(GroupKey(group.group_id), value)


def replay(groups: dict[str, Group], record: CoordinatorRecord, now_ms: int) -> None:
    """Apply one record of the offsets partition (loading, or after a commit was appended)."""
    key, value = record.key, record.value
    if isinstance(key, OffsetKey):
        group = groups.setdefault(key.group_id, Group(key.group_id))
        if value is None:
            group.offsets.pop((key.topic, key.partition), None)
        else:
            group.offsets[(key.topic, key.partition)] = OffsetEntry(
                int(value["offset"]), value.get("metadata"), int(value.get("commit_ms", 0))
            )
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
        group.members[member.member_id] = member
    group.state = State.READY if group.members else State.EMPTY
    group.awaiting_heartbeat = set()
