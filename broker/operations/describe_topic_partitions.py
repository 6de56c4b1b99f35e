"""DescribeTopicPartitions (Kafka door only): Metadata's view of topics (the metadata cache),
a page at a time, as Kafka's DescribeTopicPartitionsRequestHandler (KIP-966).

Topics are taken in name order: those named (an unknown one answered UNKNOWN_TOPIC_OR_PARTITION)
or, for none named, every topic. A cursor (topic, partition) starts the page there: topics
before it are skipped, the cursor's topic starts at its partition. A page holds at most
min(limit, 2000) partitions; when it fills inside a topic, the next cursor points at the next
partition, and when it fills at a topic's end and another topic follows, at that topic's
partition 0. A cursor naming a topic outside the list asked for, or a negative partition, is
INVALID_REQUEST on every topic named. Odradek has no eligible leader replicas (KIP-966's ELR):
the codec writes both ELR lists empty. Each topic carries its id (KIP-516) from the metadata
cache (None for one the controller has not given an id yet) and the principal's operations
on it (KIP-430).

ACLs: every topic means those the principal may Describe (the others left out, their denials
not logged); a named one it may not is TOPIC_AUTHORIZATION_FAILED, without its id, after the
others.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.metadata import INTERNAL_TOPICS, PartitionMetadata
from protocol.errors import TopicAuthorizationFailedError, UnknownTopicOrPartitionError, for_name

API = "DescribeTopicPartitions"
MAX_PARTITIONS_PER_PAGE = 2000  # Kafka's max.request.partition.size.limit
NO_OPERATIONS = rules.NOT_ASKED
InvalidRequestError = for_name("INVALID_REQUEST")


class Cursor(NamedTuple):
    topic: str
    partition: int


class PageEntry(NamedTuple):
    topic: str
    start: int  # the first partition index on this page
    end: int  # one past the last; start == end for an unknown topic or an empty slice
    known: bool


@dataclass(frozen=True, slots=True)
class DescribeTopicPartitions:
    topics: tuple[str, ...]  # empty: every topic
    cursor: Cursor | None
    limit: int  # partitions on the page (at most MAX_PARTITIONS_PER_PAGE)


@dataclass(frozen=True, slots=True)
class DescribedTopic:
    error_code: int
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool = False
    partitions: tuple[PartitionMetadata, ...] = ()
    authorized_operations: int = NO_OPERATIONS


@dataclass(frozen=True, slots=True)
class DescribeTopicPartitionsResult:
    topics: tuple[DescribedTopic, ...]
    next_cursor: Cursor | None  # None: the last page


def page(
    topics: Sequence[tuple[str, int | None]], cursor: Cursor | None, limit: int
) -> tuple[list[PageEntry], Cursor | None]:
    """One page of `topics` ((name, partition count or None when unknown), in name order) from
    `cursor`, at most `limit` partitions; the entries and the next cursor (None: the last page)."""
    remaining = max(0, min(limit, MAX_PARTITIONS_PER_PAGE))
    entries: list[PageEntry] = []
    for name, count in topics:
        if cursor is not None and name < cursor.topic:
            continue
        if remaining == 0:
            return entries, (Cursor(name, 0) if count is not None else None)
        if count is None:
            entries.append(PageEntry(name, 0, 0, False))
            continue
        start = cursor.partition if cursor is not None and name == cursor.topic else 0
        end = min(count, start + remaining)
        entries.append(PageEntry(name, start, max(start, end), True))
        if end < count:
            return entries, Cursor(name, end)
        remaining -= max(0, end - start)
    return entries, None


def run(
    ctx: BrokerContext, session: Session, req: DescribeTopicPartitions
) -> DescribeTopicPartitionsResult:
    cache = ctx.metadata
    named = sorted(set(req.topics))
    cursor = req.cursor
    if cursor is not None and (cursor.partition < 0 or (named and cursor.topic not in named)):
        refused = tuple(DescribedTopic(InvalidRequestError.code, n, None) for n in named)
        return DescribeTopicPartitionsResult(refused, None)
    names = named or sorted(cache.topics)  # all topics: unknown ones cannot appear
    hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, names, api=API,
                          log_denied=bool(named))  # fmt: skip
    names = [n for n in names if n not in hidden]
    counts = [(n, len(cache.topics[n]) if cache.has_topic(n) else None) for n in names]
    entries, next_cursor = page(counts, cursor, req.limit)
    described = {t.name: t for t in cache.describe([e.topic for e in entries])}
    out = []
    for e in entries:
        t = described[e.topic]
        out.append(DescribedTopic(
            t.error_code if e.known else UnknownTopicOrPartitionError.code, e.topic,
            cache.topic_id(e.topic), t.is_internal or e.topic in INTERNAL_TOPICS,
            tuple(p for p in t.partitions if e.start <= p.partition < e.end),
            rules.authorized_operations(ctx, session, rules.TOPIC, e.topic),
        ))  # fmt: skip
    code = TopicAuthorizationFailedError.code
    out.extend(DescribedTopic(code, n, None) for n in named if n in hidden)
    return DescribeTopicPartitionsResult(tuple(out), next_cursor)
