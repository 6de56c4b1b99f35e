"""The transaction state table: every row, against Kafka's validPreviousStates."""

from __future__ import annotations

import pytest

from coordinator.transaction.states import (
    TABLE,
    IllegalTransitionError,
    State,
    check_transition,
    from_kafka_id,
    kafka_id,
    kafka_name,
)

S = State
# Kafka's TransactionState.validPreviousStates, written out as Kafka has it
VALID_PREVIOUS = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {
        S.ONGOING,
        S.PREPARE_EPOCH_FENCE,
        S.EMPTY,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
    },
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}
KAFKA_IDS = {
    S.EMPTY: (0, "Empty"),
    S.ONGOING: (1, "Ongoing"),
    S.PREPARE_COMMIT: (2, "PrepareCommit"),
    S.PREPARE_ABORT: (3, "PrepareAbort"),
    S.COMPLETE_COMMIT: (4, "CompleteCommit"),
    S.COMPLETE_ABORT: (5, "CompleteAbort"),
    S.DEAD: (6, "Dead"),
    S.PREPARE_EPOCH_FENCE: (7, "PrepareEpochFence"),
}


def test_every_state_has_a_row() -> None:
    assert set(TABLE) == set(State)
    assert all(spec.does for spec in TABLE.values())


@pytest.mark.parametrize("state", list(State))
def test_row_ids_and_names(state: State) -> None:
    assert (kafka_id(state), kafka_name(state)) == KAFKA_IDS[state]
    assert from_kafka_id(kafka_id(state)) is state


@pytest.mark.parametrize("target", list(State))
def test_row_is_kafkas_valid_previous_states_inverted(target: State) -> None:
    sources = {s for s in State if target in TABLE[s].next_states}
    assert sources == VALID_PREVIOUS[target]


@pytest.mark.parametrize("current", list(State))
@pytest.mark.parametrize("target", list(State))
def test_check_transition(current: State, target: State) -> None:
    if current in VALID_PREVIOUS[target]:
        assert check_transition(current, target) is target
    else:
        with pytest.raises(IllegalTransitionError):
            check_transition(current, target)


def test_expirable_states_are_kafkas() -> None:
    expirable = {s for s, spec in TABLE.items() if spec.expirable}
    assert expirable == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}


def test_unknown_kafka_id() -> None:
    with pytest.raises(KeyError):
        from_kafka_id(8)
