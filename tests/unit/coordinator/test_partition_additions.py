"""Adding partitions to a topic, as pure functions: where the new ones go when nobody says
(coordinator/cluster/placement.py), and how given assignments are checked
(coordinator/cluster/topics.py)."""

from __future__ import annotations

import pytest

from coordinator.cluster.placement import assign_added_partitions, assign_replicas
from coordinator.cluster.topics import new_partitions
from protocol.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)

LIVE = [1, 2, 3]


@pytest.mark.parametrize("brokers", [[1, 2, 3], [2, 5, 7, 9], [4]])
@pytest.mark.parametrize(("before", "after"), [(1, 2), (2, 6), (3, 4), (5, 12)])
def test_added_partitions_continue_the_new_topic_placement(
    brokers: list[int], before: int, after: int
) -> None:
    rf = min(2, len(brokers))
    existing = assign_replicas(brokers, before, rf)
    added = assign_added_partitions(brokers, existing, after)
    assert sorted(added) == list(range(before, after))
    assert {**existing, **added} == assign_replicas(brokers, after, rf)


def test_placement_starts_from_partition_0s_leader() -> None:
    existing = {0: [3, 1], 1: [1, 2]}  # the round starts at 3: p1 on 1, so p2 on 2, p3 on 3
    assert assign_added_partitions([1, 2, 3], existing, 4) == {2: [2, 3], 3: [3, 1]}
    # partition 0's leader is gone: the next broker id up takes its place in the round
    assert assign_added_partitions([1, 2, 4], {0: [3]}, 2) == {1: [1]}


def test_placement_refusals() -> None:
    with pytest.raises(InvalidReplicationFactorError):
        assign_added_partitions([1], {0: [1, 2]}, 2)
    with pytest.raises(InvalidPartitionsError):
        assign_added_partitions(LIVE, {0: [1]}, 1)
    with pytest.raises(InvalidPartitionsError):
        assign_added_partitions(LIVE, {0: [1]}, 10_001)


def test_new_partitions_checks_the_count_as_kafka() -> None:
    existing = {0: [1, 2], 1: [2, 3]}
    with pytest.raises(InvalidPartitionsError, match="topic already has 2 partitions"):
        new_partitions(existing, 2, None, LIVE)
    with pytest.raises(InvalidPartitionsError, match="1 would not be an increase"):
        new_partitions(existing, 1, None, LIVE)
    assert new_partitions(existing, 3, None, LIVE) == {2: [3, 1]}


def test_given_assignments_are_taken_when_valid() -> None:
    existing = {0: [1, 2]}
    assert new_partitions(existing, 3, [[3, 1], [2, 3]], LIVE) == {1: [3, 1], 2: [2, 3]}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ([[1, 2]], "by 2 but 1 assignments provided"),
        ([[1, 2], [3]], "partition 0 has 2, partition 2 has 1"),
        ([[1, 1], [2, 3]], "duplicate brokers"),
        ([[1, 9], [2, 3]], "unknown broker\\(s\\) in replica assignment: 9"),
    ],
)
def test_bad_assignments_are_refused(given: list[list[int]], message: str) -> None:
    with pytest.raises(InvalidReplicaAssignmentError, match=message):
        new_partitions({0: [1, 2]}, 3, given, LIVE)


def test_a_topic_without_partition_0_cannot_grow() -> None:
    with pytest.raises(InvalidReplicaAssignmentError):
        new_partitions({1: [1]}, 3, None, LIVE)
