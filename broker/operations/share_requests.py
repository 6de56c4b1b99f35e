"""What ShareFetch and ShareAcknowledge share (KIP-932): their request parts, the group check,
the topic checks and the acknowledgements, over the leader's share partitions
(broker/share/manager.py).

Checks, as Kafka's KafkaApis: Read on the group first (the whole request:
GROUP_AUTHORIZATION_FAILED); an empty group or member id is INVALID_REQUEST; then per topic, a
topic id no topic has is UNKNOWN_TOPIC_ID and a topic without Read TOPIC_AUTHORIZATION_FAILED
on each of its partitions, which are neither fetched nor acknowledged.

Leader hints (KIP-951, as Kafka's KafkaApis does for both): a partition answered
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH (its fetch's or its acknowledgement's) carries its
current leader and epoch from the metadata cache, and the answer lists those leaders' endpoints
on the client's listener (`leader_hints`), so a share consumer moves to the new leader without
asking Metadata first.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.leader_hints import HINTED, current_leader, endpoints
from broker.security import rules
from broker.session import Session
from protocol.errors import (
    InvalidRequestError,
    OdradekError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
)

NONE = 0
TopicPart = tuple[uuid.UUID, int]
Endpoint = tuple[int, str, int, str | None]  # (node id, host, port, rack)


@dataclass(frozen=True, slots=True)
class AckBatch:
    first_offset: int
    last_offset: int
    types: tuple[int, ...]  # one for the whole range, or one per offset


@dataclass(frozen=True, slots=True)
class PartitionIn:
    topic_id: uuid.UUID
    partition: int
    acks: tuple[AckBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class Refused:
    code: int
    message: str | None


def group_refusal(
    ctx: BrokerContext, session: Session, group_id: str | None, member_id: str | None, api: str
) -> OdradekError | None:
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, group_id or "", api=api):
        return rules.refusal(session, rules.READ, rules.GROUP, group_id or "")
    if not group_id:
        return InvalidRequestError("The group id must be set.")
    if not member_id:
        return InvalidRequestError("The member id must be set.")
    return None


def resolve(
    ctx: BrokerContext, session: Session, topic_ids: Iterable[uuid.UUID], api: str
) -> tuple[dict[uuid.UUID, str], dict[uuid.UUID, Refused]]:
    """(the readable topics' names by id, the refused ids with their error)."""
    names: dict[uuid.UUID, str] = {}
    refused: dict[uuid.UUID, Refused] = {}
    for tid in dict.fromkeys(topic_ids):
        name = ctx.metadata.topic_by_id(tid)
        if name is None:
            refused[tid] = Refused(UnknownTopicIdError.code, "This server does not host this "
                                                             "topic ID.")  # fmt: skip
        else:
            names[tid] = name
    denied = rules.denied(ctx, session, rules.READ, rules.TOPIC, names.values(), api=api)
    for tid, name in list(names.items()):
        if name in denied:
            err = rules.refusal(session, rules.READ, rules.TOPIC, name)
            refused[tid] = Refused(TopicAuthorizationFailedError.code, err.message)
            del names[tid]
    return names, refused


async def acknowledge(
    ctx: BrokerContext, group_id: str, member_id: str, parts: Iterable[PartitionIn],
    names: dict[uuid.UUID, str],
) -> dict[TopicPart, int]:  # fmt: skip
    """Apply each readable partition's acknowledgements and write its state (the partitions
    at once); its error code, once the write is done."""
    keys: list[TopicPart] = []
    calls = []
    for p in parts:
        if p.acks and p.topic_id in names:
            batches = [(a.first_offset, a.last_offset, a.types) for a in p.acks]
            keys.append((p.topic_id, p.partition))
            calls.append(ctx.share.acknowledge(group_id, member_id, names[p.topic_id],
                                               p.partition, batches))  # fmt: skip
    return dict(zip(keys, await asyncio.gather(*calls), strict=True))


def leader_hints(
    ctx: BrokerContext, session: Session, errored: Iterable[tuple[TopicPart, str, int]]
) -> tuple[dict[TopicPart, tuple[int, int]], tuple[Endpoint, ...]]:
    """For each (partition, topic name, error code) with a leadership error: its current
    (leader id, leader epoch), and the endpoints of those leaders on the client's listener."""
    leaders: dict[TopicPart, tuple[int, int]] = {}
    for key, name, code in errored:
        if code in HINTED:
            hint = current_leader(ctx.metadata, name, key[1])
            if hint is not None:
                leaders[key] = hint
    if not leaders:
        return leaders, ()
    ids = {leader for leader, _ in leaders.values()}
    return leaders, tuple(endpoints(ctx.metadata, ids, session.listener))
