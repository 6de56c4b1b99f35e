"""The life of one internal-topic partition in a coordinator, as one table (seed 000).

Every coordinator on the runtime (consumer groups in `__consumer_offsets`, transactions in
`__transaction_state`) owns exactly the partitions of its topic this broker leads. Seed 000
names the states; Kafka's CoordinatorRuntime calls them INITIAL/CLOSED, LOADING and ACTIVE.
Each row: what the state does and where it may go next. `check_transition` asserts every move.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class PartitionState(Enum):
    DOWN = "Down"
    CATCH_UP = "CatchUp"
    READY = "Ready"


@dataclass(frozen=True, slots=True)
class StateSpec:
    does: str
    next_states: frozenset[PartitionState]


S = PartitionState
TABLE: dict[PartitionState, StateSpec] = {
    S.DOWN: StateSpec(
        "This broker does not lead the partition: requests for its keys get NOT_COORDINATOR.",
        frozenset({S.CATCH_UP}),
    ),
    S.CATCH_UP: StateSpec(
        "Became leader: the partition's records are replayed from the log start to the log end "
        "into a fresh shard; requests get COORDINATOR_LOAD_IN_PROGRESS. A failed load goes Down "
        "(the next leadership check takes the partition again).",
        frozenset({S.DOWN, S.READY}),
    ),
    S.READY: StateSpec(
        "Loaded: operations run against the shard; their records are appended with acks=all "
        "before they are applied and answered. Losing the leadership (LeaderAndIsr, "
        "StopReplica, the ZooKeeper fence) goes Down and drops the shard.",
        frozenset({S.DOWN}),
    ),
}


class IllegalTransitionError(AssertionError):
    """A bug: the runtime tried a move the table does not allow."""


def check_transition(current: PartitionState, target: PartitionState) -> PartitionState:
    if current is not target and target not in TABLE[current].next_states:
        raise IllegalTransitionError(f"{current.value} -> {target.value} is not allowed")
    return target
