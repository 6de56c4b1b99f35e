"""The coordinator state machine of seeds 000 and 003, as one table.

Seed 000 names five coordinator states: Down, Catch up, Ready, Prepare for rebalance and
Rebalancing. The first two belong to an offsets partition (every group whose hash falls in it
shares them); the last three to each group. Two more are needed to hold groups without members
(Empty: offsets only, e.g. after every consumer left) and groups being removed (Dead).

Each row: what the state does, which requests it answers how, and where it may go next.
`check_transition` asserts every move the coordinator makes is one of these edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class State(Enum):
    DOWN = "Down"
    CATCH_UP = "CatchUp"
    READY = "Ready"
    PREPARE_FOR_REBALANCE = "PrepareForRebalance"
    REBALANCING = "Rebalancing"
    EMPTY = "Empty"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class StateSpec:
    does: str
    next_states: frozenset[State]


S = State
TABLE: dict[State, StateSpec] = {
    S.DOWN: StateSpec(
        "This broker does not lead the group's offsets partition: every request gets "
        "NOT_COORDINATOR.",
        frozenset({S.CATCH_UP}),
    ),
    S.CATCH_UP: StateSpec(
        "Elected (became leader of the offsets partition), replaying its records to rebuild "
        "groups and offsets: requests get COORDINATOR_LOAD_IN_PROGRESS.",
        frozenset({S.DOWN, S.READY, S.EMPTY}),
    ),
    S.READY: StateSpec(
        "Stable: members heartbeat with the current generation and commit. A join, a leave, a "
        "missed session timeout, a partition-count change or a new topic matching a pattern "
        "starts a rebalance.",
        frozenset({S.DOWN, S.PREPARE_FOR_REBALANCE, S.EMPTY, S.DEAD}),
    ),
    S.PREPARE_FOR_REBALANCE: StateSpec(
        "Heartbeats answer REBALANCE_IN_PROGRESS; waits until every member has sent JoinGroup, "
        "at most the rebalance timeout (members that did not rejoin are removed). Commits of "
        "the current generation are still taken, so revoking consumers can commit.",
        frozenset({S.DOWN, S.REBALANCING, S.EMPTY}),
    ),
    S.REBALANCING: StateSpec(
        "Every member has joined: the generation was bumped, member ids and partitions were "
        "assigned and written to the offsets partition, and JoinGroup answered. Waits for a "
        "heartbeat of the new generation from each member, then goes to Ready.",
        frozenset({S.DOWN, S.READY, S.PREPARE_FOR_REBALANCE, S.EMPTY}),
    ),
    S.EMPTY: StateSpec(
        "No members; committed offsets are kept. A join starts a rebalance; DeleteGroups (or "
        "offsets reset) is allowed only here.",
        frozenset({S.DOWN, S.PREPARE_FOR_REBALANCE, S.DEAD}),
    ),
    S.DEAD: StateSpec(
        "Deleted (a tombstone was written): the group is dropped from memory.",
        frozenset(),
    ),
}

GROUP_STATES = frozenset({S.READY, S.PREPARE_FOR_REBALANCE, S.REBALANCING, S.EMPTY, S.DEAD})
PARTITION_STATES = frozenset({S.DOWN, S.CATCH_UP, S.READY})


class IllegalTransitionError(AssertionError):
    """A bug: the coordinator tried a move the table does not allow."""


def check_transition(current: State, target: State) -> State:
    if current is not target and target not in TABLE[current].next_states:
        raise IllegalTransitionError(f"{current.value} -> {target.value} is not allowed")
    return target
