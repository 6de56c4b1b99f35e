"""The controller's partition and replica state machines, as tables (Kafka's names).

Each state has one line on what it means and the set of states it may go to next. The
controller calls `check_transition` before every change it records, so an impossible move (for
example electing a leader for a partition that is being deleted) fails loudly instead of
silently corrupting the controller's view.

Partition states:      NonExistent -> New -> Online <-> Offline -> NonExistent
Replica states:        NonExistent -> New -> Online <-> Offline -> DeletionStarted
                       -> DeletionSuccessful -> NonExistent   (or DeletionIneligible -> retry)
"""

from __future__ import annotations

from enum import Enum


class PartitionState(Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


class ReplicaState(Enum):
    NON_EXISTENT = "NonExistentReplica"
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"


P = PartitionState
R = ReplicaState

# state: (what it means, where it may go next)
PARTITION_TABLE: dict[PartitionState, tuple[str, frozenset[PartitionState]]] = {
    P.NON_EXISTENT: ("never created, or deleted", frozenset({P.NEW})),
    P.NEW: ("assigned replicas, no leader yet (no state znode)",
            frozenset({P.ONLINE, P.OFFLINE})),
    P.ONLINE: ("has a live leader; re-election (broker return, later preferred leader) "
               "stays Online", frozenset({P.ONLINE, P.OFFLINE})),
    P.OFFLINE: ("its leader died and no ISR member is live (leader -1), or it is being "
                "deleted", frozenset({P.ONLINE, P.OFFLINE, P.NON_EXISTENT})),
}  # fmt: skip

REPLICA_TABLE: dict[ReplicaState, tuple[str, frozenset[ReplicaState]]] = {
    R.NON_EXISTENT: ("not assigned to this broker", frozenset({R.NEW})),
    R.NEW: ("assigned by topic creation or reassignment; may only be a follower",
            frozenset({R.ONLINE, R.OFFLINE})),
    R.ONLINE: ("its broker is live and has been sent LeaderAndIsr for it",
               frozenset({R.ONLINE, R.OFFLINE})),
    R.OFFLINE: ("its broker is dead (or the topic is being deleted)",
                frozenset({R.ONLINE, R.OFFLINE, R.DELETION_STARTED})),
    R.DELETION_STARTED: ("StopReplica(delete_partitions) sent",
                         frozenset({R.DELETION_SUCCESSFUL, R.DELETION_INELIGIBLE})),
    R.DELETION_SUCCESSFUL: ("its broker deleted the data", frozenset({R.NON_EXISTENT})),
    R.DELETION_INELIGIBLE: ("deletion failed (broker dead); retried when it returns",
                            frozenset({R.ONLINE, R.OFFLINE, R.DELETION_STARTED})),
}  # fmt: skip


class IllegalStateTransition(Exception):
    """The controller tried a move its state tables forbid: a bug, never a user error."""


def check_transition(
    current: PartitionState | ReplicaState, target: PartitionState | ReplicaState
) -> None:
    """Raise IllegalStateTransition unless `current -> target` is in its table."""
    table: dict = PARTITION_TABLE if isinstance(current, PartitionState) else REPLICA_TABLE
    if type(current) is not type(target) or target not in table[current][1]:
        raise IllegalStateTransition(f"{current.value} -> {target.value} is not allowed")


def can_transition(
    current: PartitionState | ReplicaState, target: PartitionState | ReplicaState
) -> bool:
    try:
        check_transition(current, target)
    except IllegalStateTransition:
        return False
    return True
