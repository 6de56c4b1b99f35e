"""DescribeTopicPartitions (75), v0: Metadata's view of topics (the metadata cache), a page at a
time, as Kafka's DescribeTopicPartitionsRequestHandler (KIP-966).

Topics are taken in name order: those named (an unknown one answered UNKNOWN_TOPIC_OR_PARTITION)
or, for an empty list, every topic. A cursor (topic, partition) starts the page there: topics
before it are skipped, the cursor's topic starts at its partition. A page holds at most
min(response_partition_limit, 2000) partitions; when it fills inside a topic, next_cursor
points at the next partition, and when it fills at a topic's end and another topic follows,
at that topic's partition 0. A cursor naming a topic outside the list asked for, or a negative
partition, is INVALID_REQUEST on every topic named. Odradek has no eligible leader replicas
(KIP-966's ELR): both ELR lists are empty. Each topic carries its id (KIP-516) from the
metadata cache; the null id for one the controller has not given an id yet.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from protocol.api.metadata import PartitionMetadata, TopicMetadata
from protocol.errors import TopicAuthorizationFailedError, UnknownTopicOrPartitionError, for_name
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import DESCRIBE_TOPIC_PARTITIONS

MAX_PARTITIONS_PER_PAGE = 2000  # Kafka's max.request.partition.size.limit
NO_AUTHORIZED_OPERATIONS = -2147483648
InvalidRequestError = for_name("INVALID_REQUEST")


class Cursor(NamedTuple):
    topic: str
    partition: int


class PageEntry(NamedTuple):
    topic: str
    start: int  # the first partition index on this page
    end: int  # one past the last; start == end for an unknown topic or an empty slice
    known: bool


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


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    cls = response_class(DESCRIBE_TOPIC_PARTITIONS, request.header.api_version)
    cache = ctx.metadata
    named = sorted({t.name for t in req.topics})
    cursor = (
        None if req.cursor is None else Cursor(req.cursor.topic_name, req.cursor.partition_index)
    )
    if cursor is not None and (cursor.partition < 0 or (named and cursor.topic not in named)):
        refused = tuple(_refused(cls, name) for name in named)
        return make(cls, throttle_time=0, topics=refused, next_cursor=None)
    names = named or sorted(cache.topics)  # all topics: unknown ones cannot appear
    hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, names,
                          api="DescribeTopicPartitions", log_denied=bool(named))  # fmt: skip
    names = [n for n in names if n not in hidden]
    counts = [(n, len(cache.topics[n]) if cache.has_topic(n) else None) for n in names]
    entries, next_cursor = page(counts, cursor, req.response_partition_limit)
    described = {t.name: t for t in cache.describe([e.topic for e in entries])}
    topics = tuple(
        _topic(cls, described[e.topic], e, cache.topic_id(e.topic),
               rules.authorized_operations(ctx, session, rules.TOPIC, e.topic))
        for e in entries
    ) + tuple(_denied(cls, name) for name in named if name in hidden)  # fmt: skip
    nxt = None
    if next_cursor is not None:
        nxt = make(nested(cls, "Cursor"), topic_name=next_cursor.topic,
                   partition_index=next_cursor.partition)  # fmt: skip
    return make(cls, throttle_time=0, topics=topics, next_cursor=nxt)


def _topic(
    cls: Any, t: TopicMetadata, entry: PageEntry, topic_id: uuid.UUID | None, ops: int
) -> Any:
    code = t.error_code if entry.known else UnknownTopicOrPartitionError.code
    parts = tuple(
        _partition(cls, p) for p in t.partitions if entry.start <= p.partition < entry.end
    )
    return make(
        nested(cls, "DescribeTopicPartitionsResponseTopic"), error_code=code, name=t.name,
        topic_id=topic_id, is_internal=t.name == OFFSETS_TOPIC or t.is_internal,
        partitions=parts, topic_authorized_operations=ops,
    )  # fmt: skip


def _denied(cls: Any, name: str) -> Any:
    """A named topic the principal may not Describe: TOPIC_AUTHORIZATION_FAILED, no id."""
    return make(
        nested(cls, "DescribeTopicPartitionsResponseTopic"),
        error_code=TopicAuthorizationFailedError.code, name=name, topic_id=None,
        is_internal=False, partitions=(), topic_authorized_operations=NO_AUTHORIZED_OPERATIONS,
    )  # fmt: skip


def _partition(cls: Any, p: PartitionMetadata) -> Any:
    return make(
        nested(cls, "DescribeTopicPartitionsResponsePartition"), error_code=p.error_code,
        partition_index=p.partition, leader_id=p.leader, leader_epoch=p.leader_epoch,
        replica_nodes=tuple(p.replicas), isr_nodes=tuple(p.isr), eligible_leader_replicas=(),
        last_known_elr=(), offline_replicas=tuple(p.offline_replicas),
    )  # fmt: skip


def _refused(cls: Any, name: str) -> Any:
    return make(
        nested(cls, "DescribeTopicPartitionsResponseTopic"), error_code=InvalidRequestError.code,
        name=name, topic_id=None, is_internal=False, partitions=(),
        topic_authorized_operations=NO_AUTHORIZED_OPERATIONS,
    )  # fmt: skip
