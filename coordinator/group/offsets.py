"""A group's committed offsets: commits (plain and transactional), expiry, deletion.

A commit is validated here and becomes records; the offsets enter the group only when
`replay` (group.py) applies the appended records. A transaction's offsets (TxnOffsetCommit,
KIP-98/447) wait in `Group.pending_txn` until its marker: COMMIT makes them the group's, ABORT
drops them. Pure functions on a `Group` (group.py).
"""

from __future__ import annotations

from typing import Any

from coordinator.group.group import NONE, Group, Result, check_member, offset_entry, replay
from coordinator.group.records import CoordinatorRecord, GroupKey, OffsetKey, offset_record
from coordinator.group.states import State
from protocol.errors import (
    IllegalGenerationError,
    NonEmptyGroupError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from protocol.kafka.consumer_protocol import subscribed_topics

Commit = tuple[Any, ...]  # (topic, partition, offset, metadata[, leader epoch])


def _offset_records(
    group_id: str, offsets: list[Commit], commit_ms: int
) -> list[CoordinatorRecord]:
    return [
        offset_record(group_id, c[0], c[1], c[2], c[3], commit_ms, c[4] if len(c) > 4 else -1)
        for c in offsets
    ]


def commit(
    group: Group, generation: int, member_id: str, offsets: list[Commit],
    now_ms: int, commit_ms: int | None = None, instance_id: str | None = None,
) -> Result:  # fmt: skip
    """Validate a commit; the response is one error code for all its partitions. `now_ms` is
    the monotonic clock (the member's session runs on it); `commit_ms` the wall clock written
    in the offset records (default `now_ms`). A static member's `instance_id` must be its own
    (a fenced member's commit gets FENCED_INSTANCE_ID). Kafka's ClassicGroup.validateOffsetCommit:
    generation -1 into a group without members is taken whatever the member id (librdkafka's
    consumer that assign()s sends its own id with it)."""
    if generation < 0 and not group.members:
        pass  # from outside the group (an admin, an assign()ing consumer): any member id
    elif generation < 0 and not member_id and not instance_id:
        return Result(response=UnknownMemberIdError.code)  # the group has members
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


def replay_txn(
    groups: dict[str, Group], producer_id: int, record: CoordinatorRecord, now_ms: int
) -> None:
    """Apply an offset record of a transaction (TxnOffsetCommit): pending until its marker."""
    key, value = record.key, record.value
    if not isinstance(key, OffsetKey) or value is None:
        replay(groups, record, now_ms)  # only offsets are transactional; anything else applies
        return
    group = groups.setdefault(key.group_id, Group(key.group_id))
    group.pending_txn.setdefault(producer_id, {})[(key.topic, key.partition)] = offset_entry(value)


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


CONSUMER = "consumer"  # the protocol type of Kafka consumers' classic groups


def subscribed_or_refused(group: Group | None) -> tuple[int, set[str]]:
    """OffsetDelete's question, as Kafka asks it: the topics the group's members subscribe to
    (whose offsets may not be deleted), read from each Kafka member's consumer-protocol
    metadata, or a native member's topics; a group of another protocol type with members is
    NON_EMPTY_GROUP, since its members' interests cannot be read."""
    if group is None:
        return NONE, set()
    if group.members and group.protocol_type not in (None, CONSUMER):
        return NonEmptyGroupError.code, set()
    topics: set[str] = set()
    for m in group.members.values():
        if group.is_kafka:
            topics |= subscribed_topics(m.metadata_for(group.strategy))
        else:
            topics |= set(m.topics)
    return NONE, topics
