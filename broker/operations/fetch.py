"""Fetch: many partitions per request, answered from the segment files.

Reads what is there at once; when that is at least `min_bytes` (or `max_wait_ms` is 0, or a
partition has an error) it answers without a task. Otherwise it long-polls in the replica
manager's purgatory (broker/delayed_fetch.py) and returns a `Deferred` (broker/deferred.py):
the append that satisfies it completes it synchronously, and the server writes the answer in
that same event-loop iteration (no task, no future hop). Records of a read above
SMALL_READ_BYTES (16 KiB, broker/partition_read.py) are `FileSlice`s: the server sends them
with sendfile after the response header; smaller reads are read into memory as the fetch
reads, and go out in one write with the response around them. Nothing here copies or decodes
them. A segment file shorter than the index says, found then, is an I/O error that takes the
log directory offline (the read and the index come from the same loop pass, with nothing
between them that could truncate the file).

Consumers (replica_id -1; a Kafka client is always one) read below the high watermark, or the
last stable offset with read_committed (KIP-98, the answer then names the aborted transactions
of the records returned). Followers (replica_id = their broker id, with the leadership epoch
they follow as current_leader_epoch: older -> FENCED_LEADER_EPOCH, newer ->
UNKNOWN_LEADER_EPOCH) read up to the log end; their fetch offset tells the leader their log end
offset (HW, ISR), and their long poll wakes on appends rather than on HW moves. Fetch sessions
(broker/fetch_session.py, KIP-227): each request of a session names only the partitions that
moved, and the answer only those with something new.

Topics named by id (Kafka v13+, KIP-516) are named through the metadata cache here, and the
answer gives each topic's id; an id no topic has (deleted, re-created under a new id) is
answered UNKNOWN_TOPIC_ID on each of its partitions, as Kafka does. In a session such
partitions stay (FetchSession.unresolved), answered UNKNOWN_TOPIC_ID in each incremental answer,
until their id names a topic (one this broker learns late, say): they then join the session as
if named anew and get their records, since the client, which believes them in the session,
will not name them again (`resolve`). A session's topic deleted, or deleted and re-created
under a new id, leaves the session's topics for its `unresolved` ones under the id the client
named it by (FetchSession.unname): it is answered UNKNOWN_TOPIC_ID under that id, as Kafka
answers, not under the new topic's id, until the client forgets it. Where the request's door
can say it (`leader_hints`), a partition answered NOT_LEADER_OR_FOLLOWER or
FENCED_LEADER_EPOCH carries its current leader, and the result the endpoints of those leaders
on the session's listener (KIP-951).

Under a consumer_byte_rate quota (broker/quota/) a consumer's fetch asks for at most what the
quota window allows at once (Kafka's getMaxValueInQuotaWindow), and the bytes it read are
counted. A fetch they throttle is answered as Kafka answers it: empty (no partitions; an
incremental fetch session left as it was, so the same records come next time, and no session
begun by a full fetch), its bytes taken back, throttle_time_ms set, and the connection muted
once the answer is sent (broker/server.py). One exception: a first batch larger than the whole
window (it comes whole, as any first batch does) is sent with its throttle, since recording it
would throttle every later try too and the consumer would never get past it; Kafka answers
that one empty for good.

ACLs (broker/security/rules.py): a follower needs ClusterAction on the cluster, a consumer Read
on each topic; the partitions refused are answered TOPIC_AUTHORIZATION_FAILED, at once, beside
what the others read (the session's other partitions still read).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

from broker.context import BrokerContext
from broker.deferred import Deferred
from broker.fetch_session import FetchContext
from broker.leader_hints import HINTED, current_leader, endpoints
from broker.partition_read import PartitionRead, fetch_satisfied
from broker.quota.manager import session_identity
from broker.security import rules
from broker.session import Session
from protocol.api.fetch import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    NO_SESSION,
    AbortedTransaction,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    FetchTopicResponse,
    ForgottenTopic,
)
from protocol.errors import (
    FetchSessionIdNotFoundError,
    InvalidFetchSessionEpochError,
    TopicAuthorizationFailedError,
)
from protocol.schema import Records

API = "Fetch"
Unresolved = dict[uuid.UUID | None, dict[int, FetchPartition]]  # ids no topic has: partitions
Endpoint = tuple[int, str, int, str | None]  # (node id, host, port, rack)


@dataclass(frozen=True, slots=True)
class Fetch:
    """`request` is what the replica manager reads (broker/replica_manager.py), with the
    topics named; a Kafka v13+ request names them by id instead, in `by_id` (its `request`
    then has no topics and no forgotten ones of its own)."""

    request: FetchRequest
    by_id: tuple[tuple[uuid.UUID | None, tuple[FetchPartition, ...]], ...] | None = None
    forgotten_by_id: tuple[tuple[uuid.UUID | None, tuple[int, ...]], ...] = ()
    leader_hints: bool = False  # the door can carry KIP-951's current leader


@dataclass(frozen=True, slots=True)
class FetchResult:
    response: FetchResponse  # by topic name; records as read: bytes, or FileSlices to send
    topic_ids: dict[str, uuid.UUID | None] | None = None  # by_id: each answered topic's id
    unknown_ids: tuple[tuple[uuid.UUID | None, tuple[int, ...]], ...] = ()  # UNKNOWN_TOPIC_ID
    leaders: dict[tuple[str, int], tuple[int, int]] | None = None  # (id, epoch) hinted
    leader_endpoints: tuple[Endpoint, ...] = ()


def run(ctx: BrokerContext, session: Session, fetch: Fetch) -> FetchResult | Deferred[FetchResult]:
    req, opens = fetch.request, False
    unknown: Unresolved = {}
    if fetch.by_id is not None:
        req, unknown = _named(ctx, fetch)
        opens = req.session_epoch == INITIAL_EPOCH and bool(unknown)
    if req.replica_id < 0 and ctx.quotas.fetch.enabled:
        req = _quota_capped(ctx, req, session)
    try:
        context = ctx.replicas.fetch_context(req)
    except (FetchSessionIdNotFoundError, InvalidFetchSessionEpochError) as exc:
        return FetchResult(FetchResponse(exc.code, []))
    if fetch.by_id is not None and context.session is not None:  # the ids the client knows
        ids, topic_id = context.session.topic_ids, ctx.metadata.topic_id
        for t in req.topics:  # named from their ids just now
            named = topic_id(t.name)
            if named is not None:
                ids[t.name] = named
    answer = _Answer(ctx, session, fetch, req, context, unknown, opens)
    if ctx.authorizer is not None:
        context, refused = _authorized(ctx, req, context, session)
        if refused:  # an error to report: answered at once, as any partition error is
            answer.context = context
            return answer(ctx.replicas.read_all(req, context) + refused)
    reads = ctx.replicas.read_all(req, context)
    if req.max_wait_ms > 0 and not fetch_satisfied(reads, req.min_bytes):
        parked = ctx.replicas.park_fetch(req, context)
        if parked is not None:
            return parked.map(answer)
    return answer(reads)


def _named(ctx: BrokerContext, fetch: Fetch) -> tuple[FetchRequest, Unresolved]:
    """The request with its topics named through the metadata cache, and the partitions of
    ids no topic has (those of the session too, for an incremental request)."""
    topic_by_id = ctx.metadata.topic_by_id
    unknown: Unresolved = {}
    topics: list[FetchTopic] = []
    for topic_id, parts in fetch.by_id or ():
        name = None if topic_id is None else topic_by_id(topic_id)
        if name is None:
            unknown.setdefault(topic_id, {}).update((fp.partition, fp) for fp in parts)
        else:
            topics.append(FetchTopic(name, list(parts)))
    forgotten, gone = [], []
    for topic_id, indexes in fetch.forgotten_by_id:
        name = None if topic_id is None else topic_by_id(topic_id)
        if name is None:
            gone.append((topic_id, list(indexes)))
        else:
            forgotten.append(ForgottenTopic(name, list(indexes)))
    req = fetch.request
    if req.session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        held = ctx.replicas.sessions.get(req.session_id)
        if held is not None and held.epoch == req.session_epoch:  # fetch_context will take it
            held.unname(ctx.metadata.topic_id)
            unknown = resolve(held.unresolved, unknown, gone, topic_by_id, topics)
    return replace(req, topics=topics, forgotten=forgotten), unknown


def resolve(
    held: Unresolved,
    named: Unresolved,
    gone: list[tuple[uuid.UUID | None, list[int]]],
    topic_by_id: Callable[[uuid.UUID], str | None],
    topics: list[FetchTopic],
) -> Unresolved:
    """An incremental v13+ request through its session's unresolved partitions (`held`,
    updated): those it forgets (`gone`) leave, those it names by an unknown id (`named`) join,
    and those whose id now names a topic move to `topics`, so that the session takes them as
    if the client named them now (Kafka resolves its null-named cached partitions on each
    request the same way). The still unresolved ones, answered UNKNOWN_TOPIC_ID."""
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


def _authorized(
    ctx: BrokerContext, req: FetchRequest, context: FetchContext, session: Session
) -> tuple[FetchContext, list[PartitionRead]]:
    """The context without the partitions the principal may not fetch, and their answers."""
    if req.replica_id >= 0:  # a follower
        if rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api=API):
            return context, []
        refused = frozenset(t for t, _ in context.parts)
    else:
        topics = {t for t, _ in context.parts}
        refused = rules.denied(ctx, session, rules.READ, rules.TOPIC, topics, api=API)
    if not refused:
        return context, []
    code = TopicAuthorizationFailedError.code
    reads = [PartitionRead(t, fp.partition, code) for t, fp in context.parts if t in refused]
    kept = [(t, fp) for t, fp in context.parts if t not in refused]
    return replace(context, parts=kept), reads


class _Answer:
    """The result of the reads, now or when the parked fetch completes."""

    __slots__ = ("context", "ctx", "fetch", "opens", "req", "session", "unknown")

    def __init__(self, ctx: BrokerContext, session: Session, fetch: Fetch, req: FetchRequest,
                 context: FetchContext, unknown: Unresolved, opens: bool) -> None:  # fmt: skip
        self.ctx, self.session, self.fetch, self.req = ctx, session, fetch, req
        self.context, self.unknown, self.opens = context, unknown, opens

    def __call__(self, reads: list[PartitionRead]) -> FetchResult:
        ctx, req, context = self.ctx, self.req, self.context
        throttle_ms = 0
        if req.replica_id < 0 and ctx.quotas.fetch.enabled:  # consumers
            throttle_ms, empty = _throttle(ctx, self.session, reads)
            if empty:  # Kafka's throttled fetch: nothing in it
                return FetchResult(_throttled(ctx, context, throttle_ms))
        answered = context.answer(reads)
        ctx.replicas.traffic.fetched(req.replica_id, answered)  # bytes out (metrics)
        response = build_response(answered, context.session_id, throttle_ms)
        if self.fetch.by_id is None and not self.fetch.leader_hints:
            return FetchResult(response)  # the native door: the response is all there is
        return self._with_ids_and_hints(response)

    def _with_ids_and_hints(self, response: FetchResponse) -> FetchResult:
        cache, unknown = self.ctx.metadata, self.unknown
        if self.opens and response.session_id != NO_SESSION:  # the session keeps them
            held = self.ctx.replicas.sessions.get(response.session_id)
            if held is not None:
                held.unresolved = {topic_id: dict(parts) for topic_id, parts in unknown.items()}
        leaders: dict[tuple[str, int], tuple[int, int]] = {}
        if self.fetch.leader_hints:
            for t in response.topics:
                for p in t.partitions:
                    if p.error_code in HINTED:  # looked up only on the error path
                        hint = current_leader(cache, t.name, p.partition)
                        if hint is not None:
                            leaders[(t.name, p.partition)] = hint
        ids = None
        if self.fetch.by_id is not None:
            ids = {t.name: cache.topic_id(t.name) for t in response.topics}
        hinted = {leader for leader, _ in leaders.values()}
        nodes = tuple(endpoints(cache, hinted, self.session.listener)) if hinted else ()
        gone = tuple((topic_id, tuple(parts)) for topic_id, parts in unknown.items())
        if response.error_code:  # a session error: the answer carries no partitions
            gone = ()
        return FetchResult(response, ids, gone, leaders, nodes)


def _throttled(ctx: BrokerContext, context: FetchContext, throttle_ms: int) -> FetchResponse:
    """Kafka's empty throttled answer. An incremental session stays as it was (the fetcher
    asks again from the same offsets); a session this full fetch would have begun is not
    begun (Kafka's FullFetchContext answers INVALID_SESSION_ID, and the Java client starts
    over with a full fetch after an empty throttled full answer)."""
    if context.session is None or context.incremental:
        return FetchResponse(0, [], throttle_ms, context.session_id)
    ctx.replicas.sessions.forget(context.session.id)
    return FetchResponse(0, [], throttle_ms, NO_SESSION)


def _throttle(ctx: BrokerContext, session: Session, reads: list[PartitionRead]) -> tuple[int, bool]:
    """Count a consumer's read against its quota: (throttle ms, whether to answer empty). An
    empty answer's bytes are taken back (KafkaApis.handleFetchRequest); one batch over the
    whole window is sent with its throttle."""
    nbytes = sum(r.size_bytes for r in reads)
    now_ms = ctx.clock.monotonic_ms()
    throttle_ms = ctx.quotas.fetched(session, nbytes, now_ms)
    if not throttle_ms:
        return 0, False
    user, client_id = session_identity(session)
    window = ctx.quotas.fetch.max_value_in_window(user, client_id)
    if window is not None and nbytes > window:
        return throttle_ms, False
    ctx.quotas.fetch.unrecord(user, client_id, nbytes, now_ms)
    return throttle_ms, True


def _quota_capped(ctx: BrokerContext, req: FetchRequest, session: Session) -> FetchRequest:
    """Kafka's fetch under a consumer_byte_rate: at most what the quota window allows at once
    (ClientQuotaManager.getMaxValueInQuotaWindow; a first batch larger than that still comes)."""
    user, client_id = session_identity(session)
    cap = ctx.quotas.fetch.max_value_in_window(user, client_id)
    if cap is None or cap >= req.max_bytes:
        return req
    return dataclasses.replace(req, max_bytes=max(1, int(cap)))


def build_response(
    reads: list[PartitionRead], session_id: int = NO_SESSION, throttle_ms: int = 0
) -> FetchResponse:
    topics: dict[str, FetchTopicResponse] = {}  # a session's order may interleave topics
    topic: FetchTopicResponse | None = None
    for r in reads:
        if topic is None or topic.name != r.topic:
            topic = topics.get(r.topic)
            if topic is None:
                topic = topics[r.topic] = FetchTopicResponse(r.topic, [])
        topic.partitions.append(
            FetchPartitionResponse(
                r.partition,
                r.error_code,
                r.high_watermark,
                r.log_start_offset,
                r.log_end_offset,
                cast(Records, r.records),  # bytes, or a FileSlice the server sends from disk
                r.last_stable_offset,
                None if r.aborted is None else [AbortedTransaction(*a) for a in r.aborted],
            )
        )
    return FetchResponse(0, list(topics.values()), throttle_ms, session_id)
