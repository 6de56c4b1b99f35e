"""ListOffsets: earliest (-2), latest (-1: the high watermark for consumers, the log end for
replicas) or the first offset whose timestamp is at or after the one asked for. A topic the
principal may not Describe (ACLs) is TOPIC_AUTHORIZATION_FAILED for each of its partitions."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from protocol.codec import Request
from protocol.errors import TopicAuthorizationFailedError


def handle(ctx: BrokerContext, request: Request, session: Session) -> ListOffsetsResponse:
    req: ListOffsetsRequest = request.body
    topics = []
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC,
                           (t.name for t in req.topics), api="ListOffsets")  # fmt: skip
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            if topic.name in refused:
                parts.append(ListOffsetsPartitionResponse(
                    p.partition, TopicAuthorizationFailedError.code, -1, -1, -1))  # fmt: skip
                continue
            code, ts, offset, epoch = ctx.replicas.list_offset(
                req.replica_id,
                topic.name,
                p.partition,
                p.timestamp,
                p.current_leader_epoch,
                req.isolation_level,
            )
            parts.append(ListOffsetsPartitionResponse(p.partition, code, ts, offset, epoch))
        topics.append(ListOffsetsTopicResponse(topic.name, parts))
    return ListOffsetsResponse(topics)
