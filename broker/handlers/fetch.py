"""Fetch: many partitions per request, answered from the segment files.

Reads what is there at once; when that is at least `min_bytes` (or `max_wait_ms` is 0, or a
partition has an error) it answers without a task. Otherwise it long-polls in the replica
manager's purgatory (broker/delayed_fetch.py) and returns a `Deferred` (broker/deferred.py):
the append that satisfies it completes it synchronously, and the server writes the answer in
that same event-loop iteration (no task, no future hop). Records of a read above
SMALL_READ_BYTES (16 KiB, broker/partition_read.py) are `FileSlice`s: the server sends them
with sendfile after the response header (fetch is in handlers.CHUNKED); smaller reads are read
into memory as the fetch reads, and go out in one write with the response around them. A
segment file shorter than the index says, found then, is an I/O error that takes the log
directory offline (the read and the index come from the same loop pass, with nothing between
them that could truncate the file).

Consumers (replica_id -1) read below the high watermark. Followers (replica_id = their broker
id, with the leadership epoch they follow as current_leader_epoch: older -> FENCED_LEADER_EPOCH,
newer -> UNKNOWN_LEADER_EPOCH) read up to the log end; their fetch offset tells the leader their
log end offset (HW, ISR), and their long poll wakes on appends rather than on HW moves.
Followers fetch in sessions (broker/fetch_session.py, KIP-227): each request names only the
partitions that moved, and the answer only those with something new.

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
from dataclasses import replace
from typing import cast

from broker.context import BrokerContext
from broker.deferred import Deferred
from broker.fetch_session import FetchContext
from broker.partition_read import PartitionRead, fetch_satisfied
from broker.quota.manager import session_identity
from broker.security import rules
from broker.session import Session
from protocol.api.fetch import (
    NO_SESSION,
    AbortedTransaction,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
)
from protocol.codec import Request
from protocol.errors import (
    FetchSessionIdNotFoundError,
    InvalidFetchSessionEpochError,
    TopicAuthorizationFailedError,
)
from protocol.schema import Records


def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> FetchResponse | Deferred[FetchResponse]:
    req: FetchRequest = request.body
    if req.replica_id < 0 and ctx.quotas.fetch.enabled:
        req = _quota_capped(ctx, req, session)
    try:
        context = ctx.replicas.fetch_context(req)
    except (FetchSessionIdNotFoundError, InvalidFetchSessionEpochError) as exc:
        return FetchResponse(exc.code, [])
    if ctx.authorizer is not None:
        context, refused = _authorized(ctx, req, context, session)
        if refused:  # an error to report: answered at once, as any partition error is
            reads = ctx.replicas.read_all(req, context) + refused
            return _answer(ctx, req, context, reads, session)
    reads = ctx.replicas.read_all(req, context)
    if req.max_wait_ms > 0 and not fetch_satisfied(reads, req.min_bytes):
        parked = ctx.replicas.park_fetch(req, context)
        if parked is not None:
            return parked.map(lambda later: _answer(ctx, req, context, later, session))
    return _answer(ctx, req, context, reads, session)


def _authorized(
    ctx: BrokerContext, req: FetchRequest, context: FetchContext, session: Session
) -> tuple[FetchContext, list[PartitionRead]]:
    """The context without the partitions the principal may not fetch, and their answers."""
    if req.replica_id >= 0:  # a follower
        if rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api="Fetch"):
            return context, []
        refused = frozenset(t for t, _ in context.parts)
    else:
        topics = {t for t, _ in context.parts}
        refused = rules.denied(ctx, session, rules.READ, rules.TOPIC, topics, api="Fetch")
    if not refused:
        return context, []
    code = TopicAuthorizationFailedError.code
    reads = [PartitionRead(t, fp.partition, code) for t, fp in context.parts if t in refused]
    kept = [(t, fp) for t, fp in context.parts if t not in refused]
    return replace(context, parts=kept), reads


def _answer(
    ctx: BrokerContext, req: FetchRequest, context: FetchContext, reads: list[PartitionRead],
    session: Session | None = None,
) -> FetchResponse:  # fmt: skip
    throttle_ms = 0
    if session is not None and req.replica_id < 0 and ctx.quotas.fetch.enabled:  # consumers
        throttle_ms, empty = _throttle(ctx, session, reads)
        if empty:  # Kafka's throttled fetch: nothing in it
            return _throttled(ctx, context, throttle_ms)
    answered = context.answer(reads)
    ctx.replicas.traffic.fetched(req.replica_id, answered)  # bytes out (metrics)
    response = build_response(answered, context.session_id)
    if throttle_ms:
        response = dataclasses.replace(response, throttle_time_ms=throttle_ms)
    return response


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


def build_response(reads: list[PartitionRead], session_id: int = NO_SESSION) -> FetchResponse:
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
    return FetchResponse(0, list(topics.values()), 0, session_id)
