"""Classic-protocol members inside a consumer group (KIP-848's online migration): Kafka's
classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup and
classicGroupHeartbeatToConsumerGroup, as pure functions over consumer_group.py's state.

A classic member is a consumer-group member with `classic` metadata (its session timeout and
JoinGroup protocols); the server assignor assigns it like any other, and its classic calls are
translated:
- JoinGroup: a static member (group.instance.id) back with a new member id replaces the
  instance's member, keeping its partitions (Kafka's replaceMember); then its subscription
  (topics, rack, owned partitions) is read from the first
  protocol's ConsumerProtocol Subscription bytes; a new member or a changed subscription bumps
  the group epoch (a new target assignment); the member is reconciled one step with the
  partitions it says it owns, and answered at once with its member epoch as the generation,
  as a follower (no leader's job: the coordinator assigns).
- SyncGroup: its current assignment as ConsumerProtocol Assignment bytes (the version of its
  subscription), unless the group moved past its epoch while it has nothing to revoke
  (REBALANCE_IN_PROGRESS: it rejoins).
- Heartbeat: REBALANCE_IN_PROGRESS while it must rejoin: the group epoch is past its epoch,
  it still has partitions to revoke, or partitions it waits for were released.
- LeaveGroup and session expiry remove it (the service: it may downgrade the group first).
Each returns the records of its change, already applied (consumer_replay.apply_records).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from coordinator.group import consumer_records as cr
from coordinator.group.consumer_group import (
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    NONE,
    UNKNOWN_MEMBER_ID,
    ClassicMeta,
    ConsumerConfig,
    ConsumerGroup,
    ConsumerMember,
    Topics,
)
from coordinator.group.consumer_heartbeat import SUBSCRIPTION_FIELDS, reconcile_member
from coordinator.group.consumer_replay import (
    apply_records,
    current_record,
    make_record,
    removal_records,
)
from coordinator.group.consumer_states import MemberState
from coordinator.group.consumer_target import refresh
from coordinator.group.group import DEFAULT_LIMITS, GroupLimits
from coordinator.group.migration import PROTOCOL_TYPE, by_id
from coordinator.group.reconcile import FencedError
from coordinator.group.records import CoordinatorRecord
from protocol.errors import (
    FencedInstanceIdError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    RebalanceInProgressError,
)
from protocol.kafka.consumer_protocol import decode_subscription, encode_assignment

INCONSISTENT_GROUP_PROTOCOL = InconsistentGroupProtocolError.code
REBALANCE_IN_PROGRESS = RebalanceInProgressError.code
MEMBER_ID_REQUIRED = MemberIdRequiredError.code
FENCED_INSTANCE_ID = FencedInstanceIdError.code
INVALID_SESSION_TIMEOUT = InvalidSessionTimeoutError.code


@dataclass(frozen=True, slots=True)
class ClassicJoin:
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool = False
    instance_id: str | None = None


@dataclass(slots=True)
class Answer:
    """A translated call's answer: its code (and why), the member, its generation (the member
    epoch), the protocol name, a SyncGroup's assignment bytes, and the records written."""

    code: int
    message: str | None = None
    member_id: str = ""
    generation: int = -1
    protocol_name: str | None = None
    assignment: bytes = b""
    records: list[CoordinatorRecord] = field(default_factory=list)
    replaced_consumer: bool = False  # a JoinGroup replaced a consumer-protocol static member


def supports(group: ConsumerGroup, protocol_type: str, names: set[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: type "consumer" and a protocol every
    classic member supports (any, while it has none)."""
    if protocol_type != PROTOCOL_TYPE or not names:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return any(all(n in {p for p, _ in c.protocols} for c in classic) for n in names)


def join(
    group: ConsumerGroup,
    req: ClassicJoin,
    topics: Topics,
    now_ms: int,
    config: ConsumerConfig,
    new_member_id: Callable[[], str],
    limits: GroupLimits = DEFAULT_LIMITS,
) -> Answer:
    """Kafka's classicGroupJoinToConsumerGroup (the session timeout checked against the
    classic group's bounds first, as Kafka's classicGroupJoin does for either kind)."""
    if not limits.min_session_timeout_ms <= req.session_timeout_ms <= limits.max_session_timeout_ms:
        return Answer(INVALID_SESSION_TIMEOUT, None, req.member_id)
    member_id = req.member_id or new_member_id()
    if member_id not in group.members and len(group.members) >= config.max_size:
        why = f"The consumer group has reached its maximum capacity of {config.max_size} members."
        return Answer(GROUP_MAX_SIZE_REACHED, why, member_id)
    if not supports(group, req.protocol_type, {n for n, _ in req.protocols}):
        return Answer(INCONSISTENT_GROUP_PROTOCOL,
                      f"Member {member_id}'s protocols are not supported.", member_id)  # fmt: skip
    sub = decode_subscription(req.protocols[0][1])
    if sub is None:
        return Answer(INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s subscription is "
                      "not a ConsumerProtocol Subscription.", member_id)  # fmt: skip
    if not req.member_id and req.require_known_member_id and req.instance_id is None:
        return Answer(MEMBER_ID_REQUIRED, None, member_id)  # KIP-394: rejoin with this id
    holder = _static_holder(group, req.instance_id)
    if (
        req.instance_id is not None
        and req.member_id
        and (holder is None or holder.member_id != req.member_id)
    ):  # Kafka's validation of a known static member
        if holder is None:
            return Answer(UNKNOWN_MEMBER_ID, f"Member with instance id {req.instance_id} is not "
                          f"a member of group {group.group_id}.", member_id)  # fmt: skip
        return Answer(FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                      f"{req.instance_id} is fenced by {holder.member_id}.", member_id)  # fmt: skip
    records: list[CoordinatorRecord] = []
    replaced = holder if not req.member_id else None
    if replaced is not None:  # a static member back with a new id takes the instance's place
        records += _replace(group, replaced, member_id, now_ms, config)
    member = group.members.get(member_id)
    new = member is None
    if member is None:
        member = group.members[member_id] = ConsumerMember(member_id)
    before = member.metadata_value()
    value = dict(before, client_id=req.client_id, client_host=req.client_host,
                 server_assignor=None, subscribed_topic_names=sorted(sub.topics),
                 classic_member_metadata=ClassicMeta(req.session_timeout_ms,
                                                     req.protocols).value())  # fmt: skip
    if req.instance_id is not None:
        value["instance_id"] = req.instance_id
    if sub.rack_id is not None:
        value["rack_id"] = sub.rack_id
    if req.rebalance_timeout_ms != -1:
        value["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if new or value != before:
        rec = make_record(cr.MEMBER_METADATA, group.group_id, value, member_id)
        apply_records(group, [rec], now_ms, config)
        records.append(rec)
    bump = new or any(value[k] != before[k] for k in SUBSCRIPTION_FIELDS)
    records += refresh(group, topics, config, now_ms, bump=bump)
    try:
        step = reconcile_member(group, member, by_id(list(sub.owned), topics))
    except FencedError as exc:
        return Answer(UNKNOWN_MEMBER_ID, str(exc), member_id, records=records)
    if step != member.assignment:
        rec = current_record(group.group_id, member_id, step)
        apply_records(group, [rec], now_ms, config)
        records.append(rec)
    member.session_deadline_ms = now_ms + req.session_timeout_ms
    replaced_consumer = replaced is not None and replaced.classic is None
    return Answer(NONE, None, member_id, member.epoch, req.protocols[0][0], records=records,
                  replaced_consumer=replaced_consumer)  # fmt: skip


def _static_holder(group: ConsumerGroup, instance_id: str | None) -> ConsumerMember | None:
    if instance_id is None:
        return None
    return next((m for m in group.members.values() if m.instance_id == instance_id), None)


def _replace(
    group: ConsumerGroup, old: ConsumerMember, new_id: str, now_ms: int, config: ConsumerConfig
) -> list[CoordinatorRecord]:
    """Kafka's replaceMember for a static member back with a new member id: the new member
    is the old one (subscription, current and target assignment) at epoch 0, so it keeps its
    partitions without a new group epoch; the old one's records are tombstoned first."""
    gid = group.group_id
    carried = replace(old.assignment, member_epoch=0, previous_member_epoch=0)
    target = group.target.get(old.member_id)
    records = removal_records(gid, old.member_id)
    records.append(make_record(cr.MEMBER_METADATA, gid, old.metadata_value(), new_id))
    records.append(current_record(gid, new_id, carried))
    if target is not None:
        records.append(make_record(cr.TARGET_MEMBER, gid, {"topic_partitions": dict(target)},
                                   new_id))  # fmt: skip
    apply_records(group, records, now_ms, config)
    return records


def classic_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> ConsumerMember | Answer:
    """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
    else:
        member = next((m for m in group.members.values() if m.instance_id == instance_id), None)
        if member is not None and member_id and member.member_id != member_id:
            return Answer(FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                          f"{instance_id} is fenced by {member.member_id}.", member_id)  # fmt: skip
    if member is None:
        return Answer(UNKNOWN_MEMBER_ID,
                      f"Member {member_id} is not a member of group {group.group_id}.")  # fmt: skip
    if member.classic is None:
        return Answer(UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol.")
    return member


def sync(
    group: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    generation: int,
    protocol_type: str | None,
    protocol_name: str | None,
    names: Mapping[Any, str],
    now_ms: int,
) -> Answer:
    """`names`: topic id -> name, for the assignment bytes."""
    member = classic_member(group, member_id, instance_id)
    if isinstance(member, Answer):
        return member
    assert member.classic is not None
    if generation != member.epoch:
        return Answer(ILLEGAL_GENERATION, f"The generation {generation} is not the member's "
                      f"epoch {member.epoch}.", member_id)  # fmt: skip
    first = member.classic.protocols[0] if member.classic.protocols else ("", b"")
    if (protocol_type is not None and protocol_type != PROTOCOL_TYPE) or (
        protocol_name is not None and protocol_name != first[0]
    ):
        return Answer(INCONSISTENT_GROUP_PROTOCOL, "The protocol type or name is not the "
                      "member's.", member_id)  # fmt: skip
    if group.group_epoch > member.epoch and member.assignment.state is not (
        MemberState.UNREVOKED_PARTITIONS
    ):
        return Answer(REBALANCE_IN_PROGRESS, f"A new rebalance is triggered in group "
                      f"{group.group_id} and member {member_id} should rejoin to catch up.",
                      member_id)  # fmt: skip
    member.session_deadline_ms = now_ms + member.classic.session_timeout_ms
    parts = sorted((names[t], p) for t, ps in member.assignment.assigned.items() if t in names
                   for p in ps)  # fmt: skip
    sub = decode_subscription(first[1])
    version = sub.version if sub is not None else 0
    return Answer(NONE, None, member_id, member.epoch, first[0], encode_assignment(parts, version))


def heartbeat(
    group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int, now_ms: int
) -> Answer:
    member = classic_member(group, member_id, instance_id)
    if isinstance(member, Answer):
        return member
    assert member.classic is not None
    if generation != member.epoch:
        return Answer(ILLEGAL_GENERATION, None, member_id)
    member.session_deadline_ms = now_ms + member.classic.session_timeout_ms
    if must_rejoin(group, member):
        return Answer(REBALANCE_IN_PROGRESS, None, member_id, member.epoch)
    return Answer(NONE, None, member_id, member.epoch)


def must_rejoin(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """The group epoch moved past the member's, it has partitions to revoke, or the partitions
    it waits for are free now (Kafka's classicGroupHeartbeatToConsumerGroup)."""
    state = member.assignment.state
    if member.epoch < group.group_epoch or state is MemberState.UNREVOKED_PARTITIONS:
        return True
    return state is MemberState.UNRELEASED_PARTITIONS and not _waiting(group, member)


def _waiting(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Some partition of its target it lacks is still owned by another member."""
    owners = group.owners()
    target = group.target.get(member.member_id, {})
    for t, ps in target.items():
        for p in ps - member.assignment.assigned.get(t, frozenset()):
            if owners.get((t, p), member.member_id) != member.member_id:
                return True
    return False
