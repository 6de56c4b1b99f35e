"""What the operations answered by the controller share (ElectLeaders, the reassignments):
this broker's Controller while it is the controller, and a call onto its event loop bounded by
the request's timeout. Only the controller answers these APIs (others: NOT_CONTROLLER, and the
client asks the controller that Metadata names); the controller-side work, ZooKeeper writes
included, is coordinator/controller/admin.py's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from broker.context import BrokerContext
from coordinator.controller.core import Controller

T = TypeVar("T")


def active_controller(ctx: BrokerContext) -> Controller | None:
    """This broker's Controller while it is the controller, else None."""
    return ctx.elector.active_controller


async def call(controller: Controller, work: Callable[[], Awaitable[T]], timeout_ms: int) -> T:
    """`work` run as a controller event; raises TimeoutError after `timeout_ms` (at least 1)."""
    return await controller.call(work, max(timeout_ms, 1) / 1000)
