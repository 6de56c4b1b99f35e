"""SyncGroup (14), v0-v5: the leader hands out the assignment, every member gets its part
(coordinator/group/group.py `sync`); a follower's waits for the leader's. v3+ carries the
member's group_instance_id: a fenced static member gets FENCED_INSTANCE_ID."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.group import SyncAnswer
from protocol.errors import CoordinatorNotAvailableError, GroupAuthorizationFailedError
from protocol.kafka.codec import KafkaRequest, make, response_class
from protocol.kafka.versions import SYNC_GROUP


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    allowed = rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api="SyncGroup")
    if not allowed:
        answer = SyncAnswer(GroupAuthorizationFailedError.code)
    elif ctx.groups is None:
        answer = SyncAnswer(CoordinatorNotAvailableError.code)
    else:
        answer = await ctx.groups.sync(
            req.group_id, req.generation_id, req.member_id,
            {a.member_id: bytes(a.assignment) for a in req.assignments},
            getattr(req, "protocol_type", None), getattr(req, "protocol_name", None),
            getattr(req, "group_instance_id", None) or None,
        )  # fmt: skip
    view = ctx.groups.group_view(req.group_id)[1] if ctx.groups is not None and allowed else None
    return make(
        response_class(SYNC_GROUP, request.header.api_version), throttle_time=0,
        error_code=answer.error_code, assignment=answer.assignment,
        protocol_type=view.protocol_type if view is not None else None,
        protocol_name=view.strategy if view is not None else None,
    )  # fmt: skip
