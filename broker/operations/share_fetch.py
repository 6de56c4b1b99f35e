"""ShareFetch (KIP-932, Kafka only, v1-v2): a share consumer's fetch from a partition leader,
in its share session (broker/share/sessions.py), carrying the acknowledgements of what it
processed (piggy-backed) and answering the records it acquired, with their delivery counts.

Order, as Kafka's: the group and topic checks (share_requests.py), the session (its epoch's
errors are the top-level code), the acknowledgements (each partition's
`acknowledge_error_code`), then, unless the request closes the session (epoch -1: the
member's acquired records go back) or only renews locks (`is_renew_ack`, v2), the fetch over
the session's partitions, waiting up to `max_wait_ms` for something to acquire. The answer
lists the partitions with records acquired, an error, or acknowledgements; one answered
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries its current leader, and the answer the
leaders' endpoints (KIP-951, share_requests.py `leader_hints`).

The connection that opens a share session (epoch 0) ends it when it closes: the member's
acquired records go back at once (SharePartitionManager.connection_closed), as Kafka's
ShareSessionCache's ConnectionDisconnectListener, so a member that dies hands its records on
without waiting for their lock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from functools import partial

from broker.context import BrokerContext
from broker.operations.share_requests import (
    NONE,
    Endpoint,
    PartitionIn,
    Refused,
    TopicPart,
    acknowledge,
    group_refusal,
    leader_hints,
    resolve,
)
from broker.session import Session
from broker.share.share_partition import Acquired

API = "ShareFetch"


@dataclass(frozen=True, slots=True)
class ShareFetch:
    group_id: str | None
    member_id: str | None
    session_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    partitions: tuple[PartitionIn, ...]  # to add to the session, with their acknowledgements
    forgotten: tuple[TopicPart, ...] = ()
    is_renew_ack: bool = False


@dataclass(frozen=True, slots=True)
class PartitionOut:
    topic_id: uuid.UUID
    partition: int
    error_code: int = NONE
    error_message: str | None = None
    acknowledge_error_code: int = NONE
    records: bytes = b""
    acquired: tuple[Acquired, ...] = ()
    current_leader: tuple[int, int] | None = None  # (id, epoch) with a leadership error


@dataclass(frozen=True, slots=True)
class ShareFetchResult:
    error_code: int
    error_message: str | None = None
    lock_timeout_ms: int = 0
    partitions: tuple[PartitionOut, ...] = ()  # grouped by topic by the codec
    leader_endpoints: tuple[Endpoint, ...] = ()  # the hinted leaders' (share_requests.py)


async def run(ctx: BrokerContext, session: Session, req: ShareFetch) -> ShareFetchResult:
    refused = group_refusal(ctx, session, req.group_id, req.member_id, API)
    if refused is not None:
        return ShareFetchResult(refused.code, refused.message)
    assert req.group_id and req.member_id
    group, member = req.group_id, req.member_id
    ids = [p.topic_id for p in req.partitions] + [t for t, _ in req.forgotten]
    names, bad = resolve(ctx, session, ids, API)
    share = ctx.share
    opened = share.sessions.for_fetch(
        (group, member), req.session_epoch,
        [(names[p.topic_id], p.partition) for p in req.partitions if p.topic_id in names],
        [(names[t], p) for t, p in req.forgotten if t in names],
        any(p.acks for p in req.partitions), ctx.clock.monotonic_ms(), session,
    )  # fmt: skip
    if opened.session is not None and req.session_epoch == 0:  # opened on this connection
        key = (group, member)
        session.when_closed(("share", key), partial(share.connection_closed, key, session))
    lock_ms = share.settings(group).limits.record_lock_duration_ms
    if opened.error_code != NONE or opened.session is None:
        return ShareFetchResult(opened.error_code, None, lock_ms)
    acks = await acknowledge(ctx, group, member, req.partitions, names)
    out: dict[TopicPart, PartitionOut] = {}
    for p in req.partitions:
        if p.topic_id in bad:
            out[(p.topic_id, p.partition)] = _refused(p.topic_id, p.partition, bad[p.topic_id])
    for (tid, partition), code in acks.items():
        out[(tid, partition)] = PartitionOut(tid, partition, acknowledge_error_code=code)
    parts = list(opened.session.parts)
    if opened.closing:
        share.release_member(group, member, parts)
        share.sessions.close((group, member))
        return _hinted(ctx, session, lock_ms, out, names)
    if not req.is_renew_ack:
        reads = await share.fetch(group, member, parts, req.max_wait_ms, req.max_bytes,
                                  max(1, req.max_records))  # fmt: skip
        ids_by_name = {n: t for t, n in names.items()}
        for r in reads:
            topic_id = ids_by_name.get(r.topic) or ctx.metadata.topic_id(r.topic)
            if topic_id is None:
                continue
            ack_code = acks.get((topic_id, r.partition), NONE)
            out[(topic_id, r.partition)] = PartitionOut(
                topic_id, r.partition, r.error_code, r.error_message, ack_code, r.records,
                tuple(r.acquired),
            )  # fmt: skip
    return _hinted(ctx, session, lock_ms, out, names)


def _hinted(
    ctx: BrokerContext, session: Session, lock_ms: int, out: dict[TopicPart, PartitionOut],
    names: dict[uuid.UUID, str],
) -> ShareFetchResult:  # fmt: skip
    """The answer, with the current leader of each partition answered a leadership error."""
    errored = [(k, names.get(k[0], ""), p.error_code or p.acknowledge_error_code)
               for k, p in out.items()]  # fmt: skip
    leaders, nodes = leader_hints(ctx, session, errored)
    for key, leader in leaders.items():
        out[key] = replace(out[key], current_leader=leader)
    return ShareFetchResult(NONE, None, lock_ms, tuple(out.values()), nodes)


def _refused(topic_id: uuid.UUID, partition: int, why: Refused) -> PartitionOut:
    return PartitionOut(topic_id, partition, why.code, why.message, why.code)
