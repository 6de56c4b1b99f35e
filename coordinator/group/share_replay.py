"""A share group's records and their replay: what a change of a share group (share_group.py)
writes to `__consumer_offsets` (share_records.py gives the bytes), and `replay`, which applies
one record to the shard's share groups when a coordinator loads its partition.

The pure operations of share_group.py change a group in place; the service takes a `snapshot`
of the group's durable state before and `changes` turns the difference into Kafka's records,
in Kafka's order: a member's metadata (10), the group epoch (11), the changed members' target
assignments (13) and the assignment epoch (12), the changed current assignments (14), then the
topics with share state (15); a member gone is its current assignment's, target's and
metadata's tombstones first. Replaying those records into an empty group gives the group back
(`replay`; tests/unit/coordinator/group/test_share_replay.py checks it over sequences of
heartbeats). Session deadlines are memory only: a replayed member's session starts at the next
`share_group.expire`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from coordinator.group import share_records as sr
from coordinator.group.records import CoordinatorRecord
from coordinator.group.share_assignor import Assignment
from coordinator.group.share_group import ShareGroup, ShareMember
from coordinator.group.share_records import ShareGroupKey

MemberMeta = tuple[str | None, str, str, frozenset[str]]  # rack, client id, host, topics
Current = tuple[int, int, tuple[tuple[uuid.UUID, frozenset[int]], ...]]  # epoch, previous, parts


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What of a share group is written: compared before and after an operation."""

    exists: bool
    group_epoch: int
    metadata_hash: int
    assignment_epoch: int
    state_topics: tuple[tuple[str, uuid.UUID, int], ...]
    metas: dict[str, MemberMeta]
    targets: dict[str, tuple[tuple[uuid.UUID, frozenset[int]], ...]]
    currents: dict[str, Current]


def _parts(a: Assignment) -> tuple[tuple[uuid.UUID, frozenset[int]], ...]:
    return tuple(sorted((t, ps) for t, ps in a.items() if ps))


def snapshot(group: ShareGroup | None) -> Snapshot:
    if group is None:
        return Snapshot(False, 0, 0, 0, (), {}, {}, {})
    ms = group.members.values()
    return Snapshot(
        True, group.group_epoch, group.metadata_hash, group.assignment_epoch,
        tuple(sorted((n, i, c) for n, (i, c) in group.state_topics.items())),
        {m.member_id: (m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names)
         for m in ms},
        {mid: _parts(a) for mid, a in group.target.items()},
        {m.member_id: (m.epoch, m.previous_epoch, _parts(m.assignment)) for m in ms},
    )  # fmt: skip


def _record(
    kind: int, gid: str, value: dict[str, Any] | None, member: str = ""
) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupKey(kind, gid, member), value)


def changes(gid: str, before: Snapshot, after: Snapshot) -> list[CoordinatorRecord]:
    """The records that take a group's log from `before` to `after` (a group deleted: see
    `delete_records`)."""
    out = []
    for mid in before.metas.keys() - after.metas.keys():  # gone: Kafka's order of tombstones
        out += [_record(sr.CURRENT_ASSIGNMENT, gid, None, mid),
                _record(sr.TARGET_MEMBER, gid, None, mid),
                _record(sr.MEMBER_METADATA, gid, None, mid)]  # fmt: skip
    for mid, meta in sorted(after.metas.items()):
        if before.metas.get(mid) != meta:
            rack, client, host, topics = meta
            out.append(_record(sr.MEMBER_METADATA, gid, {
                "rack_id": rack, "client_id": client, "client_host": host,
                "subscribed_topic_names": sorted(topics)}, mid))  # fmt: skip
    if (before.group_epoch, before.metadata_hash) != (after.group_epoch, after.metadata_hash) or (
        not before.exists
    ):
        value = {"epoch": after.group_epoch, "metadata_hash": after.metadata_hash}
        out.append(_record(sr.GROUP_METADATA, gid, value))
    for mid, parts in sorted(after.targets.items()):
        if before.targets.get(mid) != parts and mid in after.metas:
            out.append(_record(sr.TARGET_MEMBER, gid, {"topic_partitions": dict(parts)}, mid))
    if before.assignment_epoch != after.assignment_epoch:
        value = {"assignment_epoch": after.assignment_epoch}
        out.append(_record(sr.TARGET_METADATA, gid, value))
    for mid, (epoch, previous, parts) in sorted(after.currents.items()):
        if before.currents.get(mid) != (epoch, previous, parts):
            current: dict[str, Any] = {
                "member_epoch": epoch,
                "previous_member_epoch": previous,
                "state": sr.MEMBER_STATE_STABLE,
                "assigned_partitions": dict(parts),
            }
            out.append(_record(sr.CURRENT_ASSIGNMENT, gid, current, mid))
    if before.state_topics != after.state_topics:
        out.append(state_topics_record(gid, after.state_topics))
    return out


def state_topics_record(
    gid: str, topics: tuple[tuple[str, uuid.UUID, int], ...]
) -> CoordinatorRecord:
    initialized = {name: (tid, list(range(count))) for name, tid, count in topics}
    value = {"initializing_topics": {}, "initialized_topics": initialized, "deleting_topics": {}}
    return _record(sr.STATE_PARTITION_METADATA, gid, value)


def delete_records(group: ShareGroup) -> list[CoordinatorRecord]:
    """Tombstones of the whole group: its members', the target's epoch, the topics with state,
    then the group epoch (the record whose tombstone removes the group when replayed)."""
    gid = group.group_id
    out = []
    for mid in sorted(group.members):
        out += [_record(sr.CURRENT_ASSIGNMENT, gid, None, mid),
                _record(sr.TARGET_MEMBER, gid, None, mid),
                _record(sr.MEMBER_METADATA, gid, None, mid)]  # fmt: skip
    ends = (sr.TARGET_METADATA, sr.STATE_PARTITION_METADATA, sr.GROUP_METADATA)
    return out + [_record(kind, gid, None) for kind in ends]


def replay(groups: dict[str, ShareGroup], key: ShareGroupKey, value: dict[str, Any] | None) -> None:
    """Apply one record to the shard's share groups. A tombstone of a group not there is a no-op;
    the group epoch's tombstone removes the group."""
    group = groups.get(key.group_id)
    if value is None:
        if group is not None:
            _tombstone(groups, group, key)
        return
    if group is None:
        group = groups[key.group_id] = ShareGroup(key.group_id)
    kind = key.record_type
    if kind == sr.GROUP_METADATA:
        group.group_epoch, group.metadata_hash = int(value["epoch"]), int(value["metadata_hash"])
    elif kind == sr.TARGET_METADATA:
        group.assignment_epoch = int(value["assignment_epoch"])
    elif kind == sr.TARGET_MEMBER:
        group.target[key.member_id] = dict(value["topic_partitions"])
    elif kind == sr.STATE_PARTITION_METADATA:
        infos = {**value["initializing_topics"], **value["initialized_topics"]}
        group.state_topics = {name: (tid, max(ps, default=-1) + 1)
                              for name, (tid, ps) in infos.items()}  # fmt: skip
    elif kind in (sr.MEMBER_METADATA, sr.CURRENT_ASSIGNMENT):
        member = group.members.get(key.member_id)
        if member is None:
            member = group.members[key.member_id] = ShareMember(key.member_id)
        if kind == sr.MEMBER_METADATA:
            member.rack_id, member.client_id = value["rack_id"], value["client_id"]
            member.client_host = value["client_host"]
            member.subscribed_topic_names = frozenset(value["subscribed_topic_names"])
        else:
            member.epoch = int(value["member_epoch"])
            member.previous_epoch = int(value["previous_member_epoch"])
            member.assignment = dict(value["assigned_partitions"])
    # type 9 (Kafka 4.0's subscribed topics): their hash is in type 11 since 4.1; nothing to do


def _tombstone(groups: dict[str, ShareGroup], group: ShareGroup, key: ShareGroupKey) -> None:
    kind = key.record_type
    if kind == sr.GROUP_METADATA:
        del groups[key.group_id]
    elif kind == sr.TARGET_METADATA:
        group.assignment_epoch = 0
    elif kind == sr.TARGET_MEMBER:
        group.target.pop(key.member_id, None)
    elif kind == sr.STATE_PARTITION_METADATA:
        group.state_topics = {}
    elif kind == sr.MEMBER_METADATA:
        group.members.pop(key.member_id, None)
    elif kind == sr.CURRENT_ASSIGNMENT and key.member_id in group.members:
        member = group.members[key.member_id]
        member.epoch, member.previous_epoch, member.assignment = 0, -1, {}
