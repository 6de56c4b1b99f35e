"""The partition and replica state tables."""

from __future__ import annotations

import itertools

import pytest

from coordinator.controller.states import (
    PARTITION_TABLE,
    REPLICA_TABLE,
    IllegalStateTransition,
    PartitionState,
    ReplicaState,
    can_transition,
    check_transition,
)

P = PartitionState
R = ReplicaState


def test_every_state_has_a_row_with_a_description() -> None:
    assert set(PARTITION_TABLE) == set(PartitionState)
    assert set(REPLICA_TABLE) == set(ReplicaState)
    for description, _ in [*PARTITION_TABLE.values(), *REPLICA_TABLE.values()]:
        assert description


def test_partition_lifecycle() -> None:
    path = [P.NON_EXISTENT, P.NEW, P.ONLINE, P.OFFLINE, P.ONLINE, P.OFFLINE, P.NON_EXISTENT]
    for a, b in itertools.pairwise(path):
        check_transition(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (P.NON_EXISTENT, P.ONLINE),  # a partition needs its replicas assigned first
        (P.ONLINE, P.NON_EXISTENT),  # deletion goes through Offline
        (P.NEW, P.NON_EXISTENT),
        (P.ONLINE, P.NEW),
    ],
)
def test_illegal_partition_moves(a: PartitionState, b: PartitionState) -> None:
    with pytest.raises(IllegalStateTransition):
        check_transition(a, b)


def test_replica_deletion_path() -> None:
    path = [
        R.NON_EXISTENT, R.NEW, R.ONLINE, R.OFFLINE,
        R.DELETION_STARTED, R.DELETION_SUCCESSFUL, R.NON_EXISTENT,
    ]  # fmt: skip
    for a, b in itertools.pairwise(path):
        check_transition(a, b)
    assert can_transition(R.DELETION_STARTED, R.DELETION_INELIGIBLE)
    assert can_transition(R.DELETION_INELIGIBLE, R.DELETION_STARTED)


def test_illegal_replica_moves() -> None:
    assert not can_transition(R.ONLINE, R.DELETION_STARTED)
    assert not can_transition(R.NON_EXISTENT, R.ONLINE)
    assert not can_transition(R.DELETION_SUCCESSFUL, R.ONLINE)


def test_kinds_do_not_mix() -> None:
    assert not can_transition(P.NEW, R.ONLINE)
