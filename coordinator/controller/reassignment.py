"""Partition reassignment (Kafka's ZooKeeper-era flow): the znode and the phase decisions, pure.

The targets live in ZooKeeper, so a new controller resumes what the old one started:

    /admin/reassign_partitions
        {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3,4]}, ...]}

For a partition assigned replicas A (original) with target T, the controller moves through
phases, each decided by `next_phase(assigned, target, leader, isr, eligible)` from what
ZooKeeper shows now, so any step may be repeated after a failover:

1. EXPAND: the assignment becomes RS = T + (A - T) (targets first, old replicas kept); the
   leader epoch is bumped and LeaderAndIsr goes to every replica in RS, so new replicas
   start fetching from the leader.
2. WAIT: until every target replica is in the ISR (the leader adds them as they catch up; the
   controller hears of it through /isr_change_notification, or a broker's return).
3. ELECT: the leader is not in T (or not alive): the first target replica in the ISR that is
   alive leads (epoch + 1).
4. SHRINK: the old replicas leave the ISR and the assignment becomes T (epoch + 1); they get
   StopReplica(delete_partitions) and the partition leaves the znode above.
5. DONE: the assignment is T.

No data is lost: the old replicas are dropped only once every new one is in the ISR, which
means it holds everything up to the high watermark.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from enum import Enum

from coordinator.cluster.zk_paths import ZkDataError
from coordinator.controller.election import choose_leader

REASSIGN_PARTITIONS = "/admin/reassign_partitions"
MAX_REASSIGNMENTS = 10_000  # partitions being moved at once

TopicPartition = tuple[str, int]


class Phase(Enum):
    EXPAND = "expand"
    WAIT = "wait"
    ELECT = "elect"
    SHRINK = "shrink"
    DONE = "done"


def encode_reassignments(targets: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    parts = [
        {"topic": t, "partition": p, "replicas": list(rs)} for (t, p), rs in sorted(targets.items())
    ]
    return json.dumps({"version": 1, "partitions": parts}, separators=(",", ":")).encode()


def decode_reassignments(data: bytes) -> dict[TopicPartition, list[int]]:
    try:
        obj = json.loads(data) if data else {"partitions": []}
        out: dict[TopicPartition, list[int]] = {}
        for e in obj["partitions"]:
            replicas = [int(r) for r in e["replicas"]]
            out[(str(e["topic"]), int(e["partition"]))] = replicas
        return out
    except (ValueError, KeyError, TypeError) as exc:
        raise ZkDataError(f"bad {REASSIGN_PARTITIONS}: {exc}") from None


def validate_target(target: Sequence[int], live: Collection[int]) -> str | None:
    """Why `target` cannot be a partition's replica list, or None when it can."""
    if not target:
        return "the replica list is empty"
    if len(set(target)) != len(target):
        return f"replica list {list(target)} names a broker twice"
    missing = sorted(r for r in target if r not in live)
    if missing:
        return f"brokers {missing} are not live"
    return None


def expanded_assignment(assigned: Sequence[int], target: Sequence[int]) -> list[int]:
    """RS = the target replicas first, then the old ones not in the target."""
    return [*target, *(r for r in assigned if r not in target)]


def next_phase(
    assigned: Sequence[int],
    target: Sequence[int],
    leader: int,
    isr: Sequence[int],
    eligible: Collection[int],
) -> Phase:
    """Where a reassignment stands, from the partition's assignment and state now."""
    if list(assigned) == list(target):
        return Phase.DONE
    if not set(target) <= set(assigned):
        return Phase.EXPAND
    if not set(target) <= set(isr):
        return Phase.WAIT
    if leader not in target or leader not in eligible:
        if choose_leader(target, isr, eligible) is None:
            return Phase.WAIT
        return Phase.ELECT
    return Phase.SHRINK


def elect_in_target(
    target: Sequence[int], isr: Sequence[int], eligible: Collection[int]
) -> tuple[int, list[int]] | None:
    """ELECT: the first target replica alive and in the ISR leads; the ISR is kept."""
    leader = choose_leader(target, isr, eligible)
    return None if leader is None else (leader, list(isr))


def shrunk_state(leader: int, isr: Sequence[int], target: Sequence[int]) -> tuple[int, list[int]]:
    """SHRINK: the old replicas leave the ISR."""
    return leader, [r for r in isr if r in target]


def removed_replicas(assigned: Sequence[int], target: Sequence[int]) -> list[int]:
    return [r for r in assigned if r not in target]
