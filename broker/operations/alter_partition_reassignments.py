"""AlterPartitionReassignments (admin -> controller): start moving partitions to new replica
lists. Only the controller answers. The answer comes once each target is validated and recorded
in /admin/reassign_partitions (coordinator/controller/admin.py: INVALID_REPLICA_ASSIGNMENT for
an empty or duplicated list or a broker that is not live, UNKNOWN_TOPIC_OR_PARTITION); the move
itself goes on in the background (coordinator/controller/reassignment.py) and
ListPartitionReassignments shows it until it is done. Partitions are answered in the order asked.

A null replica list (Kafka's) asks to cancel the partition's reassignment. The controller
cannot cancel one, so such a partition is answered INVALID_REQUEST ("cancelling a reassignment
is not supported") while it has one in progress, and otherwise as Kafka answers a cancel with
nothing to cancel: NO_REASSIGNMENT_IN_PROGRESS, or UNKNOWN_TOPIC_OR_PARTITION for a partition
the cluster does not have.

v1 (KIP-860, Kafka 4.1) may forbid a change of replication factor: a target whose replica
count is not the partition's is then answered INVALID_REPLICATION_FACTOR, and not submitted.

Whole-request errors, with no partition answered: CLUSTER_AUTHORIZATION_FAILED without Alter on
the cluster (checked first, as Kafka), NOT_CONTROLLER on another broker, REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.controller_call import active_controller, call
from broker.security import rules
from broker.session import Session
from coordinator.controller.admin import list_reassignments, submit_reassignments
from coordinator.controller.core import Controller
from protocol.errors import (
    InvalidReplicationFactorError,
    InvalidRequestError,
    NotControllerError,
    OdradekError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
    for_name,
)

API = "AlterPartitionReassignments"
NoReassignmentInProgressError = for_name("NO_REASSIGNMENT_IN_PROGRESS")
CANCEL_NOT_SUPPORTED = "cancelling a reassignment is not supported by odradek"
NO_ANSWER = (-1, "the controller gave no answer for this partition")
TP = tuple[str, int]
Outcome = tuple[int, str | None]


@dataclass(frozen=True, slots=True)
class Target:
    topic: str
    partition: int
    replicas: tuple[int, ...] | None  # None: cancel (Kafka's)


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignments:
    targets: tuple[Target, ...]
    timeout_ms: int
    allow_replication_factor_change: bool = True  # v1+ (KIP-860); before, always


@dataclass(frozen=True, slots=True)
class Reassigned:
    topic: str
    partition: int
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsResult:
    error_code: int
    error_message: str | None
    results: tuple[Reassigned, ...]  # in the order asked; none with a top-level error
    allow_replication_factor_change: bool = True  # v1+: the request's, echoed


async def run(
    ctx: BrokerContext, session: Session, req: AlterPartitionReassignments
) -> AlterPartitionReassignmentsResult:
    if not rules.allows(ctx, session, rules.ALTER, rules.CLUSTER, api=API):
        err = rules.refusal(session, rules.ALTER, rules.CLUSTER, "")
        return AlterPartitionReassignmentsResult(err.code, err.message, ())
    controller = active_controller(ctx)
    if controller is None:
        return AlterPartitionReassignmentsResult(NotControllerError.code, None, ())
    outcomes = _cancels(ctx, controller, [(t.topic, t.partition) for t in req.targets
                                          if t.replicas is None])  # fmt: skip
    targets = {(t.topic, t.partition): list(t.replicas) for t in req.targets
               if t.replicas is not None}  # fmt: skip
    if not req.allow_replication_factor_change:
        outcomes.update(_factor_changes(ctx, targets))
        targets = {tp: r for tp, r in targets.items() if tp not in outcomes}
    if targets:
        try:
            outcomes.update(await call(
                controller, lambda: submit_reassignments(controller, targets), req.timeout_ms
            ))  # fmt: skip
        except TimeoutError:
            return AlterPartitionReassignmentsResult(RequestTimedOutError.code, None, ())
        except OdradekError as exc:
            return AlterPartitionReassignmentsResult(exc.code, exc.message, ())
    asked = dict.fromkeys((t.topic, t.partition) for t in req.targets)
    return AlterPartitionReassignmentsResult(
        0,
        None,
        tuple(Reassigned(t, p, *outcomes.get((t, p), NO_ANSWER)) for t, p in asked),
        req.allow_replication_factor_change,
    )


def _factor_changes(ctx: BrokerContext, targets: dict[TP, list[int]]) -> dict[TP, Outcome]:
    """KIP-860: the targets that would change their partition's replication factor."""
    refused: dict[TP, Outcome] = {}
    for (topic, partition), replicas in targets.items():
        state = ctx.metadata.topics.get(topic, {}).get(partition)
        if state is not None and len(state.replicas) != len(replicas):
            refused[(topic, partition)] = (InvalidReplicationFactorError.code, (
                f"the replication factor would change from {len(state.replicas)} to "
                f"{len(replicas)}, and allow_replication_factor_change is false"))  # fmt: skip
    return refused


def _cancels(ctx: BrokerContext, controller: Controller, cancels: list[TP]) -> dict[TP, Outcome]:
    if not cancels:
        return {}
    ongoing = {tp for tp, *_ in list_reassignments(controller, cancels)}
    outcomes: dict[TP, Outcome] = {}
    for topic, partition in cancels:
        if (topic, partition) in ongoing:
            outcomes[(topic, partition)] = (InvalidRequestError.code, CANCEL_NOT_SUPPORTED)
        elif partition not in ctx.metadata.topics.get(topic, {}):
            outcomes[(topic, partition)] = (UnknownTopicOrPartitionError.code, None)
        else:
            outcomes[(topic, partition)] = (NoReassignmentInProgressError.code, None)
    return outcomes
