"""CreatePartitions: add partitions to topics, then wait until the controller has led them.

Any broker takes the request (as CreateTopics). Per topic: `ctx.topics.add_partitions` checks
the new count (above the current one, else INVALID_PARTITIONS) and the manual assignments if
any (one replica list per added partition, of the topic's replication factor, distinct live
brokers: else INVALID_REPLICA_ASSIGNMENT), places the partitions otherwise
(coordinator/cluster/placement.py) and, unless `validate_only`, writes the topic's assignment znode.
The controller's data watch on that znode elects the new partitions' leaders as for a new
topic; this handler waits, within `timeout_ms`, until the metadata cache shows each added
partition with a leader (REQUEST_TIMED_OUT otherwise: they exist, their leaders are not there
yet; a `timeout_ms` <= 0 answers at once, as Kafka).
A topic named twice in one request is INVALID_REQUEST, both times (Kafka's rule).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.admin import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsResult,
    CreatePartitionsTopic,
)
from protocol.codec import Request
from protocol.errors import (
    InvalidRequestError,
    OdradekError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)

log = logging.getLogger("odradek.broker.admin")


async def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> CreatePartitionsResponse:
    req: CreatePartitionsRequest = request.body
    named = Counter(t.name for t in req.topics)
    refused = rules.denied(ctx, session, rules.ALTER, rules.TOPIC, named, api="CreatePartitions")
    results = await asyncio.gather(
        *(
            _add(
                ctx, t, named[t.name], req.timeout_ms, req.validate_only, t.name in refused, session
            )
            for t in req.topics
        )
    )
    return CreatePartitionsResponse(list(results))


async def _add(
    ctx: BrokerContext, topic: CreatePartitionsTopic, times_named: int, timeout_ms: int,
    validate_only: bool, refused: bool, session: Session,
) -> CreatePartitionsResult:  # fmt: skip
    try:
        if times_named > 1:
            raise InvalidRequestError("duplicate topic in request")
        if refused:
            raise rules.refusal(session, rules.ALTER, rules.TOPIC, topic.name)
        if not ctx.metadata.has_topic(topic.name):
            raise UnknownTopicOrPartitionError(f"topic {topic.name} does not exist")
        added = await ctx.topics.add_partitions(
            topic.name, topic.count, topic.assignments, ctx.metadata.live_broker_ids(),
            validate_only,
        )  # fmt: skip
        if validate_only:
            return CreatePartitionsResult(topic.name, 0, None)
        log.info("topic %s: adding partitions %s", topic.name, added)
        if timeout_ms > 0 and not await ctx.metadata.wait_until(
            lambda: _led(ctx, topic.name, list(added)), timeout_ms
        ):
            raise RequestTimedOutError(
                f"partitions were added to {topic.name} but not all have a leader after "
                f"{timeout_ms} ms"
            )
    except OdradekError as exc:
        return CreatePartitionsResult(topic.name, exc.code, exc.message)
    return CreatePartitionsResult(topic.name, 0, None)


def _led(ctx: BrokerContext, name: str, added: list[int]) -> bool:
    parts = ctx.metadata.topics.get(name, {})
    return all(p in parts and parts[p].leader >= 0 for p in added)
