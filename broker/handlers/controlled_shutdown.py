"""ControlledShutdown (broker -> controller): move the asking broker's leaderships away.

Only the controller answers (others: NOT_CONTROLLER; the broker finds the controller from
/controller or Metadata). The work runs as a controller event (coordinator/controller/admin.py
`controlled_shutdown`); the answer lists the partitions the broker still leads (no other ISR
member could take them), so the broker may retry before it stops.
"""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.controller.admin import controlled_shutdown
from coordinator.controller.core import Controller
from protocol.api.controller import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    TopicPartitionRef,
)
from protocol.codec import Request
from protocol.errors import (
    ClusterAuthorizationFailedError,
    NotControllerError,
    OdradekError,
    RequestTimedOutError,
)

CALL_TIMEOUT_S = 30.0


def active_controller(ctx: BrokerContext) -> Controller | None:
    """This broker's Controller while it is the controller, else None."""
    return ctx.elector.active_controller if ctx.elector is not None else None


async def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> ControlledShutdownResponse:
    req: ControlledShutdownRequest = request.body
    if not rules.allows(
        ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api="ControlledShutdown"
    ):
        return ControlledShutdownResponse(ClusterAuthorizationFailedError.code, [])
    controller = active_controller(ctx)
    if controller is None:
        return ControlledShutdownResponse(NotControllerError.code, [])
    try:
        remaining = await controller.call(
            lambda: controlled_shutdown(controller, req.broker_id), CALL_TIMEOUT_S
        )
    except TimeoutError:
        return ControlledShutdownResponse(RequestTimedOutError.code, [])
    except OdradekError as exc:
        return ControlledShutdownResponse(exc.code, [])
    return ControlledShutdownResponse(0, [TopicPartitionRef(t, p) for t, p in remaining])
