"""ConsumerGroupHeartbeat (KIP-848, group.protocol=consumer): one request joins (member epoch
0), heartbeats, reports the partitions the member owns and leaves (-1; -2 a static member); the
coordinator (coordinator/group/consumer_service.py) answers the member epoch, the heartbeat
interval and, when it changed, the assignment. A first heartbeat into a classic group with
members converts it into a consumer group, as the migration policy allows
(coordinator/group/migration.py); else GROUP_ID_NOT_FOUND says why.

Topics: the Kafka door names owned topics by id, the native door by name; a named topic is
mapped to its id with the metadata cache, and one the cache does not know is left out (it was
deleted). The assignment comes back by id with each topic's name (None when the cache does not
know it), so that each codec writes what its door speaks.

Refusals, in order (Kafka 4.0): no Read on the group (GROUP_AUTHORIZATION_FAILED), no Describe
on a subscribed topic name (TOPIC_AUTHORIZATION_FAILED, naming them), no group coordinator on
this broker (COORDINATOR_NOT_AVAILABLE), and an empty member id where the client must make it
(Kafka v1+, KIP-1082, and the native door: INVALID_REQUEST "MemberId can't be empty."). Kafka
v0 lets the coordinator make the id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.consumer_group import INVALID_REQUEST, HeartbeatIn, HeartbeatOut

API = "ConsumerGroupHeartbeat"


@dataclass(frozen=True, slots=True)
class OwnedTopic:
    """A topic's partitions the member owns, by id (Kafka door) or by name (native door)."""

    topic_id: uuid.UUID | None
    name: str | None
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int  # 0 joins, -1 leaves, -2 leaves a static member's place
    member_id_required: bool  # the client makes its member id (Kafka v1+, native)
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None  # None: unchanged
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: tuple[OwnedTopic, ...] | None = None  # None: unchanged since the last heartbeat
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class AssignedTopic:
    topic_id: uuid.UUID
    name: str | None  # None: the metadata cache does not know the id
    partitions: tuple[int, ...]  # sorted


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: tuple[AssignedTopic, ...] | None = None  # None: unchanged (or an error)


async def run(
    ctx: BrokerContext, session: Session, req: ConsumerGroupHeartbeat
) -> ConsumerGroupHeartbeatResult:
    names = req.subscribed_topic_names
    refused = rules.group_heartbeat_refusal(ctx, session, req.group_id, names)
    if refused is not None:
        out = HeartbeatOut(refused.code, refused.message)
    elif req.member_id_required and not req.member_id:
        out = HeartbeatOut(INVALID_REQUEST, "MemberId can't be empty.")
    else:
        beat = HeartbeatIn(
            req.group_id, req.member_id, req.member_epoch, req.instance_id, req.rack_id,
            req.rebalance_timeout_ms, names, req.subscribed_topic_regex, req.server_assignor,
            _owned(ctx, req.owned), req.client_id, req.client_host,
        )  # fmt: skip
        out = await ctx.groups.consumer.heartbeat(beat, lambda: str(uuid.uuid4()))
    return _result(ctx, out)


def _owned(
    ctx: BrokerContext, owned: tuple[OwnedTopic, ...] | None
) -> dict[uuid.UUID, frozenset[int]] | None:
    if owned is None:
        return None
    out: dict[uuid.UUID, frozenset[int]] = {}
    for t in owned:
        topic_id = t.topic_id
        if topic_id is None and t.name is not None:
            topic_id = ctx.metadata.topic_id(t.name)
        if topic_id:
            out[topic_id] = frozenset(t.partitions)
    return out


def _result(ctx: BrokerContext, out: HeartbeatOut) -> ConsumerGroupHeartbeatResult:
    assignment = None
    if out.error_code == 0 and out.assignment is not None:
        assignment = tuple(
            AssignedTopic(t, ctx.metadata.topic_by_id(t), tuple(sorted(ps)))
            for t, ps in sorted(out.assignment.items(), key=lambda kv: str(kv[0]))
        )
    return ConsumerGroupHeartbeatResult(
        out.error_code, out.error_message, out.member_id, out.member_epoch,
        out.heartbeat_interval_ms, assignment,
    )  # fmt: skip
