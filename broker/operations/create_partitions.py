"""CreatePartitions: add partitions to topics, then wait until the controller has led them.

Any broker takes the request (as CreateTopics). Per topic: `ctx.topics.add_partitions` checks
the new count (above the current one, else INVALID_PARTITIONS) and the manual assignments if
any (one replica list per added partition, of the topic's replication factor, distinct live
brokers: else INVALID_REPLICA_ASSIGNMENT), places the partitions otherwise
(coordinator/cluster/placement.py) and, unless `validate_only`, writes the topic's assignment
znode. The controller's data watch on that znode elects the new partitions' leaders as for a
new topic; the operation waits, within `timeout_ms`, until the metadata cache shows each added
partition with a leader (REQUEST_TIMED_OUT otherwise: they exist, their leaders are not there
yet; a `timeout_ms` <= 0 answers at once, as Kafka).

Per topic, in the order asked: named twice in one request is INVALID_REQUEST, both times
(Kafka's rule); no Alter on it TOPIC_AUTHORIZATION_FAILED; an unknown topic
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import (
    InvalidRequestError,
    OdradekError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)

API = "CreatePartitions"
log = logging.getLogger("odradek.broker.admin")


@dataclass(frozen=True, slots=True)
class NewPartitions:
    name: str
    count: int  # the new total number of partitions
    assignments: tuple[tuple[int, ...], ...] | None = None  # the added ones' replicas; None: placed


@dataclass(frozen=True, slots=True)
class CreatePartitions:
    topics: tuple[NewPartitions, ...]
    timeout_ms: int
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class PartitionsCreated:
    name: str
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class CreatePartitionsResult:
    results: tuple[PartitionsCreated, ...]  # in the order asked


async def run(
    ctx: BrokerContext, session: Session, req: CreatePartitions
) -> CreatePartitionsResult:
    named = Counter(t.name for t in req.topics)
    refused = rules.denied(ctx, session, rules.ALTER, rules.TOPIC, named, api=API)
    results = await asyncio.gather(*(
        _add(ctx, session, req, t, named[t.name] > 1, t.name in refused) for t in req.topics
    ))  # fmt: skip
    return CreatePartitionsResult(tuple(results))


async def _add(ctx: BrokerContext, session: Session, req: CreatePartitions, topic: NewPartitions,
               twice: bool, refused: bool) -> PartitionsCreated:  # fmt: skip
    try:
        if twice:
            raise InvalidRequestError("duplicate topic in request")
        if refused:
            raise rules.refusal(session, rules.ALTER, rules.TOPIC, topic.name)
        if not ctx.metadata.has_topic(topic.name):
            raise UnknownTopicOrPartitionError(f"topic {topic.name} does not exist")
        assignments = None if topic.assignments is None else [list(a) for a in topic.assignments]
        added = await ctx.topics.add_partitions(
            topic.name, topic.count, assignments, ctx.metadata.live_broker_ids(),
            req.validate_only,
        )  # fmt: skip
        if req.validate_only:
            return PartitionsCreated(topic.name, 0)
        log.info("topic %s: adding partitions %s", topic.name, added)
        if req.timeout_ms > 0 and not await ctx.metadata.wait_until(
            lambda: _led(ctx, topic.name, list(added)), req.timeout_ms
        ):
            raise RequestTimedOutError(
                f"partitions were added to {topic.name} but not all have a leader after "
                f"{req.timeout_ms} ms"
            )
    except OdradekError as exc:
        return PartitionsCreated(topic.name, exc.code, exc.message)
    return PartitionsCreated(topic.name, 0)


def _led(ctx: BrokerContext, name: str, added: list[int]) -> bool:
    parts = ctx.metadata.topics.get(name, {})
    return all(p in parts and parts[p].leader >= 0 for p in added)
