"""The consumer state machine of seed 000 (and 003), as one table.

Each row: what the consumer does in the state, and where it may go next. `GroupMembership`
(membership.py) moves only along these edges (`check_transition`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ConsumerState(Enum):
    DOWN = "Down"
    DISCOVER = "StartUpAndDiscoverCoordinator"
    MEMBER = "PartOfAGroup"
    REDISCOVER = "RediscoverCoordinator"
    STOPPED = "StoppedConsumption"


@dataclass(frozen=True, slots=True)
class StateSpec:
    does: str
    next_states: frozenset[ConsumerState]


C = ConsumerState
TABLE: dict[ConsumerState, StateSpec] = {
    C.DOWN: StateSpec(
        "Not working: closed, or not subscribed yet.",
        frozenset({C.DISCOVER}),
    ),
    C.DISCOVER: StateSpec(
        "Start up: FindCoordinator to any broker until one answers without error, then "
        "JoinGroup to the coordinator; the JoinGroup answer gives the generation, the member "
        "id and the partitions to own.",
        frozenset({C.MEMBER, C.DOWN, C.DISCOVER}),
    ),
    C.MEMBER: StateSpec(
        "Part of a group: fetches its partitions and heartbeats every heartbeat_interval_ms. "
        "REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID -> Stopped consumption; "
        "NOT_COORDINATOR, a coordinator not available or a lost connection -> Rediscover.",
        frozenset({C.STOPPED, C.REDISCOVER, C.DOWN}),
    ),
    C.REDISCOVER: StateSpec(
        "Keeps consuming while it sends FindCoordinator until one answers without error, then "
        "goes on heartbeating (to the new coordinator).",
        frozenset({C.MEMBER, C.STOPPED, C.DOWN}),
    ),
    C.STOPPED: StateSpec(
        "Stops fetching, commits (auto commit), calls the revoked callback and rejoins "
        "(JoinGroup), then calls the assigned callback.",
        frozenset({C.DISCOVER, C.MEMBER, C.DOWN}),
    ),
}


class IllegalConsumerTransitionError(AssertionError):
    """A bug: the consumer tried a move the table does not allow."""


def check_transition(current: ConsumerState, target: ConsumerState) -> ConsumerState:
    if current is not target and target not in TABLE[current].next_states:
        raise IllegalConsumerTransitionError(f"{current.value} -> {target.value}")
    return target
