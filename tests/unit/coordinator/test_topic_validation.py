"""Topic name and assignment validation (pure parts of coordinator/cluster/topics.py)."""

from __future__ import annotations

import pytest

from coordinator.cluster.topics import (
    InvalidReplicaAssignmentError,
    manual_assignment,
    validate_assignment,
    validate_topic_name,
)
from protocol.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
)


@pytest.mark.parametrize("name", ["t", "topic01", "a.b-c_D", "x" * 249, "..."])
def test_valid_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "a/b", "a b", "tópico", "a\n"])
def test_invalid_names(name: str) -> None:
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)


def test_assignment_checks() -> None:
    validate_assignment({0: [1, 2], 1: [2, 3]})
    with pytest.raises(InvalidPartitionsError):
        validate_assignment({})
    with pytest.raises(InvalidReplicaAssignmentError):
        validate_assignment({0: [1], 2: [2]})
    with pytest.raises(InvalidReplicaAssignmentError):
        validate_assignment({0: [1, 1]})
    with pytest.raises(InvalidReplicationFactorError):
        validate_assignment({0: [1, 2], 1: [3]})
    with pytest.raises(InvalidReplicationFactorError):
        validate_assignment({0: []})


BROKERS = [1, 2, 3]


def test_a_manual_assignment_is_taken_as_given() -> None:
    given = [(1, [3, 1]), (0, [2, 3]), (2, [1, 2])]
    assert manual_assignment(given, -1, -1, BROKERS) == {0: [2, 3], 1: [3, 1], 2: [1, 2]}
    assert list(manual_assignment(given, -1, -1, BROKERS)) == [0, 1, 2]


@pytest.mark.parametrize(
    ("given", "counts", "error", "message"),
    [
        ([(0, [1])], (-1, 1), InvalidRequestError,
         "A manual partition assignment was specified, but replication factor was not set to -1."),
        ([(0, [1])], (1, -1), InvalidRequestError,
         "A manual partition assignment was specified, but numPartitions was not set to -1."),
        ([(0, [1]), (0, [2])], (-1, -1), InvalidReplicaAssignmentError,
         "Found multiple manual partition assignments for partition 0"),
        ([(0, [])], (-1, -1), InvalidReplicaAssignmentError,
         "The manual partition assignment includes an empty replica list."),
        ([(0, [1, 9])], (-1, -1), InvalidReplicaAssignmentError,
         "The manual partition assignment includes broker 9, but no such broker is registered."),
        ([(0, [2, 1, 2])], (-1, -1), InvalidReplicaAssignmentError,
         "The manual partition assignment includes the broker 2 more than once."),
        ([(0, [1, 2]), (1, [3])], (-1, -1), InvalidReplicaAssignmentError,
         "The manual partition assignment includes a partition with 1 replica(s), but this is "
         "inconsistent with previous partitions, which have 2 replica(s)."),
        ([(0, [1]), (2, [2])], (-1, -1), InvalidReplicaAssignmentError,
         "partitions should be a consecutive 0-based integer sequence"),
        ([(-1, [1])], (-1, -1), InvalidReplicaAssignmentError,
         "partitions should be a consecutive 0-based integer sequence"),
    ],
)  # fmt: skip
def test_a_manual_assignment_is_refused_as_kafka_refuses_it(
    given: list[tuple[int, list[int]]], counts: tuple[int, int], error: type[Exception],
    message: str,
) -> None:  # fmt: skip
    with pytest.raises(error) as exc:
        manual_assignment(given, counts[0], counts[1], BROKERS)
    assert exc.value.message == message  # type: ignore[attr-defined]
