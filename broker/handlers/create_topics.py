"""CreateTopics: validate, write the topic to ZooKeeper, wait until the controller has led it.

Any broker takes the request (as Kafka's ZooKeeper-era brokers did). Per topic: a legal name,
partitions and replication factor >= 1 (-1 means the broker default), no manual assignment
(not supported yet), configs that LogConfig accepts (else INVALID_CONFIG), a replication factor
within the live brokers. Then `ctx.topics.create_topic` writes the znodes; the controller sees
them, places replicas, elects leaders and sends UpdateMetadata; this handler waits, within
`timeout_ms`, until the metadata cache shows every partition with a leader
(REQUEST_TIMED_OUT otherwise: the topic exists, its leaders are not there yet).
"""

from __future__ import annotations

import asyncio
import logging
import re

from broker.context import BrokerContext
from broker.log.config import LogConfig
from broker.security import rules
from broker.session import Session
from protocol.api.admin import (
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from protocol.codec import Request
from protocol.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    OdradekError,
    RequestTimedOutError,
)

log = logging.getLogger("odradek.broker.admin")
MAX_TOPIC_NAME_CHARS = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def check_topic_name(name: str) -> None:
    """Kafka's rule: 1..249 of [a-zA-Z0-9._-], and not '.' or '..'."""
    if name in (".", "..") or len(name) > MAX_TOPIC_NAME_CHARS or not _LEGAL_NAME.fullmatch(name):
        raise InvalidTopicError(
            f"topic name {name!r} must be 1..{MAX_TOPIC_NAME_CHARS} of [a-zA-Z0-9._-], "
            "not '.' or '..'"
        )


async def handle(ctx: BrokerContext, request: Request, session: Session) -> CreateTopicsResponse:
    req: CreateTopicsRequest = request.body
    refused = _refused(ctx, req, session)
    created = iter(await asyncio.gather(
        *(_create(ctx, t, req.timeout_ms, req.validate_only) for t in req.topics
          if t.name not in refused)
    ))  # fmt: skip
    return CreateTopicsResponse([refused.get(t.name) or next(created) for t in req.topics])


def _refused(
    ctx: BrokerContext, req: CreateTopicsRequest, session: Session
) -> dict[str, CreatableTopicResult]:
    """ACLs: Create on the cluster allows every topic; else Create on each topic."""
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.CREATE, rules.CLUSTER, api="CreateTopics", log_denied=False
    ):
        return {}
    names = [t.name for t in req.topics]
    out = {}
    for name in rules.denied(ctx, session, rules.CREATE, rules.TOPIC, names, api="CreateTopics"):
        err = rules.refusal(session, rules.CREATE, rules.TOPIC, name)
        out[name] = CreatableTopicResult(name, err.code, err.message, -1, -1)
    return out


async def _create(
    ctx: BrokerContext, topic: CreatableTopic, timeout_ms: int, validate_only: bool
) -> CreatableTopicResult:
    partitions = ctx.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    rf = (
        ctx.config.default_replication_factor
        if topic.replication_factor == -1
        else topic.replication_factor
    )
    try:
        live = _validate(ctx, topic, partitions, rf)
        if not validate_only:
            await ctx.topics.create_topic(topic.name, partitions, rf, topic.configs, live)
            if not await ctx.metadata.wait_until(
                lambda: _created(ctx, topic.name, partitions), timeout_ms
            ):
                raise RequestTimedOutError(
                    f"topic {topic.name} was created but not all its partitions have a leader "
                    f"after {timeout_ms} ms"
                )
    except OdradekError as exc:
        return CreatableTopicResult(topic.name, exc.code, exc.message, partitions, rf)
    if not validate_only:
        log.info(
            "created topic %s: %d partitions, replication factor %d", topic.name, partitions, rf
        )
    return CreatableTopicResult(topic.name, 0, None, partitions, rf)


def _validate(ctx: BrokerContext, topic: CreatableTopic, partitions: int, rf: int) -> list[int]:
    check_topic_name(topic.name)
    if partitions < 1:
        raise InvalidPartitionsError(f"number of partitions {partitions} must be at least 1")
    if rf < 1:
        raise InvalidReplicationFactorError(f"replication factor {rf} must be at least 1")
    if topic.assignments:
        raise InvalidReplicaAssignmentError("manual replica assignments are not supported")
    try:
        LogConfig.from_properties(topic.configs, base=ctx.replicas.default_log_config)
    except OdradekError as exc:
        raise InvalidConfigError(exc.message) from None
    live = ctx.metadata.live_broker_ids()
    if rf > len(live):
        raise InvalidReplicationFactorError(
            f"replication factor {rf} is above the {len(live)} live brokers"
        )
    return live


def _created(ctx: BrokerContext, name: str, partitions: int) -> bool:
    parts = ctx.metadata.topics.get(name)
    return parts is not None and len(parts) >= partitions and ctx.metadata.all_partitions_led(name)
