"""AlterPartitionReassignments (admin -> controller): start moving partitions to new replica
lists. Only the controller answers (others: NOT_CONTROLLER). The answer comes once each target
is validated and recorded in /admin/reassign_partitions (INVALID_REPLICA_ASSIGNMENT for an
empty or duplicated list or a broker that is not live, UNKNOWN_TOPIC_OR_PARTITION); the move
itself goes on in the background (coordinator/controller/reassignment.py) and
ListPartitionReassignments
shows it until it is done."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers.controlled_shutdown import active_controller
from broker.security import rules
from broker.session import Session
from coordinator.controller.admin import submit_reassignments
from protocol.api.controller import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    PartitionResult,
)
from protocol.codec import Request
from protocol.errors import NotControllerError, OdradekError, RequestTimedOutError


async def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> AlterPartitionReassignmentsResponse:
    req: AlterPartitionReassignmentsRequest = request.body
    if not rules.allows(
        ctx, session, rules.ALTER, rules.CLUSTER, api="AlterPartitionReassignments"
    ):
        err = rules.refusal(session, rules.ALTER, rules.CLUSTER, "")
        return AlterPartitionReassignmentsResponse(err.code, err.message, [])
    controller = active_controller(ctx)
    if controller is None:
        return AlterPartitionReassignmentsResponse(NotControllerError.code, None, [])
    targets = {(t.topic, t.partition): list(t.replicas) for t in req.partitions}
    try:
        results = await controller.call(
            lambda: submit_reassignments(controller, targets), max(req.timeout_ms, 1) / 1000
        )
    except TimeoutError:
        return AlterPartitionReassignmentsResponse(RequestTimedOutError.code, None, [])
    except OdradekError as exc:
        return AlterPartitionReassignmentsResponse(exc.code, exc.message, [])
    return AlterPartitionReassignmentsResponse(
        0,
        None,
        [PartitionResult(t, p, code, msg) for (t, p), (code, msg) in sorted(results.items())],
    )
