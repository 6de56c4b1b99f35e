"""Produce: append each partition's batch on the leader, answer per partition.

acks 0 sends no response; 1 answers once the leader has appended; -1 (all) answers once every
in-sync replica has the batch. In issue 3 the ISR that bounds the high watermark is the leader
alone (followers hold no data yet), so -1 behaves exactly like 1; issue 4 parks it in a
delayed-produce queue until the HW passes the batch. Any other acks value: INVALID_REQUIRED_ACKS
for every partition, nothing written. Topics with flush.messages=1 answer after group commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from broker.context import BrokerContext
from broker.replica_manager import AppendOutcome
from protocol.api.produce import (
    ACKS_ALL,
    ACKS_LEADER,
    ACKS_NONE,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicResponse,
)
from protocol.codec import Request
from protocol.errors import InvalidRequiredAcksError

VALID_ACKS = (ACKS_NONE, ACKS_LEADER, ACKS_ALL)


def handle(
    ctx: BrokerContext, request: Request
) -> ProduceResponse | Awaitable[ProduceResponse | None] | None:
    req: ProduceRequest = request.body
    if req.acks not in VALID_ACKS:
        return _response(req, lambda t, p: AppendOutcome(InvalidRequiredAcksError.code))
    outcomes: dict[tuple[str, int], AppendOutcome] = {}
    durable: list[Awaitable[None]] = []
    for topic in req.topics:
        for part in topic.partitions:
            outcome = ctx.replicas.append(topic.name, part.partition, part.records)
            outcomes[(topic.name, part.partition)] = outcome
            if outcome.durable is not None:
                durable.append(outcome.durable)
    if durable:
        return _after_flush(req, outcomes, durable)
    if req.acks == ACKS_NONE:
        return None
    return _response(req, lambda t, p: outcomes[(t, p)])


async def _after_flush(
    req: ProduceRequest,
    outcomes: dict[tuple[str, int], AppendOutcome],
    durable: list[Awaitable[None]],
) -> ProduceResponse | None:
    await asyncio.gather(*durable)
    if req.acks == ACKS_NONE:
        return None
    return _response(req, lambda t, p: outcomes[(t, p)])


def _response(
    req: ProduceRequest, outcome_of: Callable[[str, int], AppendOutcome]
) -> ProduceResponse:
    topics = []
    for topic in req.topics:
        parts = []
        for part in topic.partitions:
            o = outcome_of(topic.name, part.partition)
            parts.append(
                ProducePartitionResponse(
                    part.partition,
                    o.error_code,
                    o.base_offset,
                    -1,
                    o.log_start_offset,
                    o.error_message,
                )
            )
        topics.append(ProduceTopicResponse(topic.name, parts))
    return ProduceResponse(topics)
