"""Fetch (1), v4-v17: the same reads and long polls as the native Fetch, log data sent from the
segment files (the response is laid out by protocol/kafka/fetch_response.py with FileSlices).

Kafka clients fetch as consumers whatever replica id they send (followers use the native door),
so only data below the high watermark is served. Fetch sessions (KIP-227, v7+) are the native
door's (broker/fetch_session.py): a client that asks for one (kafka-python does) gets
incremental answers; one that does not (librdkafka, aiokafka) is answered in full, as Kafka
answers session id 0. isolation_level read_committed (1) reads stop at the last stable offset,
which the response carries, with the aborted transactions of the records returned (KIP-98).

v13+ names topics by id (KIP-516): ids are turned into names through the metadata cache before
the native Fetch (whose sessions keep names) and back in the answer; a topic id no topic has
(deleted, or re-created under a new id) is answered UNKNOWN_TOPIC_ID on each of its partitions,
as Kafka does. In a session such partitions stay (FetchSession.unresolved), answered
UNKNOWN_TOPIC_ID in each incremental answer, until their id names a topic (one this broker
learns late, say): they then join the native session as if named anew and get their records,
since the client, which believes them in the session, will not name them again (`resolve`).
A partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries the current leader
(v12+) and, from v16, the leaders' endpoints (KIP-951, broker/leader_hints.py).
v15 (replica_state) and v17 (replica directory ids) concern followers only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, cast

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import fetch as native
from broker.handlers.kafka._adapt import as_native
from broker.leader_hints import HINTED, current_leader, endpoints
from broker.session import Session
from protocol.api.fetch import (
    CONSUMER_REPLICA_ID,
    FETCH,
    FINAL_EPOCH,
    INITIAL_EPOCH,
    NO_SESSION,
    READ_UNCOMMITTED,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
)
from protocol.codec import Chunk, FileSlice
from protocol.errors import UnknownTopicIdError
from protocol.kafka.codec import KafkaRequest, millis, response_header
from protocol.kafka.fetch_response import (
    TOPIC_IDS_FROM,
    FetchedPartition,
    NodeEndpoint,
    encode_fetch_response,
)

Unresolved = dict[uuid.UUID | None, dict[int, FetchPartition]]  # ids no topic has: partitions


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    by_id = request.header.api_version >= TOPIC_IDS_FROM
    unknown: Unresolved = {}
    topics: list[FetchTopic] = []
    for t in req.topics:
        name = _name(ctx, t, by_id)
        parts = [
            FetchPartition(p.partition, p.fetch_offset, p.partition_max_bytes,
                           getattr(p, "current_leader_epoch", -1))
            for p in t.partitions
        ]  # fmt: skip
        if name is None:
            unknown.setdefault(t.topic_id, {}).update((fp.partition, fp) for fp in parts)
        else:
            topics.append(FetchTopic(name, parts))
    forgotten = []
    gone: list[tuple[uuid.UUID | None, list[int]]] = []  # forgotten by an id no topic has
    for t in getattr(req, "forgotten_topics_data", ()):
        name, indexes = _name(ctx, t, by_id), [int(p) for p in t.partitions]
        if name is None:
            gone.append((t.topic_id, indexes))
        else:
            forgotten.append(ForgottenTopic(name, indexes))
    session_id = getattr(req, "session_id", NO_SESSION)
    epoch = getattr(req, "session_epoch", FINAL_EPOCH)
    if by_id and epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        held = ctx.replicas.sessions.get(session_id)
        if held is not None and held.epoch == epoch:  # the native Fetch will take it
            unknown = resolve(held.unresolved, unknown, gone, ctx.metadata.topic_by_id, topics)
    native_req = FetchRequest(
        CONSUMER_REPLICA_ID, millis(req.max_wait), req.min_bytes, req.max_bytes, topics,
        session_id, epoch, forgotten, getattr(req, "isolation_level", READ_UNCOMMITTED),
    )  # fmt: skip
    result = native.handle(ctx, as_native(FETCH, native_req, request), session)
    opens = by_id and epoch == INITIAL_EPOCH and bool(unknown)
    return then(result, lambda r: _answer(ctx, request, r, unknown, opens, session.listener))


def resolve(
    held: Unresolved,
    named: Unresolved,
    gone: list[tuple[uuid.UUID | None, list[int]]],
    topic_by_id: Callable[[uuid.UUID], str | None],
    topics: list[FetchTopic],
) -> Unresolved:
    """An incremental v13+ request through its session's unresolved partitions (`held`,
    updated): those it forgets (`gone`) leave, those it names by an unknown id (`named`) join,
    and those whose id now names a topic move to `topics`, so that the native session takes
    them as if the client named them now (Kafka resolves its null-named cached partitions on
    each request the same way). The still unresolved ones, answered UNKNOWN_TOPIC_ID."""
    for topic_id, indexes in gone:
        parts = held.get(topic_id)
        if parts is not None:
            for index in indexes:
                parts.pop(index, None)
            if not parts:
                del held[topic_id]
    for topic_id, parts in named.items():
        held.setdefault(topic_id, {}).update(parts)
    for topic_id in list(held):
        name = None if topic_id is None else topic_by_id(topic_id)
        if name is not None:
            topics.append(FetchTopic(name, list(held.pop(topic_id).values())))
    return {topic_id: dict(parts) for topic_id, parts in held.items()}


def _name(ctx: BrokerContext, t: Any, by_id: bool) -> str | None:
    if not by_id:
        return str(t.topic)
    return None if t.topic_id is None else ctx.metadata.topic_by_id(t.topic_id)


def _answer(
    ctx: BrokerContext,
    request: KafkaRequest,
    resp: FetchResponse,
    unknown: Unresolved,
    opens: bool = False,
    listener: str = "PLAINTEXT",
) -> list[Chunk]:
    """`opens`: a full v13+ request naming unknown ids; the session it opened keeps them."""
    if opens and resp.session_id != NO_SESSION:
        session = ctx.replicas.sessions.get(resp.session_id)
        if session is not None:
            session.unresolved = {topic_id: dict(parts) for topic_id, parts in unknown.items()}
    if resp.error_code != 0:
        unknown = {}  # a session error: the answer carries no partitions
    version = request.header.api_version
    cache = ctx.metadata
    leaders: set[int] = set()
    topics: list[tuple[str | uuid.UUID | None, list[FetchedPartition]]] = []
    for t in resp.topics:
        parts = []
        for p in t.partitions:
            hint = current_leader(cache, t.name, p.partition) if p.error_code in HINTED else None
            if hint is not None:
                leaders.add(hint[0])
            aborted = p.aborted_transactions
            parts.append(
                FetchedPartition(
                    p.partition, p.error_code, p.high_watermark, p.log_start_offset,
                    cast(bytes | FileSlice, p.records),  # bytes, or a FileSlice sent from the file
                    p.last_stable_offset,
                    None if aborted is None else [(a.producer_id, a.first_offset) for a in aborted],
                    hint,
                )
            )  # fmt: skip
        topics.append((cache.topic_id(t.name) if version >= TOPIC_IDS_FROM else t.name, parts))
    code = UnknownTopicIdError.code
    for topic_id, held in unknown.items():
        topics.append((topic_id, [FetchedPartition(i, code, -1, -1, b"") for i in held]))
    nodes = [NodeEndpoint(*e) for e in endpoints(cache, leaders, listener)]
    return encode_fetch_response(
        version, response_header(request), topics, resp.error_code,
        throttle_time_ms=resp.throttle_time_ms, session_id=resp.session_id, node_endpoints=nodes,
    )  # fmt: skip
