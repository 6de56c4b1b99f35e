"""A KIP-848 consumer group (`group.protocol=consumer`) and its pure operations (Kafka's
GroupMetadataManager.consumerGroupHeartbeat, ConsumerGroup, ConsumerGroupMember).

State: the group epoch (bumped by every membership or subscription change), the target
assignment and its epoch (the server assignor's output for a group epoch), and per member its
subscription and its current assignment (reconcile.py: member epoch, assigned partitions,
partitions pending revocation, MemberState). Partitions are named by topic id (KIP-516).

Every operation computes the records that express its change (consumer_records.py, Kafka's
bytes), applies them to the group by `replay` (so memory is always what replaying the log
gives), and returns them with the response; the service appends them (acks=all) before
answering. Loading a coordinator is `replay` of the records in log order.

A heartbeat: validate (Kafka's messages); -1 leaves (the member's records tombstoned, the group
epoch bumped), -2 leaves a static member's place (epoch -2, partitions kept until its session
expires or its instance rejoins); 0 joins; otherwise the member epoch must be the member's (or
its previous one with owned partitions within its assignment: a lost response), else
FENCED_MEMBER_EPOCH. Then: a changed subscription, or a change in the partitions of the topics
the members subscribe to (names, or a regex full-matched with Python's `re` against the topic
names, internal topics excluded), bumps the group epoch; a group epoch past the target epoch
runs the assignor (the one most members ask for, `uniform` by default); then this member is
reconciled one step towards its target. `tick` fences members whose session (no heartbeat for
`session_timeout_ms`) or revocation deadline (`rebalance_timeout_ms` in UNREVOKED_PARTITIONS)
passed.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from coordinator.group import consumer_records as cr
from coordinator.group.consumer_records import ConsumerKey
from coordinator.group.consumer_states import GroupState, MemberState, group_state
from coordinator.group.reconcile import FencedError, Reconciled, reconcile
from coordinator.group.records import CoordinatorRecord
from coordinator.group.server_assignors import ASSIGNORS, DEFAULT_ASSIGNOR, MemberSpec
from protocol.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)

TopicId = uuid.UUID
Assignment = Mapping[TopicId, frozenset[int]]
NONE = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
# Kafka's codes (protocol/errors.py; Kafka's 128 has no row there, kafka-python lacks it)
UNKNOWN_MEMBER_ID = UnknownMemberIdError.code
INVALID_REQUEST = InvalidRequestError.code
GROUP_ID_NOT_FOUND = GroupIdNotFoundError.code
GROUP_MAX_SIZE_REACHED = GroupMaxSizeReachedError.code
FENCED_MEMBER_EPOCH = FencedMemberEpochError.code
UNRELEASED_INSTANCE_ID = UnreleasedInstanceIdError.code
UNSUPPORTED_ASSIGNOR = UnsupportedAssignorError.code
STALE_MEMBER_EPOCH = StaleMemberEpochError.code
INVALID_REGULAR_EXPRESSION = 128
# a change of these in a heartbeat bumps the group epoch (a new target assignment)
SUBSCRIPTION_FIELDS = ("subscribed_topic_names", "subscribed_topic_regex", "server_assignor")


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """The broker's group.consumer.* settings."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    assignment: Reconciled = field(default_factory=Reconciled)
    session_deadline_ms: int = 0  # in memory only: now + session timeout at each heartbeat
    revoke_deadline_ms: int = 0  # in memory only: set while UNREVOKED_PARTITIONS

    @property
    def epoch(self) -> int:
        return self.assignment.member_epoch

    def metadata_value(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed_topic_names": list(self.subscribed_topic_names),
            "subscribed_topic_regex": self.subscribed_topic_regex,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "server_assignor": self.server_assignor,
        }


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    target_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)  # member -> target partitions
    # the partition metadata last written: topic id -> (name, partitions)
    subscription: dict[TopicId, tuple[str, int]] = field(default_factory=dict)
    deleted: bool = False

    @property
    def state(self) -> GroupState:
        if self.deleted:
            return GroupState.DEAD
        stable = all(
            m.assignment.state is MemberState.STABLE and m.epoch == self.target_epoch
            for m in self.members.values()
        )
        return group_state(len(self.members), self.group_epoch, self.target_epoch, stable)

    def owners(self) -> dict[tuple[TopicId, int], str]:
        """Partition -> the member owning it (assigned or pending revocation)."""
        out: dict[tuple[TopicId, int], str] = {}
        for m in self.members.values():
            for part in (m.assignment.assigned, m.assignment.pending_revocation):
                for t, ps in part.items():
                    for p in ps:
                        out[(t, p)] = m.member_id
        return out

    def preferred_assignor(self, config: ConsumerConfig) -> str:
        asked = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        if not asked:
            return config.assignors[0] if config.assignors else DEFAULT_ASSIGNOR
        return sorted(asked.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


@dataclass(frozen=True, slots=True)
class Topics:
    """The cluster's topics as the coordinator sees them (injected): name -> (id, partitions)."""

    by_name: Mapping[str, tuple[TopicId, int]]

    def name_of(self, topic_id: TopicId) -> str | None:
        return next((n for n, (i, _) in self.by_name.items() if i == topic_id), None)


@dataclass(frozen=True, slots=True)
class HeartbeatIn:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None  # None: not sent (unchanged since the last heartbeat)
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatOut:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(slots=True)
class Outcome:
    records: list[CoordinatorRecord] = field(default_factory=list)
    response: HeartbeatOut = field(default_factory=lambda: HeartbeatOut(NONE))


def _error(code: int, message: str, member_id: str | None = None) -> Outcome:
    return Outcome([], HeartbeatOut(code, message, member_id))


# ----- records ----------------------------------------------------------------------------


def _rec(
    kind: int, group_id: str, value: dict[str, Any] | None, member: str = ""
) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerKey(kind, group_id, member), value)


def epoch_record(group_id: str, epoch: int) -> CoordinatorRecord:
    return _rec(cr.GROUP_METADATA, group_id, {"epoch": epoch})


def current_record(group_id: str, member_id: str, a: Reconciled) -> CoordinatorRecord:
    value = {
        "member_epoch": a.member_epoch,
        "previous_member_epoch": a.previous_member_epoch,
        "state": int(a.state),
        "assigned_partitions": dict(a.assigned),
        "partitions_pending_revocation": dict(a.pending_revocation),
    }
    return _rec(cr.CURRENT_ASSIGNMENT, group_id, value, member_id)


def removal_records(group_id: str, member_id: str) -> list[CoordinatorRecord]:
    """Kafka's order: current assignment, target assignment, then the member's metadata."""
    return [
        _rec(cr.CURRENT_ASSIGNMENT, group_id, None, member_id),
        _rec(cr.TARGET_MEMBER, group_id, None, member_id),
        _rec(cr.MEMBER_METADATA, group_id, None, member_id),
    ]


def delete_records(group: ConsumerGroup) -> list[CoordinatorRecord]:
    """Tombstones for the whole (empty) group: target, partition metadata, then the epoch."""
    gid = group.group_id
    out = [r for mid in group.members for r in removal_records(gid, mid)]
    ends = (cr.TARGET_METADATA, cr.PARTITION_METADATA, cr.GROUP_METADATA)
    return out + [_rec(kind, gid, None) for kind in ends]


def replay(
    group: ConsumerGroup,
    key: ConsumerKey,
    value: dict[str, Any] | None,
    now_ms: int,
    session_timeout_ms: int = 45_000,
) -> None:
    """Apply one record. Timers are memory only: a member (re)appearing gets a fresh session,
    one entering UNREVOKED_PARTITIONS a revocation deadline."""
    kind = key.record_type
    if kind == cr.GROUP_METADATA:
        group.deleted = value is None
        group.group_epoch = int(value["epoch"]) if value is not None else 0
    elif kind == cr.PARTITION_METADATA:
        topics = value["topics"] if value is not None else []
        group.subscription = {t["topic_id"]: (t["topic_name"], t["num_partitions"]) for t in topics}
    elif kind == cr.TARGET_METADATA:
        group.target_epoch = int(value["assignment_epoch"]) if value is not None else 0
    elif kind == cr.TARGET_MEMBER:
        if value is None:
            group.target.pop(key.member_id, None)
        else:
            group.target[key.member_id] = dict(value["topic_partitions"])
    elif kind == cr.MEMBER_METADATA:
        if value is None:
            group.members.pop(key.member_id, None)
            return
        member = _member(group, key.member_id, now_ms, session_timeout_ms)
        for name in (
            "instance_id",
            "rack_id",
            "client_id",
            "client_host",
            "subscribed_topic_regex",
            "rebalance_timeout_ms",
            "server_assignor",
        ):
            setattr(member, name, value[name])
        member.subscribed_topic_names = tuple(value["subscribed_topic_names"])
    elif kind == cr.CURRENT_ASSIGNMENT:
        if value is None:
            if key.member_id in group.members:
                group.members[key.member_id].assignment = Reconciled()
            return
        member = _member(group, key.member_id, now_ms, session_timeout_ms)
        new = Reconciled(
            MemberState(value["state"]) if value["state"] in (0, 1, 2) else MemberState.UNKNOWN,
            value["member_epoch"],
            value["previous_member_epoch"],
            dict(value["assigned_partitions"]),
            dict(value["partitions_pending_revocation"]),
        )
        if new.state is not MemberState.UNREVOKED_PARTITIONS:
            member.revoke_deadline_ms = 0
        elif (
            member.assignment.state is not MemberState.UNREVOKED_PARTITIONS
            or member.revoke_deadline_ms == 0
        ):
            member.revoke_deadline_ms = now_ms + max(member.rebalance_timeout_ms, 0)
        member.assignment = new


def _member(group: ConsumerGroup, member_id: str, now_ms: int, session_ms: int) -> ConsumerMember:
    member = group.members.get(member_id)
    if member is None:
        member = group.members[member_id] = ConsumerMember(member_id)
        member.session_deadline_ms = now_ms + session_ms
    return member


def _apply(
    group: ConsumerGroup, records: list[CoordinatorRecord], now_ms: int, config: ConsumerConfig
) -> None:
    for r in records:
        assert isinstance(r.key, ConsumerKey)
        replay(group, r.key, r.value, now_ms, config.session_timeout_ms)


# ----- validation -------------------------------------------------------------------------


def validate(req: HeartbeatIn, config: ConsumerConfig) -> tuple[int, str] | None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid (regexes are supported here)."""
    if not req.group_id:
        return INVALID_REQUEST, "GroupId can't be empty."
    if req.instance_id == "":
        return INVALID_REQUEST, "InstanceId can't be empty."
    if req.rack_id == "":
        return INVALID_REQUEST, "RackId can't be empty."
    if req.member_epoch > 0 or req.member_epoch == LEAVE_EPOCH:
        if not req.member_id:
            return INVALID_REQUEST, "MemberId can't be empty."
    elif req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            return INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
        if req.owned is None or any(req.owned.values()):
            return INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."
        if not req.subscribed_topic_names and req.subscribed_topic_regex is None:
            return (
                INVALID_REQUEST,
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
            )
    elif req.member_epoch == STATIC_LEAVE_EPOCH:
        if not req.member_id:
            return INVALID_REQUEST, "MemberId can't be empty."
        if req.instance_id is None:
            return INVALID_REQUEST, "InstanceId can't be null."
    else:
        return INVALID_REQUEST, "MemberEpoch is invalid."
    if req.server_assignor is not None and req.server_assignor not in config.assignors:
        return (
            UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(config.assignors)}.",
        )
    if req.subscribed_topic_regex is not None:
        try:
            re.compile(req.subscribed_topic_regex)
        except re.error as exc:
            return (
                INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular"
                f" expression: {exc}.",
            )
    return None


# ----- subscriptions and assignment --------------------------------------------------------


def subscribed_names(member: ConsumerMember, topics: Topics) -> set[str]:
    """The topics a member subscribes to that exist: its names, and the topics (internal
    ones excluded) its regex full-matches (Python `re`; Kafka uses RE2/J, same for the usual
    patterns)."""
    found = {n for n in member.subscribed_topic_names if n in topics.by_name}
    if member.subscribed_topic_regex:
        rx = re.compile(member.subscribed_topic_regex)
        found |= {n for n in topics.by_name if not n.startswith("__") and rx.fullmatch(n)}
    return found


def _subscription(
    members: Mapping[str, ConsumerMember], topics: Topics
) -> dict[TopicId, tuple[str, int]]:
    names: set[str] = set()
    for m in members.values():
        names |= subscribed_names(m, topics)
    return {topics.by_name[n][0]: (n, topics.by_name[n][1]) for n in names}


def _partition_record(group_id: str, sub: Mapping[TopicId, tuple[str, int]]) -> CoordinatorRecord:
    topics = [
        {"topic_id": t, "topic_name": n, "num_partitions": c}
        for t, (n, c) in sorted(sub.items(), key=lambda kv: kv[1][0])
    ]
    return _rec(cr.PARTITION_METADATA, group_id, {"topics": topics})


def _target_records(
    group: ConsumerGroup, topics: Topics, config: ConsumerConfig
) -> list[CoordinatorRecord]:
    """Run the assignor for the group epoch: records for the members whose target changed,
    then the target assignment epoch."""
    specs = {
        mid: MemberSpec(
            frozenset(topics.by_name[n][0] for n in subscribed_names(m, topics)),
            group.target.get(mid, {}),
        )
        for mid, m in group.members.items()
    }
    counts = {t: c for t, (_, c) in group.subscription.items()}
    new = ASSIGNORS[group.preferred_assignor(config)](specs, counts)
    out = []
    for mid in sorted(new):
        if dict(group.target.get(mid, {})) != {t: ps for t, ps in new[mid].items() if ps}:
            value = {"topic_partitions": {t: ps for t, ps in new[mid].items() if ps}}
            out.append(_rec(cr.TARGET_MEMBER, group.group_id, value, mid))
    out.append(_rec(cr.TARGET_METADATA, group.group_id, {"assignment_epoch": group.group_epoch}))
    return out


def refresh(
    group: ConsumerGroup, topics: Topics, config: ConsumerConfig, now_ms: int, bump: bool = False
) -> list[CoordinatorRecord]:
    """After a membership change (`bump`) or a heartbeat: a new partition metadata record and
    a group epoch bump if the subscribed topics' partitions changed, then a new target if
    the group epoch is past the target's. The records are applied."""
    records: list[CoordinatorRecord] = []
    sub = _subscription(group.members, topics)
    if sub != group.subscription:
        records.append(_partition_record(group.group_id, sub))
        bump = True
    if bump:
        records.append(epoch_record(group.group_id, group.group_epoch + 1))
    _apply(group, records, now_ms, config)
    if group.members and group.group_epoch > group.target_epoch:
        target = _target_records(group, topics, config)
        _apply(group, target, now_ms, config)
        records += target
    return records


def _reconcile(
    group: ConsumerGroup, member: ConsumerMember, owned: Assignment | None
) -> Reconciled:
    owners = group.owners()

    def owner_epoch(t: TopicId, p: int) -> int:
        mid = owners.get((t, p))
        return -1 if mid is None else group.members[mid].epoch

    target = group.target.get(member.member_id, {})
    return reconcile(member.assignment, group.target_epoch, target, owner_epoch, owned)


# ----- operations -------------------------------------------------------------------------


def heartbeat(
    group: ConsumerGroup,
    req: HeartbeatIn,
    topics: Topics,
    now_ms: int,
    config: ConsumerConfig,
    new_member_id: Callable[[], str],
) -> Outcome:
    bad = validate(req, config)
    if bad is not None:
        return _error(*bad, member_id=req.member_id or None)
    if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        return leave(group, req, topics, now_ms, config)
    records: list[CoordinatorRecord] = []
    if req.member_epoch == 0:
        found = _join(group, req, now_ms, config, new_member_id)
        if isinstance(found, Outcome):
            return found
        member, records = found
    else:
        member_or_error = _known(group, req)
        if isinstance(member_or_error, Outcome):
            return member_or_error
        member = member_or_error
    old_assigned = member.assignment.assigned
    before = member.metadata_value()
    updated = _updated_metadata(member, req)
    if updated != before or req.member_epoch == 0:
        rec = _rec(cr.MEMBER_METADATA, group.group_id, updated, member.member_id)
        _apply(group, [rec], now_ms, config)
        records.append(rec)
    joined = req.member_epoch == 0 and not member.instance_id  # a static takeover keeps its epoch
    bump = joined or any(updated[k] != before[k] for k in SUBSCRIPTION_FIELDS)
    records += refresh(group, topics, config, now_ms, bump=bump)
    try:
        new = _reconcile(group, member, req.owned if req.member_epoch != 0 else {})
    except FencedError as exc:
        return Outcome(records, HeartbeatOut(FENCED_MEMBER_EPOCH, str(exc), member.member_id))
    if new != member.assignment:
        rec = current_record(group.group_id, member.member_id, new)
        _apply(group, [rec], now_ms, config)
        records.append(rec)
    member.session_deadline_ms = now_ms + config.session_timeout_ms
    send = req.member_epoch == 0 or req.owned is not None or new.assigned != old_assigned
    return Outcome(
        records,
        HeartbeatOut(
            NONE,
            None,
            member.member_id,
            member.epoch,
            config.heartbeat_interval_ms,
            dict(member.assignment.assigned) if send else None,
        ),
    )


def _updated_metadata(member: ConsumerMember, req: HeartbeatIn) -> dict[str, Any]:
    """The member's metadata with the request's non-null fields (null: unchanged)."""
    value = member.metadata_value()
    value["client_id"], value["client_host"] = req.client_id, req.client_host
    if req.instance_id is not None:
        value["instance_id"] = req.instance_id
    if req.rack_id is not None:
        value["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1:
        value["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.subscribed_topic_names is not None:
        value["subscribed_topic_names"] = sorted(req.subscribed_topic_names)
    if req.subscribed_topic_regex is not None:
        value["subscribed_topic_regex"] = req.subscribed_topic_regex or None
    if req.server_assignor is not None:
        value["server_assignor"] = req.server_assignor
    return value


def _known(group: ConsumerGroup, req: HeartbeatIn) -> ConsumerMember | Outcome:
    member = group.members.get(req.member_id)
    if member is None:
        return _error(
            UNKNOWN_MEMBER_ID,
            f"Member {req.member_id} is not a member of group {req.group_id}.",
            req.member_id,
        )
    epoch = member.epoch
    if req.member_epoch > epoch:
        return _error(
            FENCED_MEMBER_EPOCH,
            "The consumer group member has a greater member epoch"
            f" ({req.member_epoch}) than the one known by the group coordinator "
            f"({epoch}). The member must abandon all its partitions and rejoin.",
            req.member_id,
        )
    if req.member_epoch < epoch:
        owned = req.owned or {}
        within = all(
            ps <= member.assignment.assigned.get(t, frozenset()) for t, ps in owned.items()
        )
        if req.member_epoch != member.assignment.previous_member_epoch or not within:
            return _error(
                FENCED_MEMBER_EPOCH,
                "The consumer group member has a smaller member "
                f"epoch ({req.member_epoch}) than the one known by the group "
                f"coordinator ({epoch}). The member must abandon all its partitions "
                "and rejoin.",
                req.member_id,
            )
    return member


def _join(
    group: ConsumerGroup,
    req: HeartbeatIn,
    now_ms: int,
    config: ConsumerConfig,
    new_member_id: Callable[[], str],
) -> tuple[ConsumerMember, list[CoordinatorRecord]] | Outcome:
    """Epoch 0: a new member, a member rejoining under its id (its old incarnation is removed,
    so its partitions are freed first), or a static member taking its instance's place."""
    records: list[CoordinatorRecord] = []
    member_id = req.member_id or new_member_id()
    if member_id in group.members:
        records += removal_records(group.group_id, member_id)
    static = None
    if req.instance_id is not None:
        static = next(
            (
                m
                for m in group.members.values()
                if m.instance_id == req.instance_id and m.member_id != member_id
            ),
            None,
        )
        if static is not None and static.epoch != STATIC_LEAVE_EPOCH:
            return _error(
                UNRELEASED_INSTANCE_ID,
                f"Static member {static.member_id} with instance"
                f" id {req.instance_id} is not released yet: it must leave (epoch -2)"
                " or its session expire first.",
                member_id,
            )
    if static is None and member_id not in group.members and len(group.members) >= config.max_size:
        return _error(
            GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {config.max_size} members.",
            member_id,
        )
    carried: Reconciled | None = None
    target: Assignment | None = None
    if static is not None:  # the new member takes the old one's partitions and target
        carried = replace(static.assignment, member_epoch=static.assignment.previous_member_epoch)
        target = group.target.get(static.member_id)
        records += removal_records(group.group_id, static.member_id)
    _apply(group, records, now_ms, config)
    member = group.members[member_id] = ConsumerMember(member_id)
    member.session_deadline_ms = now_ms + config.session_timeout_ms
    if static is not None:  # it starts from the old member's subscription: no new epoch
        for name in (*SUBSCRIPTION_FIELDS, "instance_id", "rack_id", "rebalance_timeout_ms"):
            setattr(member, name, getattr(static, name))
    if carried is not None:
        more = [current_record(group.group_id, member_id, carried)]
        if target is not None:
            more.append(
                _rec(
                    cr.TARGET_MEMBER, group.group_id, {"topic_partitions": dict(target)}, member_id
                )
            )
        _apply(group, more, now_ms, config)
        records += more
    return member, records


def leave(
    group: ConsumerGroup, req: HeartbeatIn, topics: Topics, now_ms: int, config: ConsumerConfig
) -> Outcome:
    member = group.members.get(req.member_id)
    if member is None:
        return _error(
            UNKNOWN_MEMBER_ID,
            f"Member {req.member_id} is not a member of group {req.group_id}.",
            req.member_id,
        )
    if req.member_epoch == STATIC_LEAVE_EPOCH:
        if member.instance_id != req.instance_id:
            return _error(
                UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} has instance id "
                f"{member.instance_id}, not {req.instance_id}.",
                req.member_id,
            )
        kept = replace(
            member.assignment, member_epoch=STATIC_LEAVE_EPOCH, previous_member_epoch=member.epoch
        )
        records = [current_record(group.group_id, member.member_id, kept)]
        _apply(group, records, now_ms, config)
        return Outcome(records, HeartbeatOut(NONE, None, req.member_id, STATIC_LEAVE_EPOCH))
    records = fence(group, member.member_id, topics, now_ms, config)
    return Outcome(records, HeartbeatOut(NONE, None, req.member_id, LEAVE_EPOCH))


def fence(
    group: ConsumerGroup, member_id: str, topics: Topics, now_ms: int, config: ConsumerConfig
) -> list[CoordinatorRecord]:
    """Remove a member (left, expired, or too slow to revoke): its records' tombstones, a group
    epoch bump, and the new target for the others. Its partitions are free at once."""
    records = removal_records(group.group_id, member_id)
    _apply(group, records, now_ms, config)
    return records + refresh(group, topics, config, now_ms, bump=True)


def tick(
    group: ConsumerGroup, topics: Topics, now_ms: int, config: ConsumerConfig
) -> list[CoordinatorRecord]:
    """Fence the members whose session or revocation deadline passed."""
    records: list[CoordinatorRecord] = []
    for m in list(group.members.values()):
        # a member loaded by replay got the default session; the configured one may be shorter
        m.session_deadline_ms = min(m.session_deadline_ms, now_ms + config.session_timeout_ms)
        late = now_ms >= m.session_deadline_ms or (
            m.revoke_deadline_ms
            and now_ms >= m.revoke_deadline_ms
            and m.assignment.state is MemberState.UNREVOKED_PARTITIONS
        )
        if late and m.member_id in group.members:
            records += fence(group, m.member_id, topics, now_ms, config)
    return records


def check_commit(group: ConsumerGroup, member_id: str, member_epoch: int) -> tuple[int, str | None]:
    """Kafka's ConsumerGroup.validateOffsetCommit / validateOffsetFetch: an admin (epoch < 0,
    no member id) only into an empty group (commit) or always (fetch is checked by caller);
    otherwise the member must be known and at its current epoch."""
    if member_epoch < 0 and not member_id and not group.members:
        return NONE, None
    member = group.members.get(member_id)
    if member is None:
        return UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
    if member_epoch != member.epoch:
        return STALE_MEMBER_EPOCH, (
            f"The member epoch {member_epoch} is stale: the member's epoch is {member.epoch}."
        )
    return NONE, None
