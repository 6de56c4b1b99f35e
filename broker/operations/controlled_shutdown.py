"""ControlledShutdown (broker -> controller): move the asking broker's leaderships away.

The sender needs ClusterAction on the cluster (an inter-broker request); only the controller
answers (others: NOT_CONTROLLER; the broker finds the controller from /controller or
Metadata). The work runs as a controller event (coordinator/controller/admin.py
`controlled_shutdown`) bounded by CALL_TIMEOUT_MS (REQUEST_TIMED_OUT); the answer lists the
partitions the broker still leads (no other ISR member could take them), so the broker may
retry before it stops (coordinator/cluster/shutdown.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.controller_call import active_controller, call
from broker.security import rules
from broker.session import Session
from coordinator.controller.admin import controlled_shutdown
from protocol.errors import (
    ClusterAuthorizationFailedError,
    NotControllerError,
    OdradekError,
    RequestTimedOutError,
)

API = "ControlledShutdown"
CALL_TIMEOUT_MS = 30_000


@dataclass(frozen=True, slots=True)
class ControlledShutdown:
    broker_id: int


@dataclass(frozen=True, slots=True)
class ControlledShutdownResult:
    error_code: int
    remaining: tuple[tuple[str, int], ...] = ()  # (topic, partition) still led by the broker


async def run(
    ctx: BrokerContext, session: Session, req: ControlledShutdown
) -> ControlledShutdownResult:
    if not rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api=API):
        return ControlledShutdownResult(ClusterAuthorizationFailedError.code)
    controller = active_controller(ctx)
    if controller is None:
        return ControlledShutdownResult(NotControllerError.code)
    try:
        remaining = await call(
            controller, lambda: controlled_shutdown(controller, req.broker_id), CALL_TIMEOUT_MS
        )
    except TimeoutError:
        return ControlledShutdownResult(RequestTimedOutError.code)
    except OdradekError as exc:
        return ControlledShutdownResult(exc.code)
    return ControlledShutdownResult(0, tuple((t, p) for t, p in remaining))
