"""DescribeProducers (61): the active producers of partitions this broker leads, from the log's
producer state (broker/producer_state.py): id, epoch, last sequence and timestamp, coordinator
epoch, and the first offset of the open transaction (-1: none)."""

from __future__ import annotations

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.txn import (
    DescribeProducersPartition,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeProducersTopic,
    ProducerState,
)
from protocol.codec import Request
from protocol.errors import OdradekError


def handle(ctx: BrokerContext, request: Request, session: Session) -> DescribeProducersResponse:
    req: DescribeProducersRequest = request.body
    topics = []
    refused = rules.denied(ctx, session, rules.READ, rules.TOPIC, (t.name for t in req.topics),
                           api="DescribeProducers")  # fmt: skip
    for t in req.topics:
        parts = []
        for p in t.partitions:
            try:
                if t.name in refused:
                    raise rules.refusal(session, rules.READ, rules.TOPIC, t.name)
                rows = ctx.replicas.leader(t.name, p).log.producer_states()
            except OdradekError as exc:
                parts.append(DescribeProducersPartition(p, exc.code, exc.message, []))
                continue
            producers = [ProducerState(*row) for row in rows]
            parts.append(DescribeProducersPartition(p, 0, None, producers))
        topics.append(DescribeProducersTopic(t.name, parts))
    return DescribeProducersResponse(topics)
