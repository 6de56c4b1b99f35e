"""CreateTopics: validate, write each topic to ZooKeeper, wait until the controller has led it.

Any broker takes the request (as Kafka's ZooKeeper-era brokers did). Per topic: a legal name,
partitions and replication factor >= 1 (-1 means the broker default), configs that LogConfig
accepts (else INVALID_CONFIG), a replication factor within the live brokers. Or, with a manual
assignment (`kafka-topics --replica-assignment`), both counts -1 and replicas that Kafka's
controller would accept (coordinator.cluster.topics.manual_assignment: INVALID_REQUEST or
INVALID_REPLICA_ASSIGNMENT with Kafka's messages); the topic then has the partitions and
replicas given. Then `ctx.topics.create_topic` writes the znodes; the controller sees
them, places replicas, elects leaders and sends UpdateMetadata; the operation waits, within
`timeout_ms`, until the metadata cache shows every partition with a leader (REQUEST_TIMED_OUT
otherwise: the topic exists, its leaders are not there yet). `validate_only` checks and writes
nothing. Topics are answered in the order asked.

ACLs: Create on the cluster allows every topic; else Create on each topic
(TOPIC_AUTHORIZATION_FAILED). A created topic's answer carries its id (KIP-516) and its
partitions and replication factor; a failed one's -1 and -1 (Kafka's). With `include_configs`
(Kafka v5+) a created topic also carries its configs with their sources, as DescribeConfigs
gives them (broker/config_entries.py), if the principal may DescribeConfigs it; if not, the
topic is still created and answered TOPIC_AUTHORIZATION_FAILED as its `config_error_code`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from dataclasses import dataclass

from broker.config_entries import topic_entries
from broker.context import BrokerContext
from broker.log.config import LogConfig
from broker.security import rules
from broker.session import Session
from coordinator.cluster.topics import manual_assignment, validate_topic_name
from protocol.api.admin import ConfigEntry
from protocol.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    OdradekError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
)

API = "CreateTopics"
log = logging.getLogger("odradek.broker.admin")


@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    num_partitions: int  # -1: the broker's num_partitions
    replication_factor: int  # -1: the broker's default_replication_factor
    assignments: tuple[tuple[int, tuple[int, ...]], ...] = ()  # (partition, brokers), as given
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CreateTopics:
    topics: tuple[NewTopic, ...]
    timeout_ms: int
    validate_only: bool = False
    include_configs: bool = False  # answer a created topic's configs (Kafka v5+)


@dataclass(frozen=True, slots=True)
class TopicCreated:
    name: str
    error_code: int
    error_message: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    topic_id: uuid.UUID | None = None
    configs: tuple[ConfigEntry, ...] | None = None  # None: not asked, failed or not allowed
    config_error_code: int = 0


@dataclass(frozen=True, slots=True)
class CreateTopicsResult:
    topics: tuple[TopicCreated, ...]  # in the order asked


async def run(ctx: BrokerContext, session: Session, req: CreateTopics) -> CreateTopicsResult:
    refused = _refused(ctx, session, req)
    created = iter(await asyncio.gather(
        *(_create(ctx, t, req) for t in req.topics if t.name not in refused)
    ))  # fmt: skip
    results = [refused.get(t.name) or next(created) for t in req.topics]
    if req.include_configs:
        results = _with_configs(ctx, session, req, results)
    return CreateTopicsResult(tuple(results))


def _refused(ctx: BrokerContext, session: Session, req: CreateTopics) -> dict[str, TopicCreated]:
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.CREATE, rules.CLUSTER, api=API, log_denied=False
    ):
        return {}
    names = [t.name for t in req.topics]
    out = {}
    for name in rules.denied(ctx, session, rules.CREATE, rules.TOPIC, names, api=API):
        err = rules.refusal(session, rules.CREATE, rules.TOPIC, name)
        out[name] = TopicCreated(name, err.code, err.message)
    return out


async def _create(ctx: BrokerContext, topic: NewTopic, req: CreateTopics) -> TopicCreated:
    partitions = ctx.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    rf = topic.replication_factor
    rf = ctx.config.default_replication_factor if rf == -1 else rf
    try:
        live = _validate(ctx, topic, partitions, rf)
        assignment = None
        if topic.assignments:
            assignment = manual_assignment(
                topic.assignments, topic.num_partitions, topic.replication_factor, live
            )
            partitions, rf = len(assignment), len(assignment[0])
        if not req.validate_only:
            await ctx.topics.create_topic(
                topic.name, partitions, rf, dict(topic.configs), live, assignment
            )
            if not await ctx.metadata.wait_until(
                lambda: _created(ctx, topic.name, partitions), req.timeout_ms
            ):
                raise RequestTimedOutError(
                    f"topic {topic.name} was created but not all its partitions have a leader "
                    f"after {req.timeout_ms} ms"
                )
    except OdradekError as exc:
        return TopicCreated(topic.name, exc.code, exc.message)
    if req.validate_only:
        return TopicCreated(topic.name, 0, None, partitions, rf)
    log.info("created topic %s: %d partitions, replication factor %d", topic.name, partitions, rf)
    return TopicCreated(topic.name, 0, None, partitions, rf, ctx.metadata.topic_id(topic.name))


def _validate(ctx: BrokerContext, topic: NewTopic, partitions: int, rf: int) -> list[int]:
    """The live brokers, once the name, the configs and (without a manual assignment, which
    `manual_assignment` checks) the counts are good."""
    validate_topic_name(topic.name)
    manual = bool(topic.assignments)
    if partitions < 1 and not manual:
        raise InvalidPartitionsError(f"number of partitions {partitions} must be at least 1")
    if rf < 1 and not manual:
        raise InvalidReplicationFactorError(f"replication factor {rf} must be at least 1")
    try:
        LogConfig.from_properties(dict(topic.configs), base=ctx.replicas.default_log_config)
    except OdradekError as exc:
        raise InvalidConfigError(exc.message) from None
    live = ctx.metadata.live_broker_ids()
    if rf > len(live) and not manual:
        raise InvalidReplicationFactorError(
            f"replication factor {rf} is above the {len(live)} live brokers"
        )
    return live


def _created(ctx: BrokerContext, name: str, partitions: int) -> bool:
    parts = ctx.metadata.topics.get(name)
    return parts is not None and len(parts) >= partitions and ctx.metadata.all_partitions_led(name)


def _with_configs(ctx: BrokerContext, session: Session, req: CreateTopics,
                  results: list[TopicCreated]) -> list[TopicCreated]:  # fmt: skip
    """Each created topic's configs, or TOPIC_AUTHORIZATION_FAILED as its config error when
    the principal may not DescribeConfigs it (Kafka)."""
    given = {t.name: dict(t.configs) for t in req.topics}
    ok = [r.name for r in results if r.error_code == 0]
    hidden = rules.denied(ctx, session, rules.DESCRIBE_CONFIGS, rules.TOPIC, ok, api=API,
                          log_denied=False)  # fmt: skip
    out = []
    for r in results:
        if r.error_code == 0 and r.name in hidden:
            r = dataclasses.replace(r, config_error_code=TopicAuthorizationFailedError.code)
        elif r.error_code == 0:
            entries = topic_entries(ctx.config, given.get(r.name, {}), synonyms=False)
            r = dataclasses.replace(r, configs=tuple(entries))
        out.append(r)
    return out
