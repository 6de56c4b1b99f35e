"""Heartbeat (12), v0-v4: the same session keep-alive as the native Heartbeat; during a
rebalance it answers REBALANCE_IN_PROGRESS, while awaiting the leader's SyncGroup NONE. v3+
carries the member's group_instance_id: a fenced static member gets FENCED_INSTANCE_ID."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import HeartbeatRequest
from protocol.errors import CoordinatorNotAvailableError, GroupAuthorizationFailedError
from protocol.kafka.codec import KafkaRequest, make, response_class
from protocol.kafka.versions import HEARTBEAT


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    code = CoordinatorNotAvailableError.code
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api="Heartbeat"):
        code = GroupAuthorizationFailedError.code
    elif ctx.groups is not None:
        instance_id = getattr(req, "group_instance_id", None) or None
        code = ctx.groups.heartbeat(
            HeartbeatRequest(req.group_id, req.generation_id, req.member_id, instance_id)
        )
    return make(response_class(HEARTBEAT, request.header.api_version), throttle_time=0,
                error_code=code)  # fmt: skip
