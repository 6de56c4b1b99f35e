"""OffsetsForLeaderEpoch: where each asked-for leader epoch ends in this leader's log.

Answered by the leader only (NOT_LEADER_FOR_PARTITION otherwise), after the same epoch fencing
as Fetch on `current_leader_epoch` (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH). The answer is
the log's epoch cache lookup (broker/log/epoch.py `end_offset_for`, Kafka's rules). ACLs:
ClusterAction on the cluster, or else Describe on each topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.replication import (
    EpochEndOffset,
    OffsetForLeaderTopicResult,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.codec import Request
from protocol.errors import TopicAuthorizationFailedError


def handle(ctx: BrokerContext, request: Request, session: Session) -> OffsetsForLeaderEpochResponse:
    req: OffsetsForLeaderEpochRequest = request.body
    topics = []
    refused = _refused(ctx, req, session)
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            if topic.name in refused:
                parts.append(
                    EpochEndOffset(p.partition, TopicAuthorizationFailedError.code, -1, -1)
                )
                continue
            code, epoch, end = ctx.replicas.end_offset_for_epoch(
                topic.name, p.partition, p.current_leader_epoch, p.leader_epoch
            )
            parts.append(EpochEndOffset(p.partition, code, epoch, end))
        topics.append(OffsetForLeaderTopicResult(topic.name, parts))
    return OffsetsForLeaderEpochResponse(topics)


def _refused(
    ctx: BrokerContext, req: OffsetsForLeaderEpochRequest, session: Session
) -> frozenset[str]:
    """ACLs: ClusterAction on the cluster (followers) covers every topic; else Describe on each."""
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api="OffsetForLeaderEpoch",
        log_denied=False,
    ):  # fmt: skip
        return rules.NOTHING
    names = (t.name for t in req.topics)
    return rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, names,
                        api="OffsetForLeaderEpoch")  # fmt: skip
