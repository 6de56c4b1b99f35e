"""ShareAcknowledge (KIP-932, Kafka only, v1-v2): a share consumer's acknowledgements (ACCEPT,
RELEASE, REJECT, GAP; RENEW from v2) of records it acquired, in its share session (epoch 0
may not open one: INVALID_SHARE_SESSION_EPOCH; -1 acknowledges and closes it, giving back
what the member still holds). Checks as ShareFetch's (share_requests.py); each partition's
error code is its acknowledgement's, answered once the share partitions' state is written
through the share coordinator (broker/share/manager.py), as Kafka answers. A partition
answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries its current leader, and the
answer the leaders' endpoints (KIP-951, share_requests.py `leader_hints`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from broker.context import BrokerContext
from broker.operations.share_requests import (
    NONE,
    Endpoint,
    PartitionIn,
    acknowledge,
    group_refusal,
    leader_hints,
    resolve,
)
from broker.session import Session

API = "ShareAcknowledge"


@dataclass(frozen=True, slots=True)
class ShareAcknowledge:
    group_id: str | None
    member_id: str | None
    session_epoch: int
    partitions: tuple[PartitionIn, ...]
    is_renew_ack: bool = False


@dataclass(frozen=True, slots=True)
class Acknowledged:
    topic_id: uuid.UUID
    partition: int
    error_code: int = NONE
    error_message: str | None = None
    current_leader: tuple[int, int] | None = None  # (id, epoch) with a leadership error


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeResult:
    error_code: int
    error_message: str | None = None
    lock_timeout_ms: int = 0
    partitions: tuple[Acknowledged, ...] = ()
    leader_endpoints: tuple[Endpoint, ...] = ()  # the hinted leaders' (share_requests.py)


async def run(
    ctx: BrokerContext, session: Session, req: ShareAcknowledge
) -> ShareAcknowledgeResult:
    refused = group_refusal(ctx, session, req.group_id, req.member_id, API)
    if refused is not None:
        return ShareAcknowledgeResult(refused.code, refused.message)
    assert req.group_id and req.member_id
    group, member = req.group_id, req.member_id
    names, bad = resolve(ctx, session, (p.topic_id for p in req.partitions), API)
    share = ctx.share
    opened = share.sessions.for_acknowledge((group, member), req.session_epoch,
                                            ctx.clock.monotonic_ms())  # fmt: skip
    lock_ms = share.settings(group).limits.record_lock_duration_ms
    if opened.error_code != NONE or opened.session is None:
        return ShareAcknowledgeResult(opened.error_code, None, lock_ms)
    acks = await acknowledge(ctx, group, member, req.partitions, names)
    out = []
    for p in req.partitions:
        why = bad.get(p.topic_id)
        if why is not None:
            out.append(Acknowledged(p.topic_id, p.partition, why.code, why.message))
        else:
            out.append(Acknowledged(p.topic_id, p.partition, acks.get((p.topic_id, p.partition),
                                                                      NONE)))  # fmt: skip
    if opened.closing:
        share.release_member(group, member, list(opened.session.parts))
        share.sessions.close((group, member))
    errored = [((a.topic_id, a.partition), names.get(a.topic_id, ""), a.error_code) for a in out]
    leaders, nodes = leader_hints(ctx, session, errored)
    out = [replace(a, current_leader=leaders.get((a.topic_id, a.partition))) for a in out]
    return ShareAcknowledgeResult(NONE, None, lock_ms, tuple(out), nodes)
