"""ListPartitionReassignments (admin -> controller): the reassignments in progress, each with
its assignment now and the replicas being added (not yet in the ISR) and removed. Only the
controller answers (others: NOT_CONTROLLER)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers.controlled_shutdown import active_controller
from broker.security import rules
from broker.session import Session
from coordinator.controller.admin import list_reassignments
from protocol.api.controller import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingReassignment,
)
from protocol.codec import Request
from protocol.errors import NotControllerError


def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> ListPartitionReassignmentsResponse:
    req: ListPartitionReassignmentsRequest = request.body
    if not rules.allows(
        ctx, session, rules.DESCRIBE, rules.CLUSTER, api="ListPartitionReassignments"
    ):
        err = rules.refusal(session, rules.DESCRIBE, rules.CLUSTER, "")
        return ListPartitionReassignmentsResponse(err.code, err.message, [])
    controller = active_controller(ctx)
    if controller is None:
        return ListPartitionReassignmentsResponse(NotControllerError.code, None, [])
    tps = None if req.partitions is None else [(r.topic, r.partition) for r in req.partitions]
    ongoing = [
        OngoingReassignment(t, p, replicas, adding, removing)
        for (t, p), replicas, adding, removing in list_reassignments(controller, tps)
    ]
    return ListPartitionReassignmentsResponse(0, None, ongoing)
