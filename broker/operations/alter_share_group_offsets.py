"""AlterShareGroupOffsets (api key 91, KIP-932, v0): set an Empty share group's start offset
(SPSO) on the share partitions named, as `kafka-share-groups.sh --reset-offsets` does. Each
share partition's state is initialized anew (InitializeShareGroupState through
`ctx.share_persister`) at the next state epoch, with no records in flight: what was
acknowledged or archived below or above the new start is forgotten, as in Kafka. An id that no
group has becomes an Empty share group, as Kafka's.

Refusals, Kafka's: no Read on the group is GROUP_AUTHORIZATION_FAILED for the whole request;
not its coordinator NOT_COORDINATOR (or loading); a classic or consumer group's id
GROUP_ID_NOT_FOUND; a group with members GROUP_NOT_EMPTY. Per partition: a topic without Read
TOPIC_AUTHORIZATION_FAILED, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, a
negative offset INVALID_REQUEST, else the share coordinator's answer.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations import share_offsets
from broker.security import rules
from broker.session import Session

API = "AlterShareGroupOffsets"
NONE = 0
INVALID_REQUEST = 42


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsets:
    group_id: str
    topics: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # (topic, (partition, offset))


@dataclass(frozen=True, slots=True)
class PartitionAltered:
    partition: int
    error_code: int = NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class TopicAltered:
    topic: str
    partitions: tuple[PartitionAltered, ...]
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsResult:
    error_code: int = NONE
    error_message: str | None = None
    topics: tuple[TopicAltered, ...] = ()


async def run(
    ctx: BrokerContext, session: Session, req: AlterShareGroupOffsets
) -> AlterShareGroupOffsetsResult:
    gid = req.group_id
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, gid, api=API):
        err = rules.refusal(session, rules.READ, rules.GROUP, gid)
        return AlterShareGroupOffsetsResult(err.code, err.message)
    found = share_offsets.must_be_empty(await share_offsets.find(ctx, gid, create=True), gid)
    if found.error_code != NONE or found.group is None:
        return AlterShareGroupOffsetsResult(found.error_code, found.error_message)
    refused = rules.denied(ctx, session, rules.READ, rules.TOPIC, {t for t, _ in req.topics},
                           api=API)  # fmt: skip
    topics = []
    for topic, parts in req.topics:
        if topic in refused:
            err = rules.refusal(session, rules.READ, rules.TOPIC, topic)
            topics.append(TopicAltered(topic, tuple(
                PartitionAltered(p, err.code, err.message) for p, _ in parts),
                ctx.metadata.topic_id(topic)))  # fmt: skip
            continue
        topics.append(await _topic(ctx, gid, topic, parts))
        if any(p.error_code == NONE for p in topics[-1].partitions):
            await ctx.groups.share.set_state_topic(gid, topic, True)  # written
    return AlterShareGroupOffsetsResult(NONE, None, tuple(topics))


async def _topic(
    ctx: BrokerContext, gid: str, topic: str, parts: tuple[tuple[int, int], ...]
) -> TopicAltered:
    known = share_offsets.partitions(ctx, topic) or []
    out = []
    for p, offset in parts:
        if p not in known:
            out.append(PartitionAltered(p, share_offsets.UNKNOWN_TOPIC_OR_PARTITION,
                                        f"{topic}-{p} not found."))  # fmt: skip
        elif offset < 0:
            out.append(PartitionAltered(p, INVALID_REQUEST, f"start offset {offset} of "
                                        f"{topic}-{p} is negative"))  # fmt: skip
        else:
            out.append(PartitionAltered(p, await _alter(ctx, gid, topic, p, offset)))
    return TopicAltered(topic, tuple(out), ctx.metadata.topic_id(topic))


async def _alter(ctx: BrokerContext, gid: str, topic: str, partition: int, offset: int) -> int:
    """Initialize the share partition at `offset`, one state epoch past the stored one."""
    summary = await ctx.share_persister.summary(gid, topic, partition)
    if summary.error_code != NONE:
        return summary.error_code
    code = await ctx.share_persister.initialize(
        gid, topic, partition, summary.state_epoch + 1, offset
    )
    if code == NONE:
        share_offsets.forget(ctx, gid, topic, partition)
    return code
