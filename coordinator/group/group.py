"""One consumer group's state, and what its operations share (Kafka's CoordinatorResult style).

Every operation takes the group, the request's fields, `now_ms` (injected time) and, where an
assignment may be made, the current partition count of each topic; it changes the in-memory
membership and returns a `Result`: the records to append to the offsets partition, the direct
response (None for a JoinGroup that must wait for the rebalance), and the JoinGroup responses
the operation completed (member id -> response). The service (service.py) appends the records
and answers only once they are replicated. Committed offsets enter memory only through
`replay`, after their records were appended, so memory never shows an offset the log may lose;
loading a coordinator is `replay` of every record of its partition, in order.

The operations live in one module per protocol, each importing this one:
- membership.py: odradek's own join protocol, and the life both join protocols share
  (heartbeat, leave, session expiry, the rebalance's completion);
- classic.py: Kafka's classic protocol (JoinGroup with the members' assignors, SyncGroup);
- offsets.py: offset commits (plain and transactional), their expiry, group deletion;
- consumer_group.py: KIP-848's consumer protocol (its state hangs off `Group.consumer`;
  its operations in consumer_heartbeat.py, consumer_target.py and consumer_replay.py).
A group is native or Kafka by its first member; the other kind is refused with
INCONSISTENT_GROUP_PROTOCOL. A Kafka group of protocol type "consumer" migrates online between
the classic and the consumer protocol (migration.py, classic_in_consumer.py).

Static members (KIP-345, a group instance id, both kinds) keep their place across restarts:
see "static membership" below; the group record keeps each member's instance id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.group.assignors import TP
from coordinator.group.records import CoordinatorRecord, GroupKey, OffsetKey
from coordinator.group.states import State, check_transition
from protocol.api.group import JoinGroupResponse, TopicPartitions
from protocol.errors import (
    FencedInstanceIdError,
    UnknownMemberIdError,
)
from protocol.patterns import compile_pattern

NONE = 0


@dataclass(frozen=True, slots=True)
class GroupLimits:
    min_session_timeout_ms: int = 100
    max_session_timeout_ms: int = 300_000
    max_members: int = 1000
    # Kafka's group.initial.rebalance.delay.ms: how long an Empty group's first rebalance waits
    # for more members (`InitialJoin`); 0: it completes as soon as everyone joined
    initial_rebalance_delay_ms: int = 0


@dataclass(frozen=True, slots=True)
class InitialJoin:
    """Kafka's InitialDelayedJoin: a group that was Empty completes its rebalance no earlier
    than `deadline_ms`, so consumers started together land in one generation instead of the
    first taking every partition and giving half back. When the deadline comes and a member
    joined since it was set (not in `members`), it moves on by min(delay, remaining), and the
    remaining time by one delay; the sum never passes the rebalance timeout."""

    deadline_ms: int
    delay_ms: int
    remaining_ms: int  # of the rebalance timeout, after this delay
    members: frozenset[str]  # the members when the deadline was set

    def next(self, group: Group, now_ms: int) -> InitialJoin | None:
        """At the deadline: the extended wait (Kafka's tryCompleteInitialRebalanceElseSchedule),
        or None, when the rebalance completes now."""
        if not set(group.members) - self.members or self.remaining_ms <= 0:
            return None
        delay_ms = min(self.delay_ms, self.remaining_ms)
        return InitialJoin(now_ms + delay_ms, delay_ms, max(self.remaining_ms - self.delay_ms, 0),
                           frozenset(group.members))  # fmt: skip


DEFAULT_LIMITS = GroupLimits()


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
            rx = compile_pattern(self.pattern)
            found.update(t for t in all_topics if not t.startswith("__") and rx.fullmatch(t))
        return found


@dataclass(slots=True)
class OffsetEntry:
    offset: int
    metadata: str | None
    commit_ms: int
    leader_epoch: int = -1  # the committed leader epoch (KIP-320); -1: not given


def offset_entry(value: Mapping[str, Any]) -> OffsetEntry:
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
    # the first rebalance out of Empty, held for group.initial.rebalance.delay.ms (in memory
    # only: a coordinator that loads the group mid-rebalance completes it without the wait)
    initial_join: InitialJoin | None = None

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


def join_error(code: int, member_id: str = "", message: str | None = None) -> Result:
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


def replace_static(group: Group, old_id: str, new_id: str) -> Result:
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


def undo_static(group: Group, old_id: str, new_id: str) -> Callable[[], None]:
    """Put `old_id` back in the place `new_id` is about to take, with the settings it had."""
    m = group.members[old_id]
    saved = (m.client_id, m.client_host, list(m.protocols), m.session_timeout_ms,
             m.rebalance_timeout_ms)  # fmt: skip

    def undo() -> None:
        if new_id not in group.members or old_id in group.members:
            return  # the group moved on meanwhile
        replace_static(group, new_id, old_id)
        back = group.members[old_id]
        (back.client_id, back.client_host, back.protocols, back.session_timeout_ms,
         back.rebalance_timeout_ms) = saved  # fmt: skip

    return undo


def merge_results(first: Result, then: Result) -> Result:
    then.records[:0] = first.records
    then.joins = {**first.joins, **then.joins}
    then.syncs = {**first.syncs, **then.syncs}
    return then


# ----- membership -------------------------------------------------------------------------


def prepare_rebalance(group: Group, now_ms: int, initial_delay_ms: int = 0) -> None:
    """Start a rebalance; out of Empty with `initial_delay_ms` its completion waits (Kafka's
    InitialDelayedJoin, `InitialJoin`)."""
    initial = group.state is State.EMPTY and initial_delay_ms > 0
    group.move(State.PREPARE_FOR_REBALANCE)
    timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
    group.rebalance_deadline_ms = now_ms + timeout
    group.awaiting_heartbeat.clear()
    group.initial_join = None
    if initial:
        group.initial_join = InitialJoin(now_ms + initial_delay_ms, initial_delay_ms,
                                         max(timeout - initial_delay_ms, 0),
                                         frozenset(group.members))  # fmt: skip


def to_wire(assignment: Iterable[TP]) -> list[TopicPartitions]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(assignment):
        by_topic.setdefault(topic, []).append(partition)
    return [TopicPartitions(t, ps) for t, ps in by_topic.items()]


# ----- Kafka groups: the classic protocol ----------------------------------------------------


# ----- offsets ------------------------------------------------------------------------------


# ----- records ------------------------------------------------------------------------------


def group_record(group: Group) -> CoordinatorRecord:
    """The group's record: a Kafka group's is Kafka's GroupMetadataValue (the chosen
    protocol's metadata and the leader's assignment per member, classic_records.py), a native
    group's odradek's own (records.py)."""
    if group.is_kafka:
        kafka_members = [
            {"id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
             "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
             "session_timeout_ms": m.session_timeout_ms,
             "subscription": m.metadata_for(group.strategy),
             "assignment_bytes": m.assignment_bytes}
            for m in group.members.values()
        ]  # fmt: skip
        value: dict[str, Any] = {
            "protocol_type": group.protocol_type, "generation": group.generation,
            "strategy": group.strategy, "leader": group.leader_id, "members": kafka_members,
        }  # fmt: skip
        return CoordinatorRecord(GroupKey(group.group_id), value)
    members: list[dict[str, Any]] = [
        {"id": m.member_id, "client_id": m.client_id, "session_timeout_ms": m.session_timeout_ms,
         "rebalance_timeout_ms": m.rebalance_timeout_ms, "topics": list(m.topics),
         "pattern": m.pattern, "assignment": [list(tp) for tp in m.assignment],
         "instance_id": m.instance_id}
        for m in group.members.values()
    ]  # fmt: skip
    value = {"generation": group.generation, "strategy": group.strategy, "members": members,
             "partition_counts": group.partition_counts,
             "protocol_type": None, "leader": group.leader_id}  # fmt: skip
    return CoordinatorRecord(GroupKey(group.group_id), value)


def replay(groups: dict[str, Group], record: CoordinatorRecord, now_ms: int) -> None:
    """Apply one record of the offsets partition (loading, or after a commit was appended)."""
    key, value = record.key, record.value
    if isinstance(key, OffsetKey):
        group = groups.setdefault(key.group_id, Group(key.group_id))
        if value is None:
            group.offsets.pop((key.topic, key.partition), None)
        else:
            group.offsets[(key.topic, key.partition)] = offset_entry(value)
        return
    if value is None:
        found = groups.get(key.group_id)
        if found is not None and (found.offsets or found.consumer is not None):
            clear_classic(found)  # became a consumer group (migration.py): offsets live on
        else:
            groups.pop(key.group_id, None)
        return
    group = groups.setdefault(key.group_id, Group(key.group_id))
    load_group_value(group, value, now_ms)


def clear_classic(group: Group) -> None:
    """The group's classic part emptied, its offsets and KIP-848 state kept: replaying the
    tombstone of its GroupMetadata while offsets live on, and an online upgrade to the
    consumer protocol (migration.py), which writes that tombstone."""
    group.members, group.pending_members, group.awaiting_heartbeat = {}, {}, set()
    group.state, group.generation, group.strategy = State.EMPTY, 0, None
    group.protocol_type, group.leader_id, group.initial_join = None, None, None


def load_group_value(group: Group, value: Mapping[str, Any], now_ms: int) -> None:
    """A loaded group is Ready with its recorded members; each gets a fresh session. Either
    record: a native group's (topics, pattern, assignment, partition counts) or a Kafka
    group's, Kafka's GroupMetadataValue or its msgpack form of before issue 33 (subscription
    and assignment bytes, kept opaque as the JoinGroup path keeps them: its members' topics
    and partitions are read from them on demand, protocol/kafka/consumer_protocol.py)."""
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
