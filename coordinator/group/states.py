"""The coordinator state machine of seeds 000 and 003, as one table.

Seed 000 names five coordinator states: Down, Catch up, Ready, Prepare for rebalance and
Rebalancing. The first two belong to an offsets partition (every group whose hash falls in it
shares them); the last three to each group. Two more are needed to hold groups without members
(Empty: offsets only, e.g. after every consumer left) and groups being removed (Dead).

Kafka's classic protocol (Kafka clients assign partitions themselves) adds one: Awaiting sync,
Kafka's CompletingRebalance, between the JoinGroup answers and the leader's SyncGroup. Kafka's
classic states are the same machine seen from the group's side:

    Kafka's name            here
    Empty                   Empty
    PreparingRebalance      Prepare for rebalance
    CompletingRebalance     Awaiting sync (Kafka groups) / Rebalancing (native groups)
    Stable                  Ready
    Dead                    Dead

A group is one kind or the other: native (the coordinator assigns, JoinGroup answers with the
partitions) or Kafka's classic (the leader assigns, SyncGroup hands the assignment out).

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
    AWAITING_SYNC = "AwaitingSync"
    EMPTY = "Empty"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class StateSpec:
    does: str
    next_states: frozenset[State]
    kafka_name: str = ""  # what DescribeGroups and ListGroups call it (group states)


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
        "starts a rebalance; a static member (KIP-345) back from a restart with nothing "
        "changed takes its old place and assignment without one.",
        frozenset({S.DOWN, S.PREPARE_FOR_REBALANCE, S.EMPTY, S.DEAD}),
        "Stable",
    ),
    S.PREPARE_FOR_REBALANCE: StateSpec(
        "Heartbeats answer REBALANCE_IN_PROGRESS; waits until every member has sent JoinGroup, "
        "at most the rebalance timeout (members that did not rejoin are removed). Commits of "
        "the current generation are still taken, so revoking consumers can commit. Out of "
        "Empty it also waits group.initial.rebalance.delay.ms (longer while members keep "
        "joining, group.InitialJoin). Then a native group goes to Rebalancing, a Kafka group "
        "to Awaiting sync.",
        frozenset({S.DOWN, S.REBALANCING, S.AWAITING_SYNC, S.EMPTY}),
        "PreparingRebalance",
    ),
    S.REBALANCING: StateSpec(
        "Every member has joined: the generation was bumped, member ids and partitions were "
        "assigned and written to the offsets partition, and JoinGroup answered. Waits for a "
        "heartbeat of the new generation from each member, then goes to Ready.",
        frozenset({S.DOWN, S.READY, S.PREPARE_FOR_REBALANCE, S.EMPTY}),
        "CompletingRebalance",
    ),
    S.AWAITING_SYNC: StateSpec(
        "Kafka groups: every member has joined, the generation was bumped, a protocol all "
        "members support was chosen and the leader got every member's metadata in its JoinGroup "
        "answer. Waits for the leader's SyncGroup with the assignment (at most the rebalance "
        "timeout); other members' SyncGroups wait for it, heartbeats answer NONE, commits "
        "REBALANCE_IN_PROGRESS. The leader's SyncGroup writes the group record and answers "
        "every waiting SyncGroup: Ready. A join, leave or expiry starts over.",
        frozenset({S.DOWN, S.READY, S.PREPARE_FOR_REBALANCE, S.EMPTY}),
        "CompletingRebalance",
    ),
    S.EMPTY: StateSpec(
        "No members; committed offsets are kept. A join starts a rebalance; DeleteGroups (or "
        "offsets reset) is allowed only here.",
        frozenset({S.DOWN, S.PREPARE_FOR_REBALANCE, S.DEAD}),
        "Empty",
    ),
    S.DEAD: StateSpec(
        "Deleted (a tombstone was written): the group is dropped from memory.",
        frozenset(),
        "Dead",
    ),
}

GROUP_STATES = frozenset(
    {S.READY, S.PREPARE_FOR_REBALANCE, S.REBALANCING, S.AWAITING_SYNC, S.EMPTY, S.DEAD}
)
PARTITION_STATES = frozenset({S.DOWN, S.CATCH_UP, S.READY})


class IllegalTransitionError(AssertionError):
    """A bug: the coordinator tried a move the table does not allow."""


def check_transition(current: State, target: State) -> State:
    if current is not target and target not in TABLE[current].next_states:
        raise IllegalTransitionError(f"{current.value} -> {target.value} is not allowed")
    return target


def kafka_name(state: State) -> str:
    """The state as Kafka's DescribeGroups and ListGroups name it."""
    return TABLE[state].kafka_name or state.value
