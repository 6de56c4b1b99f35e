"""ConsumerGroupHeartbeat (68), v0-v1: a KIP-848 consumer (group.protocol=consumer) joins
(member epoch 0), heartbeats, and leaves (-1, or -2 for a static member) with one request; the
coordinator answers its member epoch, heartbeat interval and, when it changed, its assignment
by topic id (coordinator/group/consumer_group.py). v1 requires the member id the client made
(KIP-1082); for v0 an empty one gets a fresh id from the coordinator."""

from __future__ import annotations

import uuid
from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.consumer_group import INVALID_REQUEST, HeartbeatIn, HeartbeatOut
from protocol.errors import CoordinatorNotAvailableError
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class
from protocol.kafka.versions import CONSUMER_GROUP_HEARTBEAT

CLIENT_MEMBER_ID_FROM = 1


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    owned = (
        None
        if req.topic_partitions is None
        else {t.topic_id: frozenset(t.partitions) for t in req.topic_partitions if t.topic_id}
    )
    names = req.subscribed_topic_names
    beat = HeartbeatIn(
        req.group_id,
        req.member_id,
        req.member_epoch,
        req.instance_id,
        req.rack_id,
        millis(req.rebalance_timeout),
        None if names is None else tuple(names),
        getattr(req, "subscribed_topic_regex", None),
        req.server_assignor,
        owned,
        request.header.client_id or "",
        request.client_host,
    )
    refused = rules.group_heartbeat_refusal(ctx, session, req.group_id, names)
    if refused is not None:
        out = HeartbeatOut(refused.code, refused.message)
    elif ctx.groups is None:
        out = HeartbeatOut(CoordinatorNotAvailableError.code, "no group coordinator here")
    elif version >= CLIENT_MEMBER_ID_FROM and not req.member_id:
        out = HeartbeatOut(INVALID_REQUEST, "MemberId can't be empty.")
    else:
        out = await ctx.groups.consumer.heartbeat(beat, lambda: str(uuid.uuid4()))
    return encode(version, out)


def encode(version: int, out: HeartbeatOut) -> Any:
    cls = response_class(CONSUMER_GROUP_HEARTBEAT, version)
    assignment = None
    if out.error_code == 0 and out.assignment is not None:
        assignment_cls = nested(cls, "Assignment")
        tp_cls = nested(cls, "TopicPartitions")
        assignment = make(
            assignment_cls,
            topic_partitions=tuple(
                make(tp_cls, topic_id=t, partitions=tuple(sorted(ps)))
                for t, ps in sorted(out.assignment.items(), key=lambda kv: str(kv[0]))
            ),
        )
    return make(
        cls,
        throttle_time=0,
        error_code=out.error_code,
        error_message=out.error_message,
        member_id=out.member_id,
        member_epoch=out.member_epoch,
        heartbeat_interval=out.heartbeat_interval_ms,
        assignment=assignment,
    )
