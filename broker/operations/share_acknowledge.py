"""ShareAcknowledge (KIP-932, Kafka only, v1-v2): a share consumer's acknowledgements (ACCEPT,
RELEASE, REJECT, GAP; RENEW from v2) of records it acquired, in its share session (epoch 0
may not open one: INVALID_SHARE_SESSION_EPOCH; -1 acknowledges and closes it, giving back
what the member still holds). Checks as ShareFetch's (share_requests.py); each partition's
error code is its acknowledgement's, answered once the share partitions' state is written
through the share coordinator (broker/share/manager.py), as Kafka answers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.share_requests import (
    NONE,
    PartitionIn,
    acknowledge,
    group_refusal,
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


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeResult:
    error_code: int
    error_message: str | None = None
    lock_timeout_ms: int = 0
    partitions: tuple[Acknowledged, ...] = ()


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
    return ShareAcknowledgeResult(NONE, None, lock_ms, tuple(out))
