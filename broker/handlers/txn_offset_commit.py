"""TxnOffsetCommit (28): a transactional producer commits a group's offsets inside its
transaction (KIP-98, with KIP-447's generation and member id checked as OffsetCommit checks
them). Sent to the group's coordinator, which appends them to `__consumer_offsets` as part of
the transaction: they become the group's offsets with the COMMIT marker, and are dropped at
ABORT. One error code for all the partitions."""

from __future__ import annotations

from dataclasses import replace

from broker.context import BrokerContext
from broker.handlers.txn_common import txn_group_refusal
from broker.security import rules
from broker.session import Session
from protocol.api.txn import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnPartitionResult,
    TxnTopicResult,
)
from protocol.codec import Request
from protocol.errors import CoordinatorNotAvailableError, TopicAuthorizationFailedError


async def handle(ctx: BrokerContext, request: Request, session: Session) -> TxnOffsetCommitResponse:
    req: TxnOffsetCommitRequest = request.body
    api = "TxnOffsetCommit"
    refused = txn_group_refusal(ctx, session, req.transactional_id, req.group_id, api)
    if refused:
        return TxnOffsetCommitResponse([
            TxnTopicResult(t.name, [TxnPartitionResult(p.partition, refused)
                                    for p in t.partitions])
            for t in req.topics
        ])  # fmt: skip
    denied = rules.denied(ctx, session, rules.READ, rules.TOPIC, (t.name for t in req.topics),
                          api=api)  # fmt: skip
    if denied:
        allowed = [t for t in req.topics if t.name not in denied]
        resp = TxnOffsetCommitResponse([])
        if allowed:  # checked again there, and allowed
            resp = await handle(ctx, replace(request, body=replace(req, topics=allowed)), session)
        code = TopicAuthorizationFailedError.code
        return TxnOffsetCommitResponse([*resp.topics, *(
            TxnTopicResult(t.name, [TxnPartitionResult(p.partition, code) for p in t.partitions])
            for t in req.topics if t.name in denied
        )])  # fmt: skip
    offsets = [
        (t.name, p.partition, p.committed_offset, p.metadata, p.leader_epoch)
        for t in req.topics for p in t.partitions
    ]  # fmt: skip
    if ctx.groups is None:
        code = CoordinatorNotAvailableError.code
    else:
        code = await ctx.groups.txn_commit(
            req.group_id, req.producer_id, req.producer_epoch, req.generation_id,
            req.member_id, offsets, req.group_instance_id,
        )  # fmt: skip
    return TxnOffsetCommitResponse([
        TxnTopicResult(t.name, [TxnPartitionResult(p.partition, code) for p in t.partitions])
        for t in req.topics
    ])  # fmt: skip
