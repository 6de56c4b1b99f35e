"""DescribeShareGroupOffsets (api key 90, KIP-932, v0-v1): each asked share group's start
offset (SPSO) per share partition, from the share coordinator's summary
(ReadShareGroupStateSummary through `ctx.share_persister`), and (v1, KIP-1226) its lag: the
partition's high watermark less the start offset and the records delivered complete above it.
A share partition without state has start offset -1 and lag -1; the lag is -1 too where this
broker does not lead the partition (the coordinator knows no other high watermark; odradek's
`share-groups describe` computes it from the end offsets, as Kafka's tool can).

Topics named: those asked, each partition of each (all when none named); no topics (null):
the group's topics with state (assigned, or altered, since their offsets were last deleted).

Refusals, Kafka's: no Describe on a group is its GROUP_AUTHORIZATION_FAILED; not its
coordinator NOT_COORDINATOR (or loading); no share group by the id GROUP_ID_NOT_FOUND. A topic
without Describe is TOPIC_AUTHORIZATION_FAILED on each asked partition (left out when not
named); an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations import share_offsets
from broker.security import rules
from broker.session import Session
from protocol.errors import OdradekError

API = "DescribeShareGroupOffsets"
NONE = 0


@dataclass(frozen=True, slots=True)
class AskedGroup:
    group_id: str
    topics: tuple[tuple[str, tuple[int, ...]], ...] | None  # (topic, partitions); None: all


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsets:
    groups: tuple[AskedGroup, ...]


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    partition: int
    start_offset: int = -1
    leader_epoch: int = -1
    lag: int = -1
    error_code: int = NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class TopicOffsets:
    topic: str
    partitions: tuple[PartitionOffset, ...]
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    group_id: str
    topics: tuple[TopicOffsets, ...] = ()
    error_code: int = NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsetsResult:
    groups: tuple[GroupOffsets, ...]


async def run(
    ctx: BrokerContext, session: Session, req: DescribeShareGroupOffsets
) -> DescribeShareGroupOffsetsResult:
    ids = [g.group_id for g in req.groups]
    denied = rules.denied(ctx, session, rules.DESCRIBE, rules.GROUP, ids, api=API)
    out = []
    for asked in req.groups:
        if asked.group_id in denied:
            err = rules.refusal(session, rules.DESCRIBE, rules.GROUP, asked.group_id)
            out.append(GroupOffsets(asked.group_id, (), err.code, err.message))
        else:
            out.append(await _group(ctx, session, asked))
    return DescribeShareGroupOffsetsResult(tuple(out))


async def _group(ctx: BrokerContext, session: Session, asked: AskedGroup) -> GroupOffsets:
    found = await share_offsets.find(ctx, asked.group_id)
    if found.group is None:
        return GroupOffsets(asked.group_id, (), found.error_code, found.error_message)
    named = asked.topics is not None
    wanted = list(asked.topics) if asked.topics is not None else [
        (t, ()) for t in sorted(found.group.state_topics)
    ]  # fmt: skip
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, {t for t, _ in wanted},
                           api=API, log_denied=named)  # fmt: skip
    topics = []
    for topic, parts in wanted:
        if topic in refused:
            if named:
                err = rules.refusal(session, rules.DESCRIBE, rules.TOPIC, topic)
                topics.append(TopicOffsets(topic, tuple(
                    PartitionOffset(p, error_code=err.code, error_message=err.message)
                    for p in parts), ctx.metadata.topic_id(topic)))  # fmt: skip
            continue
        topics.append(await _topic(ctx, asked.group_id, topic, parts, named))
    return GroupOffsets(asked.group_id, tuple(topics))


async def _topic(
    ctx: BrokerContext, group_id: str, topic: str, parts: tuple[int, ...], named: bool
) -> TopicOffsets:
    known = share_offsets.partitions(ctx, topic)
    if known is None:
        if not named:
            return TopicOffsets(topic, ())
        return TopicOffsets(topic, tuple(
            PartitionOffset(p, error_code=share_offsets.UNKNOWN_TOPIC_OR_PARTITION,
                            error_message=f"Topic {topic} not found.")
            for p in parts))  # fmt: skip
    out = []
    for p in parts or tuple(known):
        if p not in known:
            out.append(PartitionOffset(p, error_code=share_offsets.UNKNOWN_TOPIC_OR_PARTITION,
                                       error_message=f"{topic}-{p} not found."))  # fmt: skip
            continue
        s = await ctx.share_persister.summary(group_id, topic, p)
        if s.error_code != NONE:
            out.append(PartitionOffset(p, error_code=s.error_code))
            continue
        out.append(PartitionOffset(p, s.start_offset, s.leader_epoch,
                                   _lag(ctx, topic, p, s.start_offset,
                                        s.delivery_complete_count)))  # fmt: skip
    return TopicOffsets(topic, tuple(out), ctx.metadata.topic_id(topic))


def _lag(ctx: BrokerContext, topic: str, partition: int, start: int, complete: int) -> int:
    """KIP-1226's lag where this broker leads the partition; -1 where it cannot say."""
    if start < 0:
        return -1
    try:
        hw = ctx.replicas.leader(topic, partition).high_watermark
    except OdradekError:
        return -1
    return max(0, hw - start - max(0, complete))
