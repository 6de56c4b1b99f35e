"""ShareGroupHeartbeat (KIP-932, Kafka only, v1): a share consumer joins (member epoch 0, with
the member id it made and its subscribed topic names), heartbeats and leaves (-1); the
coordinator (coordinator/group/share_service.py) answers the member epoch, the heartbeat
interval and, when it changed, the member's partitions by topic id (several members may share
one partition), once the group's records are written to `__consumer_offsets`.

Refusals, in order (Kafka 4.2): no Read on the group (GROUP_AUTHORIZATION_FAILED), no Describe
on a subscribed topic name (TOPIC_AUTHORIZATION_FAILED, naming them); then the coordinator's:
not this group's coordinator, an empty member id, a join without topics, a wrong epoch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.share_group import ShareHeartbeatIn, ShareHeartbeatOut

API = "ShareGroupHeartbeat"


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int  # 0 joins, -1 leaves
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None  # None: unchanged
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class AssignedTopic:
    topic_id: uuid.UUID
    partitions: tuple[int, ...]  # sorted
    name: str | None = None  # None: the metadata cache does not know the id (the native door's)


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[AssignedTopic, ...] | None = None  # None: unchanged (or an error)


async def run(
    ctx: BrokerContext, session: Session, req: ShareGroupHeartbeat
) -> ShareGroupHeartbeatResult:
    names = req.subscribed_topic_names
    refused = rules.group_heartbeat_refusal(ctx, session, req.group_id, names, api=API)
    if refused is not None:
        return ShareGroupHeartbeatResult(refused.code, refused.message)
    beat = ShareHeartbeatIn(req.group_id, req.member_id, req.member_epoch, req.rack_id, names,
                            req.client_id, req.client_host)  # fmt: skip
    return _result(ctx, await ctx.groups.share.heartbeat(beat, ctx.clock.monotonic_ms()))


def _result(ctx: BrokerContext, out: ShareHeartbeatOut) -> ShareGroupHeartbeatResult:
    assignment = None
    if out.error_code == 0 and out.assignment is not None:
        assignment = tuple(
            AssignedTopic(t, tuple(sorted(ps)), ctx.metadata.topic_by_id(t))
            for t, ps in sorted(out.assignment.items(), key=lambda kv: str(kv[0]))
        )
    return ShareGroupHeartbeatResult(
        out.error_code, out.error_message, out.member_id, out.member_epoch,
        out.heartbeat_interval_ms, assignment,
    )  # fmt: skip
