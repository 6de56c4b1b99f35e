"""The controller's issue-4 work: controlled shutdown, preferred leader election (by request and
by the automatic rebalance) and partition reassignment.

Each function runs inside one controller event (coordinator/controller/core.py: `Controller.call`
for requests, AUTO_REBALANCE for the timer; reassignments also move on after STARTUP,
BROKER_CHANGE and ISR_CHANGE), so it sees a consistent context and its writes are not
interleaved with another event's. Decisions are the pure functions of
coordinator/controller/election.py,
preferred.py and reassignment.py; state znode writes go through the controller's StateWriter
(fenced by the controller epoch, conditional on versions), then LeaderAndIsr to the replicas
concerned and UpdateMetadata to every live broker.

- `controlled_shutdown(c, b)`: b is never elected again while it shuts down; each partition it
  leads moves to another live ISR member (epoch + 1, ISR without b); it leaves the ISR of the
  partitions it follows; b gets StopReplica(delete_partitions=false) for all of those, so it
  stops leading and fetching at once. Returns the partitions b still leads (no other ISR member,
  e.g. RF=1): the broker retries, then stops anyway.
- `elect_preferred(c, tps)`: replica 0 leads again where it is alive and in the ISR.
- `submit_reassignments` / `advance_reassignments`: the phases of
coordinator/controller/reassignment.py,
  with the targets kept in /admin/reassign_partitions so a new controller resumes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import OpCreate, OpDelete, OpSet, ZkNoNode
from coordinator.cluster.zk_paths import LeaderIsrState, ZkDataError
from coordinator.controller.context import ControllerOps, TopicPartition
from coordinator.controller.election import (
    controlled_shutdown_move,
    preferred_leader_move,
    preferred_leader_verdict,
)
from coordinator.controller.preferred import partitions_to_rebalance
from coordinator.controller.reassignment import (
    MAX_REASSIGNMENTS,
    REASSIGN_PARTITIONS,
    Phase,
    decode_reassignments,
    elect_in_target,
    encode_reassignments,
    expanded_assignment,
    next_phase,
    removed_replicas,
    shrunk_state,
    validate_target,
)
from coordinator.controller.states import ReplicaState
from protocol.api.controller import StopReplicaRequest, TopicPartitionRef
from protocol.errors import (
    ElectionNotNeededError,
    InvalidReplicaAssignmentError,
    LeaderNotAvailableError,
    PreferredLeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)

log = logging.getLogger(__name__)

Result = tuple[int, str | None]  # (error code, message)
OK: Result = (0, None)
PHASES_PER_ADVANCE = 5  # EXPAND, ELECT, SHRINK, DONE at most, plus one spare


# ----- controlled shutdown -------------------------------------------------------------------


async def controlled_shutdown(c: ControllerOps, broker_id: int) -> list[TopicPartition]:
    """Move `broker_id`'s leaderships away and take it out of every ISR; the partitions it
    still leads afterwards."""
    ctx = c.ctx
    if broker_id not in ctx.live:
        return []
    ctx.shutting_down.add(broker_id)
    eligible = ctx.eligible_ids
    tps = [tp for tp in ctx.partitions_on(broker_id) if _stated(c, tp)]
    decisions = {
        tp: partial(_shutdown, replicas=ctx.replicas(tp), broker=broker_id, eligible=eligible)
        for tp in tps
    }
    changed = await c.writer.update_states(decisions)
    c.send_leader_and_isr(changed)
    c.send_update_metadata(sorted(ctx.live), changed)
    remaining = [tp for tp in tps if ctx.leader_of(tp) == broker_id]
    stop = [TopicPartitionRef(*tp) for tp in tps if tp not in remaining]
    if stop:
        c.channel.send(broker_id, StopReplicaRequest(c.broker_id, c.epoch, False, stop))
    log.info(
        "controlled shutdown of broker %d: %d partitions moved or left, %d still led by it",
        broker_id, len(changed), len(remaining),
    )  # fmt: skip
    return remaining


def _shutdown(
    s: LeaderIsrState, *, replicas: list[int], broker: int, eligible: set[int]
) -> tuple[int, list[int]] | None:
    return controlled_shutdown_move(s.leader, s.isr, replicas, broker, eligible)


def _stated(c: ControllerOps, tp: TopicPartition) -> bool:
    return tp in c.ctx.leadership and tp[0] not in c.ctx.deleting


# ----- preferred leader election -------------------------------------------------------------


async def elect_preferred(
    c: ControllerOps, tps: list[TopicPartition] | None
) -> dict[TopicPartition, Result]:
    """Replica 0 leads again wherever it can; per partition: OK, ELECTION_NOT_NEEDED,
    PREFERRED_LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE."""
    ctx = c.ctx
    eligible = ctx.eligible_ids
    results: dict[TopicPartition, Result] = {}
    decisions: dict[TopicPartition, Callable[[LeaderIsrState], Any]] = {}
    for tp in ctx.partitions() if tps is None else tps:
        if tp[1] not in ctx.assignments.get(tp[0], {}):
            results[tp] = (UnknownTopicOrPartitionError.code, f"{tp[0]}-{tp[1]} does not exist")
            continue
        if not _stated(c, tp):
            results[tp] = (LeaderNotAvailableError.code, "the partition has no state yet")
            continue
        state = ctx.leadership[tp][0]
        verdict = preferred_leader_verdict(state.leader, state.isr, ctx.replicas(tp), eligible)
        if verdict == "not_needed":
            results[tp] = (ElectionNotNeededError.code, None)
        elif verdict == "not_available":
            results[tp] = _not_available(ctx.replicas(tp)[0])
        else:
            decisions[tp] = partial(_preferred, replicas=ctx.replicas(tp), eligible=eligible)
    changed = await c.writer.update_states(decisions)
    for tp in decisions:
        leads = ctx.leader_of(tp) == ctx.replicas(tp)[0]
        results[tp] = OK if leads else _not_available(ctx.replicas(tp)[0])
    c.send_leader_and_isr(changed)
    c.send_update_metadata(sorted(ctx.live), changed)
    if changed:
        log.info("preferred leader election: %d partitions moved", len(changed))
    return results


def _not_available(preferred: int) -> Result:
    return (
        PreferredLeaderNotAvailableError.code,
        f"preferred replica {preferred} is not alive or not in the ISR",
    )


def _preferred(
    s: LeaderIsrState, *, replicas: list[int], eligible: set[int]
) -> tuple[int, list[int]] | None:
    return preferred_leader_move(s.leader, s.isr, replicas, eligible)


async def auto_rebalance(c: ControllerOps) -> None:
    """AUTO_REBALANCE: preferred elections for the brokers above the imbalance threshold (not
    while reassignments run, as Kafka does)."""
    ctx = c.ctx
    if ctx.reassignments:
        return
    stated = [tp for tp in ctx.partitions() if _stated(c, tp)]
    replicas = {tp: ctx.replicas(tp) for tp in stated}
    leaders = {tp: ctx.leadership[tp][0].leader for tp in stated}
    pct = c.config.leader_imbalance_per_broker_percentage
    tps = partitions_to_rebalance(replicas, leaders, pct)
    movable = [tp for tp in tps if ctx.replicas(tp)[0] in ctx.eligible_ids]
    if movable:
        results = await elect_preferred(c, movable)
        moved = sum(1 for r in results.values() if r == OK)
        log.info("leader rebalance: %d of %d imbalanced partitions moved", moved, len(movable))


# ----- reassignment --------------------------------------------------------------------------


async def submit_reassignments(
    c: ControllerOps, targets: dict[TopicPartition, list[int]]
) -> dict[TopicPartition, Result]:
    """Validate and record new targets in /admin/reassign_partitions, then start moving."""
    ctx = c.ctx
    results: dict[TopicPartition, Result] = {}
    accepted: dict[TopicPartition, list[int]] = {}
    for tp, target in targets.items():
        if tp[1] not in ctx.assignments.get(tp[0], {}) or tp[0] in ctx.deleting:
            results[tp] = (UnknownTopicOrPartitionError.code, f"{tp[0]}-{tp[1]} does not exist")
            continue
        why = validate_target(target, ctx.live_ids)
        if why is None and len(ctx.reassignments) + len(accepted) >= MAX_REASSIGNMENTS:
            why = f"at most {MAX_REASSIGNMENTS} reassignments at once"
        if why is not None:
            results[tp] = (InvalidReplicaAssignmentError.code, why)
            continue
        accepted[tp] = list(target)
        results[tp] = OK
    if accepted:
        ctx.reassignments.update(accepted)
        await _write_reassignments(c)
        log.info("reassignments started: %s", {f"{t}-{p}": r for (t, p), r in accepted.items()})
        await advance_reassignments(c, list(accepted))
    return results


def list_reassignments(
    c: ControllerOps, tps: list[TopicPartition] | None
) -> list[tuple[TopicPartition, list[int], list[int], list[int]]]:
    """(tp, assignment now, adding, removing) for each reassignment in progress."""
    out = []
    for tp, target in sorted(c.ctx.reassignments.items()):
        if tps is not None and tp not in tps:
            continue
        assigned = c.ctx.replicas(tp)
        adding = [r for r in target if r not in assigned or r not in _isr(c, tp)]
        out.append((tp, list(assigned), adding, removed_replicas(assigned, target)))
    return out


def _isr(c: ControllerOps, tp: TopicPartition) -> list[int]:
    entry = c.ctx.leadership.get(tp)
    return [] if entry is None else list(entry[0].isr)


async def load_reassignments(c: ControllerOps) -> None:
    """STARTUP: resume the reassignments a previous controller recorded."""
    try:
        data, _ = await c.zk.get(REASSIGN_PARTITIONS)
        targets = decode_reassignments(data)
    except ZkNoNode:
        return
    except ZkDataError as exc:
        log.warning("ignoring %s: %s", REASSIGN_PARTITIONS, exc)
        return
    for tp, target in targets.items():
        if tp[1] in c.ctx.assignments.get(tp[0], {}):
            c.ctx.reassignments[tp] = target
    if c.ctx.reassignments:
        log.info("resuming %d reassignments", len(c.ctx.reassignments))
        await advance_reassignments(c)


async def advance_reassignments(c: ControllerOps, tps: list[TopicPartition] | None = None) -> None:
    """Move each reassignment (all, or `tps`) through as many phases as it can go now."""
    finished: list[TopicPartition] = []
    for tp in list(c.ctx.reassignments) if tps is None else tps:
        if tp not in c.ctx.reassignments or not _stated(c, tp):
            continue
        for _ in range(PHASES_PER_ADVANCE):
            phase = await _advance_one(c, tp)
            if phase is Phase.DONE:
                finished.append(tp)
                break
            if phase is Phase.WAIT:
                break
    if finished:
        for tp in finished:
            c.ctx.reassignments.pop(tp, None)
        log.info("reassignments done: %s", [f"{t}-{p}" for t, p in finished])
        await _write_reassignments(c)


async def _advance_one(c: ControllerOps, tp: TopicPartition) -> Phase:
    ctx = c.ctx
    target = ctx.reassignments[tp]
    assigned = ctx.replicas(tp)
    state = ctx.leadership[tp][0]
    phase = next_phase(assigned, target, state.leader, state.isr, ctx.eligible_ids)
    if phase is Phase.DONE and any(r not in target for r in state.isr):
        phase = Phase.SHRINK  # a failover between the assignment and the ISR write
    if phase is Phase.EXPAND:
        await _set_assignment(c, tp, expanded_assignment(assigned, target))
        await _bump(c, tp, lambda s: (s.leader, list(s.isr)))
    elif phase is Phase.ELECT:
        eligible = ctx.eligible_ids
        await _bump(c, tp, lambda s: elect_in_target(target, s.isr, eligible))
    elif phase is Phase.SHRINK:
        removed = removed_replicas(assigned, target)
        await _set_assignment(c, tp, list(target))
        await _bump(c, tp, lambda s: shrunk_state(s.leader, s.isr, target))
        _delete_replicas(c, tp, removed)
    return phase


async def _bump(
    c: ControllerOps, tp: TopicPartition, decide: Callable[[LeaderIsrState], Any]
) -> None:
    """Write the decision with leader epoch + 1 and tell the replicas and every broker."""
    changed = await c.writer.update_states({tp: decide}, bump=True)
    c.send_leader_and_isr(changed)
    c.send_update_metadata(sorted(c.ctx.live), changed)


async def _set_assignment(c: ControllerOps, tp: TopicPartition, replicas: list[int]) -> None:
    """Write the topic's assignment with `tp` -> `replicas` (fenced, conditional) and move the
    replica states of the brokers that join."""
    ctx = c.ctx
    topic, partition = tp
    path = paths.topic_path(topic)
    data, version = await c.zk.get(path)
    decoded = paths.TopicAssignment.decode(data)
    assignment = decoded.partitions
    assignment[partition] = list(replicas)
    written = paths.TopicAssignment(assignment, decoded.topic_id).encode()  # the id stays
    await c.writer.fenced([OpSet(path, written, version)])
    joining = [r for r in replicas if r not in ctx.replicas(tp)]
    ctx.assignments[topic][partition] = list(replicas)
    for r in joining:
        if ctx.replica_state(tp, r) is ReplicaState.NON_EXISTENT:
            ctx.move_replica(tp, r, ReplicaState.NEW)
        target = ReplicaState.ONLINE if r in ctx.live else ReplicaState.OFFLINE
        ctx.move_replica(tp, r, target)


def _delete_replicas(c: ControllerOps, tp: TopicPartition, removed: list[int]) -> None:
    """Old replicas: Offline -> DeletionStarted, StopReplica(delete) to the live ones; their
    answer completes the move to NonExistent."""
    ctx = c.ctx

    def on_response(broker_id: int, response: Any) -> None:
        if ctx.replica_state(tp, broker_id) is ReplicaState.DELETION_STARTED:
            ctx.move_replica(tp, broker_id, ReplicaState.DELETION_SUCCESSFUL)
            ctx.move_replica(tp, broker_id, ReplicaState.NON_EXISTENT)

    for r in removed:
        if ctx.replica_state(tp, r) is not ReplicaState.NON_EXISTENT:
            ctx.move_replica(tp, r, ReplicaState.OFFLINE)
            ctx.move_replica(tp, r, ReplicaState.DELETION_STARTED)
        if r in ctx.live:
            request = StopReplicaRequest(c.broker_id, c.epoch, True, [TopicPartitionRef(*tp)])
            c.channel.send(r, request, on_response)
        else:
            log.warning("%s-%d: replica %d is down; its data stays on its disk", *tp, r)


async def _write_reassignments(c: ControllerOps) -> None:
    """/admin/reassign_partitions = the targets in progress (deleted when none are)."""
    targets = c.ctx.reassignments
    exists = await c.zk.exists(REASSIGN_PARTITIONS) is not None
    if not targets:
        if exists:
            await c.writer.fenced([OpDelete(REASSIGN_PARTITIONS)])
        return
    data = encode_reassignments(targets)
    op = OpSet(REASSIGN_PARTITIONS, data) if exists else OpCreate(REASSIGN_PARTITIONS, data)
    await c.writer.fenced([op])
