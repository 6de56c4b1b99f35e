"""ListPartitionReassignments (admin -> controller): the reassignments in progress (of the
partitions named; all when None), each with its replica set now (the target plus the replicas
still to be removed, as Kafka's) and the replicas being added (not yet in the ISR) and removed,
sorted by topic and partition. Only the controller answers (others: NOT_CONTROLLER); no
Describe on the cluster is CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.controller_call import active_controller
from broker.security import rules
from broker.session import Session
from coordinator.controller.admin import list_reassignments
from protocol.errors import NotControllerError

API = "ListPartitionReassignments"
TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignments:
    partitions: tuple[TP, ...] | None  # None: every reassignment in progress
    timeout_ms: int = 0


@dataclass(frozen=True, slots=True)
class Ongoing:
    topic: str
    partition: int
    replicas: tuple[int, ...]  # the assignment now (targets first, then the replicas leaving)
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsResult:
    error_code: int
    error_message: str | None
    reassignments: tuple[Ongoing, ...]  # sorted by topic and partition


def run(
    ctx: BrokerContext, session: Session, req: ListPartitionReassignments
) -> ListPartitionReassignmentsResult:
    if not rules.allows(ctx, session, rules.DESCRIBE, rules.CLUSTER, api=API):
        err = rules.refusal(session, rules.DESCRIBE, rules.CLUSTER, "")
        return ListPartitionReassignmentsResult(err.code, err.message, ())
    controller = active_controller(ctx)
    if controller is None:
        return ListPartitionReassignmentsResult(NotControllerError.code, None, ())
    tps = None if req.partitions is None else list(req.partitions)
    return ListPartitionReassignmentsResult(0, None, tuple(
        Ongoing(t, p, tuple(replicas), tuple(adding), tuple(removing))
        for (t, p), replicas, adding, removing in list_reassignments(controller, tps)
    ))  # fmt: skip
