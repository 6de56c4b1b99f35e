"""OffsetCommit: a group's offsets, checked against the member's generation (a classic group)
or its member epoch (a KIP-848 consumer group: STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID); -1
commits for a group without members whatever the member id (an assign()ing consumer, which
under KIP-848 sends its own id, or an admin's reset), as Kafka takes it; written to the
group's `__consumer_offsets` partition with acks=all and answered once replicated. A static
member's commit carries its instance id (KIP-345): a fenced one gets FENCED_INSTANCE_ID.
Every partition gets its own code, in the order asked.

Refusals, in Kafka's order: no Read on the group is GROUP_AUTHORIZATION_FAILED for every
partition; no group coordinator on this broker COORDINATOR_NOT_AVAILABLE for every
partition; a KIP-848 member committing with a generation that cannot be its epoch (Kafka
v0-v8: `generation_is_epoch` False) UNSUPPORTED_VERSION, as Kafka answers; then each topic
without Read is TOPIC_AUTHORIZATION_FAILED, each partition this broker's metadata cache does
not know (no such topic, or an index past its partition count) UNKNOWN_TOPIC_OR_PARTITION
(Kafka's clients retry it: a topic just created may reach this broker's cache a moment after
the controller wrote it), each with a metadata over 4096 characters (Kafka's
offset.metadata.max.bytes) OFFSET_METADATA_TOO_LARGE, and the others are committed. The
coordinator's own commits (coordinator/group/) do not come through here.

Kafka v10 (KIP-848, Kafka 4.2) names topics by id: they are named through the metadata cache
first, an id no topic has is UNKNOWN_TOPIC_ID on each of its partitions, and the answer gives
each topic under its id. The group's refusals come first even then, as Kafka's
KafkaApis.handleOffsetCommitRequest answers them before naming any topic: every partition,
an unknown id's too, gets GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.by_topic_id import named_by_id
from broker.security import rules
from broker.session import Session
from coordinator.group.records import metadata_too_large
from protocol.api import group
from protocol.errors import (
    GroupAuthorizationFailedError,
    OffsetMetadataTooLargeError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)

API = "OffsetCommit"
_CodeOf = Callable[[str, int], int]  # a partition's answer


@dataclass(frozen=True, slots=True)
class CommitPartition:
    partition: int
    offset: int
    metadata: str | None = None
    leader_epoch: int = -1  # KIP-320's committed leader epoch; -1: not given


@dataclass(frozen=True, slots=True)
class CommitTopic:
    name: str
    partitions: tuple[CommitPartition, ...]


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    group_id: str
    generation_id: int  # a KIP-848 member's epoch; -1 with member "": from outside the group
    member_id: str
    topics: tuple[CommitTopic, ...]
    group_instance_id: str | None = None
    generation_is_epoch: bool = True  # False: Kafka v0-v8, which a KIP-848 member may not use
    topic_ids: tuple[uuid.UUID | None, ...] | None = None  # v10+: `topics`' ids (names unknown)


@dataclass(frozen=True, slots=True)
class TopicCommitted:
    name: str
    partitions: tuple[tuple[int, int], ...]  # (partition, error code)


@dataclass(frozen=True, slots=True)
class OffsetCommitResult:
    topics: tuple[TopicCommitted, ...]  # in the order asked
    topic_ids: dict[str, uuid.UUID] | None = None  # by id: each answered topic's id
    unknown_ids: tuple[tuple[uuid.UUID | None, tuple[int, ...]], ...] = ()  # by id, unnamed
    unknown_ids_code: int = UnknownTopicIdError.code  # what those partitions get


async def run(ctx: BrokerContext, session: Session, req: OffsetCommit) -> OffsetCommitResult:
    code = _group_refusal(ctx, session, req)
    if req.topic_ids is not None:
        return await _by_id(ctx, session, req, code)
    return await _by_name(ctx, session, req, code)


def _group_refusal(ctx: BrokerContext, session: Session, req: OffsetCommit) -> int:
    """The code every partition gets before any topic is looked at: no Read on the group, or
    a KIP-848 member committing with a generation; 0 when there is none."""
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api=API):
        return GroupAuthorizationFailedError.code
    if (not req.generation_is_epoch and req.member_id
            and ctx.groups.consumer.is_consumer_group(req.group_id)):  # fmt: skip
        return UnsupportedVersionError.code
    return 0


async def _by_name(
    ctx: BrokerContext, session: Session, req: OffsetCommit, code: int
) -> OffsetCommitResult:
    if code:
        return _answer(req, lambda topic, partition: code)
    names = {t.name for t in req.topics}
    refused = rules.denied(ctx, session, rules.READ, rules.TOPIC, names, api=API)
    codes: dict[tuple[str, int], int] = {}
    commit_topics = _known(ctx, req, refused, codes)
    if commit_topics:
        commit = group.OffsetCommitRequest(req.group_id, req.generation_id, req.member_id,
                                           commit_topics, req.group_instance_id)  # fmt: skip
        done = await ctx.groups.offsets.commit(commit)
        codes.update({(t.name, p.partition): p.error_code for t in done.topics
                      for p in t.partitions})  # fmt: skip
    denied = TopicAuthorizationFailedError.code
    return _answer(req, lambda topic, partition: denied if topic in refused
                   else codes[(topic, partition)])  # fmt: skip


def _known(
    ctx: BrokerContext, req: OffsetCommit, refused: AbstractSet[str],
    codes: dict[tuple[str, int], int],
) -> list[group.CommitTopic]:  # fmt: skip
    """The allowed topics' partitions this broker knows, to commit; each one it does not
    know gets UNKNOWN_TOPIC_OR_PARTITION in `codes`, each with a metadata longer than Kafka's
    offset.metadata.max.bytes OFFSET_METADATA_TOO_LARGE."""
    out = []
    for t in req.topics:
        if t.name in refused:
            continue
        partitions = []
        for p in t.partitions:
            if not ctx.metadata.has_partition(t.name, p.partition):
                codes[(t.name, p.partition)] = UnknownTopicOrPartitionError.code
            elif metadata_too_large(p.metadata):
                codes[(t.name, p.partition)] = OffsetMetadataTooLargeError.code
            else:
                partitions.append(group.CommitPartition(p.partition, p.offset, p.metadata,
                                                        p.leader_epoch))  # fmt: skip
        if partitions:
            out.append(group.CommitTopic(t.name, partitions))
    return out


def _answer(req: OffsetCommit, code_of: _CodeOf) -> OffsetCommitResult:
    return OffsetCommitResult(tuple(
        TopicCommitted(t.name, tuple((p.partition, code_of(t.name, p.partition))
                                     for p in t.partitions))
        for t in req.topics
    ))  # fmt: skip


async def _by_id(
    ctx: BrokerContext, session: Session, req: OffsetCommit, code: int
) -> OffsetCommitResult:
    """v10+: the topics named through the metadata cache, then committed by name; refused by
    the group, every topic is answered under its id, named or not (Kafka's order)."""
    assert req.topic_ids is not None
    if code:
        every = tuple(
            (topic_id, tuple(p.partition for p in topic.partitions))
            for topic_id, topic in zip(req.topic_ids, req.topics, strict=True)
        )
        return OffsetCommitResult((), {}, every, code)
    by_id = named_by_id(ctx.metadata, req.topic_ids, req.topics)
    topics = tuple(CommitTopic(name, topic.partitions) for name, topic in by_id.named)
    named = dataclasses.replace(req, topics=topics, topic_ids=None)
    result = await _by_name(ctx, session, named, 0) if topics else OffsetCommitResult(())
    return dataclasses.replace(result, topic_ids=by_id.ids, unknown_ids=tuple(by_id.unknown))
