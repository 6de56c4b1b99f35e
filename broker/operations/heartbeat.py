"""Heartbeat (classic groups): a member says it is alive. NONE while the group is stable or
awaiting the leader's assignment; REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION tell it to
rejoin, UNKNOWN_MEMBER_ID that it was removed, FENCED_INSTANCE_ID that its static instance id
now belongs to another member (KIP-345).

Refusals, in order: no Read on the group (GROUP_AUTHORIZATION_FAILED), then no group
coordinator on this broker (COORDINATOR_NOT_AVAILABLE: the client finds the coordinator again).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import HeartbeatRequest as ServiceRequest
from protocol.errors import GroupAuthorizationFailedError

API = "Heartbeat"


@dataclass(frozen=True, slots=True)
class Heartbeat:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None  # a static member's (KIP-345)


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error_code: int


def run(ctx: BrokerContext, session: Session, req: Heartbeat) -> HeartbeatResult:
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api=API):
        return HeartbeatResult(GroupAuthorizationFailedError.code)
    service_req = ServiceRequest(
        req.group_id, req.generation_id, req.member_id, req.group_instance_id or None
    )
    return HeartbeatResult(ctx.groups.heartbeat(service_req))
