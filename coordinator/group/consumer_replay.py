"""A KIP-848 consumer group's records and their replay: one job, the group's change as the
records Kafka writes for it (consumer_records.py gives their bytes), and `replay`, which
applies one record to the group in memory.

Every operation (consumer_heartbeat.py, consumer_target.py) computes the records that express
its change, applies them with `apply_records` (so memory is always what replaying the log
gives), and returns them with the response; the service appends them (acks=all) before
answering. Loading a coordinator is `replay` of the records in log order. Timers are memory
only: a member (re)appearing gets a fresh session, one entering UNREVOKED_PARTITIONS a
revocation deadline.
"""

from __future__ import annotations

from typing import Any

from coordinator.group import consumer_records as cr
from coordinator.group.consumer_group import (
    ClassicMeta,
    ConsumerConfig,
    ConsumerGroup,
    ConsumerMember,
)
from coordinator.group.consumer_records import ConsumerKey
from coordinator.group.consumer_states import MemberState
from coordinator.group.reconcile import Reconciled
from coordinator.group.records import CoordinatorRecord


def make_record(
    kind: int, group_id: str, value: dict[str, Any] | None, member: str = ""
) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerKey(kind, group_id, member), value)


def epoch_record(group_id: str, epoch: int) -> CoordinatorRecord:
    return make_record(cr.GROUP_METADATA, group_id, {"epoch": epoch})


def current_record(group_id: str, member_id: str, a: Reconciled) -> CoordinatorRecord:
    value = {
        "member_epoch": a.member_epoch,
        "previous_member_epoch": a.previous_member_epoch,
        "state": int(a.state),
        "assigned_partitions": dict(a.assigned),
        "partitions_pending_revocation": dict(a.pending_revocation),
    }
    return make_record(cr.CURRENT_ASSIGNMENT, group_id, value, member_id)


def removal_records(group_id: str, member_id: str) -> list[CoordinatorRecord]:
    """Kafka's order: current assignment, target assignment, then the member's metadata."""
    return [
        make_record(cr.CURRENT_ASSIGNMENT, group_id, None, member_id),
        make_record(cr.TARGET_MEMBER, group_id, None, member_id),
        make_record(cr.MEMBER_METADATA, group_id, None, member_id),
    ]


def delete_records(group: ConsumerGroup) -> list[CoordinatorRecord]:
    """Tombstones for the whole (empty) group: target, partition metadata, then the epoch."""
    gid = group.group_id
    out = [r for mid in group.members for r in removal_records(gid, mid)]
    ends = (cr.TARGET_METADATA, cr.PARTITION_METADATA, cr.GROUP_METADATA)
    return out + [make_record(kind, gid, None) for kind in ends]


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
        member.classic = ClassicMeta.of(value.get("classic_member_metadata"))
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


def apply_records(
    group: ConsumerGroup, records: list[CoordinatorRecord], now_ms: int, config: ConsumerConfig
) -> None:
    for r in records:
        assert isinstance(r.key, ConsumerKey)
        replay(group, r.key, r.value, now_ms, config.session_timeout_ms)
