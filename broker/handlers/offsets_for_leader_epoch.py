"""OffsetsForLeaderEpoch: where each asked-for leader epoch ends in this leader's log.

Answered by the leader only (NOT_LEADER_FOR_PARTITION otherwise), after the same epoch fencing
as Fetch on `current_leader_epoch` (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH). The answer is
the log's epoch cache lookup (broker/log/epoch.py `end_offset_for`, Kafka's rules).
"""

from __future__ import annotations

from broker.context import BrokerContext
from broker.session import Session
from protocol.api.replication import (
    EpochEndOffset,
    OffsetForLeaderTopicResult,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.codec import Request


def handle(ctx: BrokerContext, request: Request, session: Session) -> OffsetsForLeaderEpochResponse:
    req: OffsetsForLeaderEpochRequest = request.body
    topics = []
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            code, epoch, end = ctx.replicas.end_offset_for_epoch(
                topic.name, p.partition, p.current_leader_epoch, p.leader_epoch
            )
            parts.append(EpochEndOffset(p.partition, code, epoch, end))
        topics.append(OffsetForLeaderTopicResult(topic.name, parts))
    return OffsetsForLeaderEpochResponse(topics)
