"""What the metrics port shows of the groups this broker coordinates: a pure function of them.

For each group of a loaded offsets partition this broker leads (`GroupCoordinator.all_groups`):
its state as DescribeGroups names it (Kafka's names: Stable, PreparingRebalance, Empty...), its
member count, and for each partition it has a committed offset for, the lag: the partition's
end offset minus the committed offset (never below 0). The end offset is the high watermark
of this broker's replica of the partition (what a consumer could read up to; as the leader,
exact; as a follower, as of its last fetch from the leader, so a little behind). A partition
this broker does not host has no lag sample here (its end offset is not known locally).
broker/metrics.py calls `group_samples` at scrape time on the broker's event loop.

Kafka 4.0's group-coordinator-metrics count groups: `group-count` by protocol (classic,
consumer) and `consumer-group-count` by KIP-848 state (lower case: empty, assigning,
reconciling, stable, dead); `group_counts` gives both, every label present (0 when none). A
consumer group's sample also carries its group epoch and its members' epochs (Kafka has no
metric for those; the broker exports the group epoch and the lowest member epoch, which lags
the group epoch while members reconcile).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from coordinator.group.consumer_service import consumer_of
from coordinator.group.consumer_states import GroupState
from coordinator.group.group import Group
from coordinator.group.states import kafka_name

EndOffset = Callable[[str, int], "int | None"]
"""(topic, partition) -> the end offset known here, None when the partition is not hosted."""


@dataclass(frozen=True, slots=True)
class GroupSample:
    group_id: str
    state: str  # the Kafka name of the group's state
    members: int
    lags: tuple[tuple[str, int, int], ...]  # (topic, partition, lag), sorted
    group_type: str = "classic"  # or "consumer" (KIP-848)
    group_epoch: int = -1  # a consumer group's
    member_epochs: tuple[int, ...] = ()  # a consumer group's members', sorted


@dataclass(frozen=True, slots=True)
class GroupCounts:
    by_protocol: dict[str, int]  # Kafka's group-count{protocol}
    consumer_by_state: dict[str, int]  # Kafka's consumer-group-count{state}


def group_counts(samples: Iterable[GroupSample]) -> GroupCounts:
    by_protocol = {"classic": 0, "consumer": 0}
    by_state = {s.value.lower(): 0 for s in GroupState}
    for s in samples:
        by_protocol[s.group_type] = by_protocol.get(s.group_type, 0) + 1
        if s.group_type == "consumer":
            by_state[s.state.lower()] = by_state.get(s.state.lower(), 0) + 1
    return GroupCounts(by_protocol, by_state)


def group_samples(groups: Iterable[Group], end_offset: EndOffset) -> list[GroupSample]:
    out = []
    for g in groups:
        lags = []
        for (topic, partition), entry in g.offsets.items():
            end = end_offset(topic, partition)
            if end is not None:
                lags.append((topic, partition, max(0, end - entry.offset)))
        consumer = consumer_of(g)  # a KIP-848 consumer group: its own state and members
        state = consumer.state.value if consumer is not None else kafka_name(g.state)
        members = len(consumer.members) if consumer is not None else len(g.members)
        sample = GroupSample(g.group_id, state, members, tuple(sorted(lags)))
        if consumer is not None:
            epochs = tuple(sorted(m.epoch for m in consumer.members.values()))
            sample = GroupSample(g.group_id, state, members, tuple(sorted(lags)), "consumer",
                                 consumer.group_epoch, epochs)  # fmt: skip
        out.append(sample)
    return sorted(out, key=lambda s: s.group_id)
