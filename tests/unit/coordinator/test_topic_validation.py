"""Topic name and assignment validation (pure parts of coordinator/cluster/topics.py)."""

from __future__ import annotations

import pytest

from coordinator.cluster.topics import (
    InvalidReplicaAssignmentError,
    validate_assignment,
    validate_topic_name,
)
from protocol.errors import InvalidPartitionsError, InvalidReplicationFactorError, InvalidTopicError


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
