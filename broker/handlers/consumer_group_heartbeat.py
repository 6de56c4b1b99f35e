"""ConsumerGroupHeartbeat on the native door: a native consumer with group_protocol="consumer"
(KIP-848) joins, heartbeats, reports what it owns and leaves. Topics travel by name: the owned
partitions are mapped to topic ids with the metadata cache before the coordinator
(coordinator/group/consumer_service.py) sees them, and its assignment back to names, so the
client never maps ids. An owned topic the cache does not know is left out (it was deleted)."""

from __future__ import annotations

import uuid

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.consumer_group import INVALID_REQUEST, HeartbeatIn, HeartbeatOut
from protocol.api.group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError


async def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> ConsumerGroupHeartbeatResponse:
    req: ConsumerGroupHeartbeatRequest = request.body
    owned = None
    if req.owned is not None:
        owned = {}
        for t in req.owned:
            topic_id = ctx.metadata.topic_id(t.topic)
            if topic_id is not None:
                owned[topic_id] = frozenset(t.partitions)
    names = req.subscribed_topic_names
    beat = HeartbeatIn(
        req.group_id, req.member_id, req.member_epoch, req.instance_id, None,
        req.rebalance_timeout_ms, None if names is None else tuple(names),
        req.subscribed_topic_regex, req.server_assignor, owned,
        req.client_id or request.header.client_id or "", "",
    )  # fmt: skip
    refused = rules.group_heartbeat_refusal(ctx, session, req.group_id, names)
    if refused is not None:
        out = HeartbeatOut(refused.code, refused.message)
    elif ctx.groups is None:
        out = HeartbeatOut(CoordinatorNotAvailableError.code, "no group coordinator here")
    elif not req.member_id and req.member_epoch == 0:
        out = HeartbeatOut(INVALID_REQUEST, "MemberId can't be empty.")
    else:
        out = await ctx.groups.consumer.heartbeat(beat, lambda: str(uuid.uuid4()))
    assignment = None
    if out.error_code == 0 and out.assignment is not None:
        assignment = [
            TopicPartitions(ctx.metadata.topic_by_id(t) or str(t), sorted(ps))
            for t, ps in sorted(out.assignment.items(), key=lambda kv: str(kv[0]))
        ]
    return ConsumerGroupHeartbeatResponse(
        out.error_code, out.error_message, out.member_id, out.member_epoch,
        out.heartbeat_interval_ms, assignment,
    )  # fmt: skip
