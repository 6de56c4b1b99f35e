"""ElectLeaders (admin -> controller): preferred leader election for the partitions named (all
when None). Only the controller answers (others: NOT_CONTROLLER). Per partition: 0 (moved),
ELECTION_NOT_NEEDED (the preferred replica leads), PREFERRED_LEADER_NOT_AVAILABLE (it is down
or out of the ISR) or UNKNOWN_TOPIC_OR_PARTITION (coordinator/controller/admin.py)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.handlers.controlled_shutdown import active_controller
from broker.security import rules
from broker.session import Session
from coordinator.controller.admin import elect_preferred
from protocol.api.controller import ElectLeadersRequest, ElectLeadersResponse, PartitionResult
from protocol.codec import Request
from protocol.errors import (
    ClusterAuthorizationFailedError,
    NotControllerError,
    OdradekError,
    RequestTimedOutError,
)


async def handle(ctx: BrokerContext, request: Request, session: Session) -> ElectLeadersResponse:
    req: ElectLeadersRequest = request.body
    if not rules.allows(ctx, session, rules.ALTER, rules.CLUSTER, api="ElectLeaders"):
        return ElectLeadersResponse(ClusterAuthorizationFailedError.code, [])
    controller = active_controller(ctx)
    if controller is None:
        return ElectLeadersResponse(NotControllerError.code, [])
    tps = None if req.partitions is None else [(r.topic, r.partition) for r in req.partitions]
    try:
        results = await controller.call(
            lambda: elect_preferred(controller, tps), max(req.timeout_ms, 1) / 1000
        )
    except TimeoutError:
        return ElectLeadersResponse(RequestTimedOutError.code, [])
    except OdradekError as exc:
        return ElectLeadersResponse(exc.code, [])
    return ElectLeadersResponse(
        0, [PartitionResult(t, p, code, msg) for (t, p), (code, msg) in sorted(results.items())]
    )
