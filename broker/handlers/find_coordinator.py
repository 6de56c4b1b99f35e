"""FindCoordinator (seed 000's ConsumerMetadataRequest): GroupId -> ErrorCode, Coordinator.

Any broker answers: the coordinator is the leader of the group's `__consumer_offsets`
partition, created here on first use (coordinator/group/service.py)."""

from __future__ import annotations

from broker.context import BrokerContext
from protocol.api.group import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError


async def handle(ctx: BrokerContext, request: Request) -> FindCoordinatorResponse:
    req: FindCoordinatorRequest = request.body
    if ctx.groups is None:
        return FindCoordinatorResponse(CoordinatorNotAvailableError.code, None, -1, "", 0)
    return await ctx.groups.find_coordinator(req.group_id)
