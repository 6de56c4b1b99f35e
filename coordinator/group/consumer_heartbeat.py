"""A KIP-848 consumer group's heartbeat (Kafka's GroupMetadataManager.consumerGroupHeartbeat):
one job, the member's side of the protocol: join, heartbeat, leave, and the fencing of members
whose deadlines passed.

A heartbeat: validate (Kafka's messages); -1 leaves (the member's records tombstoned, the group
epoch bumped), -2 leaves a static member's place (epoch -2, partitions kept until its session
expires or its instance rejoins); 0 joins; otherwise the member epoch must be the member's (or
its previous one with owned partitions within its assignment: a lost response), else
FENCED_MEMBER_EPOCH. Then a changed subscription bumps the group epoch, the target is refreshed
(consumer_target.py), and this member is reconciled one step towards its target
(reconcile.py). `tick` fences members whose session (no heartbeat for `session_timeout_ms`, a
classic member's own inside the group) or revocation deadline (`rebalance_timeout_ms` in
UNREVOKED_PARTITIONS) passed. Each returns the
records of its change, already applied (consumer_replay.py), and the response.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from coordinator.group import consumer_records as cr
from coordinator.group.consumer_group import (
    FENCED_MEMBER_EPOCH,
    GROUP_MAX_SIZE_REACHED,
    INVALID_REGULAR_EXPRESSION,
    INVALID_REQUEST,
    LEAVE_EPOCH,
    NONE,
    STATIC_LEAVE_EPOCH,
    UNKNOWN_MEMBER_ID,
    UNRELEASED_INSTANCE_ID,
    UNSUPPORTED_ASSIGNOR,
    Assignment,
    ConsumerConfig,
    ConsumerGroup,
    ConsumerMember,
    HeartbeatIn,
    HeartbeatOut,
    TopicId,
    Topics,
)
from coordinator.group.consumer_replay import (
    apply_records,
    current_record,
    make_record,
    removal_records,
)
from coordinator.group.consumer_states import MemberState
from coordinator.group.consumer_target import refresh
from coordinator.group.reconcile import FencedError, Reconciled, reconcile
from coordinator.group.records import CoordinatorRecord
from protocol.patterns import PatternError, compile_pattern

# a change of these in a heartbeat bumps the group epoch (a new target assignment)
SUBSCRIPTION_FIELDS = ("subscribed_topic_names", "subscribed_topic_regex", "server_assignor")


@dataclass(slots=True)
class Outcome:
    records: list[CoordinatorRecord] = field(default_factory=list)
    response: HeartbeatOut = field(default_factory=lambda: HeartbeatOut(NONE))


def _error(code: int, message: str, member_id: str | None = None) -> Outcome:
    return Outcome([], HeartbeatOut(code, message, member_id))


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
            compile_pattern(req.subscribed_topic_regex)
        except PatternError as exc:
            return (
                INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular"
                f" expression: {exc}.",
            )
    return None


def reconcile_member(
    group: ConsumerGroup, member: ConsumerMember, owned: Assignment | None
) -> Reconciled:
    owners = group.owners()

    def owner_epoch(t: TopicId, p: int) -> int:
        mid = owners.get((t, p))
        return -1 if mid is None else group.members[mid].epoch

    target = group.target.get(member.member_id, {})
    return reconcile(member.assignment, group.target_epoch, target, owner_epoch, owned)


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
        rec = make_record(cr.MEMBER_METADATA, group.group_id, updated, member.member_id)
        apply_records(group, [rec], now_ms, config)
        records.append(rec)
    joined = req.member_epoch == 0 and not member.instance_id  # a static takeover keeps its epoch
    bump = joined or any(updated[k] != before[k] for k in SUBSCRIPTION_FIELDS)
    records += refresh(group, topics, config, now_ms, bump=bump)
    try:
        new = reconcile_member(group, member, req.owned if req.member_epoch != 0 else {})
    except FencedError as exc:
        return Outcome(records, HeartbeatOut(FENCED_MEMBER_EPOCH, str(exc), member.member_id))
    if new != member.assignment:
        rec = current_record(group.group_id, member.member_id, new)
        apply_records(group, [rec], now_ms, config)
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
    value["classic_member_metadata"] = None  # it speaks the consumer protocol now
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
    apply_records(group, records, now_ms, config)
    member = group.members[member_id] = ConsumerMember(member_id)
    member.session_deadline_ms = now_ms + config.session_timeout_ms
    if static is not None:  # it starts from the old member's subscription: no new epoch
        for name in (*SUBSCRIPTION_FIELDS, "instance_id", "rack_id", "rebalance_timeout_ms"):
            setattr(member, name, getattr(static, name))
    if carried is not None:
        more = [current_record(group.group_id, member_id, carried)]
        if target is not None:
            more.append(
                make_record(
                    cr.TARGET_MEMBER, group.group_id, {"topic_partitions": dict(target)}, member_id
                )
            )
        apply_records(group, more, now_ms, config)
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
        apply_records(group, records, now_ms, config)
        return Outcome(records, HeartbeatOut(NONE, None, req.member_id, STATIC_LEAVE_EPOCH))
    records = fence(group, member.member_id, topics, now_ms, config)
    return Outcome(records, HeartbeatOut(NONE, None, req.member_id, LEAVE_EPOCH))


def fence(
    group: ConsumerGroup, member_id: str, topics: Topics, now_ms: int, config: ConsumerConfig
) -> list[CoordinatorRecord]:
    """Remove a member (left, expired, or too slow to revoke): its records' tombstones, a group
    epoch bump, and the new target for the others. Its partitions are free at once."""
    records = removal_records(group.group_id, member_id)
    apply_records(group, records, now_ms, config)
    return records + refresh(group, topics, config, now_ms, bump=True)


def tick(
    group: ConsumerGroup, topics: Topics, now_ms: int, config: ConsumerConfig
) -> list[CoordinatorRecord]:
    """Fence the members whose session or revocation deadline passed."""
    records: list[CoordinatorRecord] = []
    for member_id in late_members(group, now_ms, config):
        if member_id in group.members:
            records += fence(group, member_id, topics, now_ms, config)
    return records


def late_members(group: ConsumerGroup, now_ms: int, config: ConsumerConfig) -> list[str]:
    """The members whose session (a classic member's own) or revocation deadline passed."""
    out = []
    for m in group.members.values():
        # a member loaded by replay got the default session; the configured one may be shorter
        m.session_deadline_ms = min(m.session_deadline_ms, now_ms + m.session_timeout_ms(config))
        late = now_ms >= m.session_deadline_ms or (
            m.revoke_deadline_ms
            and now_ms >= m.revoke_deadline_ms
            and m.assignment.state is MemberState.UNREVOKED_PARTITIONS
        )
        if late:
            out.append(m.member_id)
    return out
