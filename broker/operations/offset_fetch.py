"""OffsetFetch: groups' committed offsets (-1 where nothing is committed), each group answered
on its own with its own error code (Kafka v8+ asks for several; the other versions and the
native door for one). No topics named (None) asks for every committed partition.
`require_stable` (Kafka v7+, a read_committed consumer, KIP-447) answers
UNSTABLE_OFFSET_COMMIT for a partition whose offset an open transaction is committing. A
KIP-848 member's id and epoch (Kafka v9) are checked against its consumer group
(UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); an admin (no member id) always fetches.

Refusals, per group: no Describe on the group is GROUP_AUTHORIZATION_FAILED; no group
coordinator on this broker COORDINATOR_NOT_AVAILABLE. Then each named topic without Describe
answers TOPIC_AUTHORIZATION_FAILED for its partitions, after the others (as Kafka appends
them), and the all-partitions answer leaves such topics out without a word, as Kafka does.

Kafka v10 (KIP-848, Kafka 4.2) names topics by id (`by_id`): they are named through the
metadata cache first, an id no topic has is UNKNOWN_TOPIC_ID on each of its partitions, and
the answer gives each topic's id (the unknown ones last); the all-partitions answer leaves out
a topic the cache has no id for (deleted since its offsets were committed), which such a
client cannot name.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api import group
from protocol.errors import (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)

API = "OffsetFetch"
Wanted = tuple[tuple[str, tuple[int, ...]], ...]  # (topic, partitions)


@dataclass(frozen=True, slots=True)
class GroupWanted:
    group_id: str
    topics: Wanted | None  # None: every committed partition
    member_id: str | None = None  # a KIP-848 member's (Kafka v9); None: not a member
    member_epoch: int = -1
    topic_ids: tuple[uuid.UUID | None, ...] | None = None  # by id: `topics`' ids (names "")


@dataclass(frozen=True, slots=True)
class OffsetFetch:
    groups: tuple[GroupWanted, ...]
    require_stable: bool = False
    by_id: bool = False  # Kafka v10+: topics named by id, answered with their ids


@dataclass(frozen=True, slots=True)
class Fetched:
    partition: int
    offset: int  # -1: nothing committed
    metadata: str | None
    error_code: int
    leader_epoch: int = -1  # the committed leader epoch; -1: none


@dataclass(frozen=True, slots=True)
class FetchedTopic:
    name: str
    partitions: tuple[Fetched, ...]


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    group_id: str
    error_code: int
    topics: tuple[FetchedTopic, ...] = ()
    topic_ids: dict[str, uuid.UUID] | None = None  # by id: each answered topic's id
    unknown_ids: tuple[tuple[uuid.UUID | None, tuple[int, ...]], ...] = ()  # UNKNOWN_TOPIC_ID


@dataclass(frozen=True, slots=True)
class OffsetFetchResult:
    groups: tuple[GroupOffsets, ...]  # in the order asked


def run(ctx: BrokerContext, session: Session, req: OffsetFetch) -> OffsetFetchResult:
    if req.by_id:
        return OffsetFetchResult(tuple(_by_id(ctx, session, g, req.require_stable)
                                       for g in req.groups))  # fmt: skip
    return OffsetFetchResult(tuple(_group(ctx, session, g, req.require_stable) for g in req.groups))


def _by_id(ctx: BrokerContext, session: Session, g: GroupWanted, stable: bool) -> GroupOffsets:
    """v10+: the group's topics named through the metadata cache, then fetched by name; the
    answer's topics with their ids (an unknown id's partitions UNKNOWN_TOPIC_ID, last)."""
    cache = ctx.metadata
    if g.topics is None:
        found = _group(ctx, session, g, stable)
        known = {t.name: i for t in found.topics if (i := cache.topic_id(t.name)) is not None}
        kept = tuple(t for t in found.topics if t.name in known)
        return dataclasses.replace(found, topics=kept, topic_ids=known)
    named: list[tuple[str, tuple[int, ...]]] = []
    ids: dict[str, uuid.UUID] = {}
    unknown: list[tuple[uuid.UUID | None, tuple[int, ...]]] = []
    for topic_id, (_, partitions) in zip(g.topic_ids or (), g.topics, strict=True):
        name = None if topic_id is None else cache.topic_by_id(topic_id)
        if name is None or topic_id is None:
            unknown.append((topic_id, partitions))
        else:
            ids[name] = topic_id
            named.append((name, partitions))
    found = _group(ctx, session, dataclasses.replace(g, topics=tuple(named), topic_ids=None),
                   stable)  # fmt: skip
    if found.error_code:  # the group's error: no topic answered
        return found
    return dataclasses.replace(found, topic_ids=ids, unknown_ids=tuple(unknown))


def _group(ctx: BrokerContext, session: Session, g: GroupWanted, stable: bool) -> GroupOffsets:
    if not rules.allows(ctx, session, rules.DESCRIBE, rules.GROUP, g.group_id, api=API):
        return GroupOffsets(g.group_id, GroupAuthorizationFailedError.code)
    if g.topics is None:
        found = _fetch(ctx, g, None, stable)
        names = (t.name for t in found.topics)
        hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, names, api=API,
                              log_denied=False)  # fmt: skip
        return GroupOffsets(g.group_id, found.error_code,
                            tuple(t for t in found.topics if t.name not in hidden))  # fmt: skip
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC,
                           (t for t, _ in g.topics), api=API)  # fmt: skip
    found = _fetch(ctx, g, tuple(t for t in g.topics if t[0] not in refused), stable)
    code = TopicAuthorizationFailedError.code
    return GroupOffsets(g.group_id, found.error_code, found.topics + tuple(
        FetchedTopic(t, tuple(Fetched(p, -1, None, code) for p in ps))
        for t, ps in g.topics if t in refused
    ))  # fmt: skip


def _fetch(ctx: BrokerContext, g: GroupWanted, topics: Wanted | None, stable: bool) -> GroupOffsets:
    code = ctx.groups.consumer.check_fetch(g.group_id, g.member_id, g.member_epoch)
    if code:
        return GroupOffsets(g.group_id, code)
    wanted = None if topics is None else [group.TopicPartitions(t, list(ps)) for t, ps in topics]
    found = ctx.groups.offsets.fetch_offsets(group.OffsetFetchRequest(g.group_id, wanted), stable)
    return GroupOffsets(g.group_id, found.error_code, tuple(
        FetchedTopic(t.name, tuple(Fetched(p.partition, p.offset, p.metadata, p.error_code,
                                           p.leader_epoch) for p in t.partitions))
        for t in found.topics
    ))  # fmt: skip
