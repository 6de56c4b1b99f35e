"""A KIP-848 consumer group's target assignment: one job, knowing what the members subscribe to
and, when the group epoch moves past the target's, running the server assignor.

A member's subscription is its topic names and the topics (internal ones excluded) its regex
full-matches with Python's `re` (Kafka uses RE2/J, the same for the usual patterns). `refresh`,
after a membership change or a heartbeat: a change in the partitions of the subscribed topics
writes a new partition metadata record and bumps the group epoch; a group epoch past the target
epoch runs the assignor (the one most members ask for, the first configured by default) and
writes the members whose target changed, then the target epoch. Its records are applied
(consumer_replay.py) and returned.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.group import consumer_records as cr
from coordinator.group.consumer_group import (
    ConsumerConfig,
    ConsumerGroup,
    ConsumerMember,
    TopicId,
    Topics,
)
from coordinator.group.consumer_replay import apply_records, epoch_record, make_record
from coordinator.group.records import CoordinatorRecord
from coordinator.group.server_assignors import ASSIGNORS, MemberSpec
from protocol.patterns import compile_pattern


def subscribed_names(member: ConsumerMember, topics: Topics) -> set[str]:
    """The topics a member subscribes to that exist: its names, and the topics (internal
    ones excluded) its regex full-matches (RE2, as Kafka's RE2/J: protocol/patterns.py)."""
    found = {n for n in member.subscribed_topic_names if n in topics.by_name}
    if member.subscribed_topic_regex:
        rx = compile_pattern(member.subscribed_topic_regex)
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
    return make_record(cr.PARTITION_METADATA, group_id, {"topics": topics})


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
            out.append(make_record(cr.TARGET_MEMBER, group.group_id, value, mid))
    out.append(
        make_record(cr.TARGET_METADATA, group.group_id, {"assignment_epoch": group.group_epoch})
    )
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
    apply_records(group, records, now_ms, config)
    if group.members and group.group_epoch > group.target_epoch:
        target = _target_records(group, topics, config)
        apply_records(group, target, now_ms, config)
        records += target
    return records
