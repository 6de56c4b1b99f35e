"""The states of one transactional id in the transaction coordinator (KIP-98), as one table.

Kafka's TransactionState names eight states; each has a byte id that the `__transaction_state`
log value carries (TransactionStatus, records.py) and a name DescribeTransactions and
ListTransactions show. Kafka lists, for each state, the states it may be entered from
(validPreviousStates); the table below keeps the inverse, where each state may go next, so a
reader sees a state's way out next to what it does.

    id  name               next
    0   Empty              Empty, Ongoing, PrepareAbort, Dead
    1   Ongoing            Ongoing, PrepareCommit, PrepareAbort, PrepareEpochFence
    2   PrepareCommit      CompleteCommit
    3   PrepareAbort       CompleteAbort
    4   CompleteCommit     Empty, Ongoing, PrepareAbort, Dead
    5   CompleteAbort      Empty, Ongoing, PrepareAbort, Dead
    6   Dead               -
    7   PrepareEpochFence  PrepareAbort

Empty and Complete* -> PrepareAbort is transaction version 2's EndTxn(abort) with nothing open
(KIP-890 part 2): an empty transaction, ended at once, that bumps the epoch (end_v2.py).

Moving to the same state is an edge only where the table says so (Empty -> Empty is an epoch
bump, Ongoing -> Ongoing adds partitions); PrepareCommit -> PrepareCommit is not a move at all.
`check_transition` raises IllegalTransitionError (a bug, not a client error) for anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class State(Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"


@dataclass(frozen=True, slots=True)
class StateSpec:
    kafka_id: int  # TransactionStatus in the log value
    does: str
    next_states: frozenset[State]
    expirable: bool  # the transactional id may be removed after transactional.id.expiration.ms


S = State
TABLE: dict[State, StateSpec] = {
    S.EMPTY: StateSpec(
        0,
        "A producer id and epoch are assigned and no transaction is open. AddPartitionsToTxn "
        "or AddOffsetsToTxn opens one (Ongoing); InitProducerId bumps the epoch (Empty).",
        frozenset({S.EMPTY, S.ONGOING, S.PREPARE_ABORT, S.DEAD}),
        True,
    ),
    S.ONGOING: StateSpec(
        1,
        "A transaction is open: the partitions it wrote to are recorded. More partitions may "
        "be added; EndTxn prepares the commit or abort; the timeout or a new producer's "
        "InitProducerId fences the epoch and aborts it.",
        frozenset({S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE}),
        False,
    ),
    S.PREPARE_COMMIT: StateSpec(
        2,
        "The commit is decided and durable: COMMIT markers are being written to every "
        "partition of the transaction. Requests other than an EndTxn(commit) retry get "
        "CONCURRENT_TRANSACTIONS. When every marker is written: CompleteCommit.",
        frozenset({S.COMPLETE_COMMIT}),
        False,
    ),
    S.PREPARE_ABORT: StateSpec(
        3,
        "The abort is decided and durable: ABORT markers are being written to every partition "
        "of the transaction. When every marker is written: CompleteAbort.",
        frozenset({S.COMPLETE_ABORT}),
        False,
    ),
    S.COMPLETE_COMMIT: StateSpec(
        4,
        "The last transaction committed and every marker is written: like Empty, and an "
        "EndTxn(commit) retry still answers NONE.",
        frozenset({S.EMPTY, S.ONGOING, S.PREPARE_ABORT, S.DEAD}),
        True,
    ),
    S.COMPLETE_ABORT: StateSpec(
        5,
        "The last transaction aborted and every marker is written: like Empty, and an "
        "EndTxn(abort) retry still answers NONE.",
        frozenset({S.EMPTY, S.ONGOING, S.PREPARE_ABORT, S.DEAD}),
        True,
    ),
    S.DEAD: StateSpec(
        6,
        "The transactional id expired: its tombstone is being written, then it is forgotten.",
        frozenset(),
        False,
    ),
    S.PREPARE_EPOCH_FENCE: StateSpec(
        7,
        "Never written on its own: the epoch of an Ongoing transaction is being bumped to fence "
        "its producer (a new producer's InitProducerId, or the transaction timed out), and the "
        "transaction is aborted with the bumped epoch (PrepareAbort).",
        frozenset({S.PREPARE_ABORT}),
        False,
    ),
}

BY_KAFKA_ID: dict[int, State] = {spec.kafka_id: state for state, spec in TABLE.items()}
BY_KAFKA_NAME: dict[str, State] = {state.value: state for state in State}


class IllegalTransitionError(AssertionError):
    """A bug: the coordinator tried a move the table does not allow."""


def check_transition(current: State, target: State) -> State:
    if target not in TABLE[current].next_states:
        raise IllegalTransitionError(f"{current.value} -> {target.value} is not allowed")
    return target


def kafka_name(state: State) -> str:
    """The state as DescribeTransactions and ListTransactions name it ("Ongoing", ...)."""
    return state.value


def kafka_id(state: State) -> int:
    return TABLE[state].kafka_id


def from_kafka_id(state_id: int) -> State:
    """The state for a TransactionStatus byte; KeyError for an unknown one."""
    return BY_KAFKA_ID[state_id]
