"""The states of a KIP-848 consumer group and of its members, as tables (Kafka's ConsumerGroup
and MemberState).

A consumer group's state is not moved by hand: it follows from its epochs and members every
time it changes (Kafka's ConsumerGroup.updateState), `group_state` below. The table says what
each state means and which states may come next, and `check_transition` asserts it.

A member's state is the reconciliation step it is at (reconcile.py, Kafka's
CurrentAssignmentBuilder); its byte value is the `State` field of the
ConsumerGroupCurrentMemberAssignment record, so the numbers are Kafka's.
"""

from __future__ import annotations

from enum import Enum, IntEnum


class GroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


# state -> (what it means, the states it may go to next)
GROUP_STATES: dict[GroupState, tuple[str, frozenset[GroupState]]] = {
    GroupState.EMPTY: (
        "no members; its offsets live on until deleted or expired; a first heartbeat (epoch 0)"
        " makes it Assigning (or straight to Stable/Reconciling: it is assigned at once)",
        frozenset(
            {GroupState.ASSIGNING, GroupState.RECONCILING, GroupState.STABLE, GroupState.DEAD}
        ),
    ),
    GroupState.ASSIGNING: (
        "the group epoch is past the target assignment epoch: the next heartbeat runs the"
        " server assignor and writes a new target assignment",
        frozenset({GroupState.RECONCILING, GroupState.STABLE, GroupState.EMPTY}),
    ),
    GroupState.RECONCILING: (
        "the target is set; some member is not yet at the target epoch or still has partitions"
        " to revoke or to wait for (their heartbeats move them on)",
        frozenset({GroupState.ASSIGNING, GroupState.STABLE, GroupState.EMPTY}),
    ),
    GroupState.STABLE: (
        "every member is Stable at the target assignment epoch: each owns its target",
        frozenset({GroupState.ASSIGNING, GroupState.RECONCILING, GroupState.EMPTY}),
    ),
    GroupState.DEAD: (
        "deleted (its records tombstoned), or taken over by a classic member while empty",
        frozenset(),
    ),
}


class MemberState(IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


# state -> (what it means, the states it may go to next)
MEMBER_STATES: dict[MemberState, tuple[str, frozenset[MemberState]]] = {
    MemberState.STABLE: (
        "owns its assignment at its epoch; a newer target starts the next reconciliation",
        frozenset(MemberState) - {MemberState.UNKNOWN},
    ),
    MemberState.UNREVOKED_PARTITIONS: (
        "kept at its epoch until its heartbeat's owned partitions no longer hold the ones to"
        " revoke; fenced if the rebalance timeout passes first",
        frozenset(MemberState) - {MemberState.UNKNOWN},
    ),
    MemberState.UNRELEASED_PARTITIONS: (
        "at the target epoch, but some target partitions are still owned (assigned or being"
        " revoked) by another member; it gets them as they are freed",
        frozenset(MemberState) - {MemberState.UNKNOWN},
    ),
    MemberState.UNKNOWN: (
        "a value a newer coordinator wrote; the member is fenced unless it owns nothing",
        frozenset(MemberState) - {MemberState.UNKNOWN},
    ),
}


def group_state(members: int, group_epoch: int, target_epoch: int, all_stable: bool) -> GroupState:
    """Kafka's ConsumerGroup.updateState: `all_stable` = every member is STABLE at
    `target_epoch`."""
    if members == 0:
        return GroupState.EMPTY
    if group_epoch > target_epoch:
        return GroupState.ASSIGNING
    return GroupState.STABLE if all_stable else GroupState.RECONCILING


def check_transition(old: GroupState, new: GroupState) -> GroupState:
    if old is not new and new not in GROUP_STATES[old][1]:
        raise AssertionError(f"consumer group may not go from {old.value} to {new.value}")
    return new


def check_member_transition(old: MemberState, new: MemberState) -> MemberState:
    if old is not new and new not in MEMBER_STATES[old][1]:
        raise AssertionError(f"member may not go from {old.name} to {new.name}")
    return new
