"""Metadata: brokers, controller and partition leaders from this broker's metadata cache (any
broker answers; the controller keeps every cache current with UpdateMetadata).

Topics are asked by name or by id (Kafka v12+), in one list; `topics` None asks for every
topic. An id no topic has is answered by its id alone, UNKNOWN_TOPIC_ID; an unknown name
UNKNOWN_TOPIC_OR_PARTITION; an offline partition (no live leader) has leader -1 and
LEADER_NOT_AVAILABLE. An unknown name is created when the request allows it and the broker's
`auto_create_topics_enable` is on (Kafka's auto.create.topics.enable), with `num_partitions`
and `default_replication_factor`, and answered LEADER_NOT_AVAILABLE meanwhile, as Kafka does
(the client asks again); the native client never asks for it.

Brokers are given at the endpoint of the listener the request came in on (Kafka's rule), of
the door asked through (`door`): on the Kafka door a broker without that listener is left
out; on the native door it keeps its inter-broker address (`as_seen_on`).

ACLs (broker/security/rules.py): all topics means those the principal may Describe (the
others are left out, their denials not logged); a named topic it may not Describe is
TOPIC_AUTHORIZATION_FAILED whether or not it exists, without its id, and one asked by id is
answered by its id alone (Kafka: the id is not secret, the name is). Auto-creation needs Create
on the cluster or else on the topic (TOPIC_AUTHORIZATION_FAILED). KIP-430, when asked: the
cluster's authorized operations (0 without Describe on the cluster) and each shown topic's.

Metadata is on every client's hot path: without ACLs, ids, operations or auto-creation the
answer is the cache's topic list as it is, and ids are looked up only when asked (`with_ids`).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.cluster.topics import validate_topic_name
from protocol.api.metadata import INTERNAL_TOPICS, NATIVE_DOOR, BrokerInfo, TopicMetadata
from protocol.errors import (
    InvalidReplicationFactorError,
    LeaderNotAvailableError,
    OdradekError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)

API = "Metadata"
NO_OPERATIONS = rules.NOT_ASKED  # KIP-430: not asked for
log = logging.getLogger("odradek.broker.kafka")


@dataclass(frozen=True, slots=True)
class Metadata:
    topics: tuple[str | uuid.UUID, ...] | None  # by name or by id; None: every topic
    door: str = NATIVE_DOOR  # whose endpoints the brokers are given at
    allow_auto_topic_creation: bool = False
    with_ids: bool = False  # answer each topic's id (Kafka v10+)
    cluster_operations: bool = False  # KIP-430, asked
    topic_operations: bool = False  # KIP-430, asked


@dataclass(frozen=True, slots=True)
class MetadataResult:
    brokers: list[BrokerInfo]  # host/port: the endpoint of the listener asked on
    cluster_id: str | None
    controller_id: int
    topics: list[TopicMetadata]  # in the order asked (all: by name)
    by_id: tuple[tuple[uuid.UUID, int], ...] = ()  # answered by id alone, with their error
    topic_ids: dict[str, uuid.UUID | None] = field(default_factory=dict)  # when with_ids
    topic_operations: dict[str, int] = field(default_factory=dict)  # when asked, those shown
    cluster_operations: int = NO_OPERATIONS


async def _created_then(
    ctx: BrokerContext, session: Session, req: Metadata, missing: list[str],
    errors: dict[str, int], names: list[str], by_id: list[tuple[uuid.UUID, int]],
) -> MetadataResult:  # fmt: skip
    for name in missing:
        errors[name] = await _auto_create(ctx, name)
    return _answer(ctx, session, req, names, by_id, errors)


def run(
    ctx: BrokerContext, session: Session, req: Metadata
) -> MetadataResult | Coroutine[Any, Any, MetadataResult]:  # a coroutine: auto-creating
    if req.topics is None:
        return _answer(ctx, session, req, None, [], {})
    names, by_id = _resolved(ctx, req.topics)
    refused = rules.NOTHING
    if ctx.authorizer is not None:
        refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, names, api=API)
        if refused:
            names, by_id = _hide_asked_by_id(ctx, req.topics, names, by_id, refused)
    errors: dict[str, int] = {}
    if req.allow_auto_topic_creation and ctx.config.auto_create_topics_enable:
        missing = [n for n in names if n not in refused and not ctx.metadata.has_topic(n)]
        if missing:
            errors = _create_refusals(ctx, session, missing)
            missing = [n for n in missing if n not in errors]
            if missing:
                return _created_then(ctx, session, req, missing, errors, names, by_id)
    return _answer(ctx, session, req, names, by_id, errors, refused)


def _resolved(
    ctx: BrokerContext, asked: tuple[str | uuid.UUID, ...]
) -> tuple[list[str], list[tuple[uuid.UUID, int]]]:
    """(the names asked for, ids resolved to names; the ids no topic has)."""
    names: list[str] = []
    unknown: list[tuple[uuid.UUID, int]] = []
    for t in asked:
        if isinstance(t, str):
            names.append(t)
            continue
        name = ctx.metadata.topic_by_id(t)
        if name is None:
            unknown.append((t, UnknownTopicIdError.code))
        else:
            names.append(name)
    return names, unknown


def _hide_asked_by_id(
    ctx: BrokerContext, asked: tuple[str | uuid.UUID, ...], names: list[str],
    by_id: list[tuple[uuid.UUID, int]], refused: frozenset[str],
) -> tuple[list[str], list[tuple[uuid.UUID, int]]]:  # fmt: skip
    """A topic asked for by id (not by name) that the principal may not Describe is answered
    by its id alone, TOPIC_AUTHORIZATION_FAILED."""
    named = {t for t in asked if isinstance(t, str)}
    hidden = [n for n in names if n in refused and n not in named]
    if not hidden:
        return names, by_id
    code = TopicAuthorizationFailedError.code
    ids = [(tid, code) for tid in map(ctx.metadata.topic_id, hidden) if tid is not None]
    return [n for n in names if n not in hidden], by_id + ids


def _answer(
    ctx: BrokerContext, session: Session, req: Metadata, names: list[str] | None,
    by_id: list[tuple[uuid.UUID, int]], errors: dict[str, int],
    refused: frozenset[str] = rules.NOTHING,
) -> MetadataResult:  # fmt: skip
    cache = ctx.metadata
    topics = _described(ctx, session, names, refused)
    if errors:
        topics = [_with_error(t, errors) for t in topics]
    shown = [t.name for t in topics if t.error_code != TopicAuthorizationFailedError.code]
    ids = {n: cache.topic_id(n) for n in shown} if req.with_ids else {}
    ops = {}
    if req.topic_operations:
        ops = {n: rules.authorized_operations(ctx, session, rules.TOPIC, n) for n in shown}
    return MetadataResult(
        _brokers(ctx, session, req.door), ctx.cluster.id, cache.controller_id, topics,
        tuple(by_id), ids, ops, _cluster_operations(ctx, session, req),
    )  # fmt: skip


def _described(
    ctx: BrokerContext, session: Session, names: list[str] | None, refused: frozenset[str]
) -> list[TopicMetadata]:
    """The cache's answer for `names` (None: all topics) within the principal's rights."""
    cache = ctx.metadata
    if names is None:
        topics = cache.describe(None)
        if ctx.authorizer is None:
            return topics
        hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC,
                              (t.name for t in topics), api=API, log_denied=False)  # fmt: skip
        return [t for t in topics if t.name not in hidden] if hidden else topics
    if not refused:
        return cache.describe(names)
    code = TopicAuthorizationFailedError.code
    return cache.describe([n for n in names if n not in refused]) + [
        TopicMetadata(code, n, n in INTERNAL_TOPICS, []) for n in names if n in refused
    ]


def _with_error(t: TopicMetadata, errors: dict[str, int]) -> TopicMetadata:
    """An unknown topic being auto-created answers why not, or LEADER_NOT_AVAILABLE."""
    if t.error_code != UnknownTopicOrPartitionError.code or t.name not in errors:
        return t
    return dataclasses.replace(t, error_code=errors[t.name])


def _brokers(ctx: BrokerContext, session: Session, door: str) -> list[BrokerInfo]:
    cache = ctx.metadata
    if door == NATIVE_DOOR:
        return [as_seen_on(cache.brokers[i], session.listener) for i in cache.live_broker_ids()]
    return [BrokerInfo(node_id, host, port, rack)
            for node_id, host, port, rack in cache.kafka_brokers(session.listener)]  # fmt: skip


def as_seen_on(broker: BrokerInfo, listener: str) -> BrokerInfo:
    """The broker with `host`/`port` of its native listener named `listener`, the one the
    client came in on (Kafka's rule), so that a client on a SASL or TLS listener is sent to the
    same kind of listener on every broker, not to the inter-broker one. A broker without that
    listener keeps its inter-broker address."""
    endpoint = broker.endpoint(NATIVE_DOOR, listener)
    if endpoint is None or endpoint == (broker.host, broker.port):
        return broker
    return dataclasses.replace(broker, host=endpoint[0], port=endpoint[1])


def _cluster_operations(ctx: BrokerContext, session: Session, req: Metadata) -> int:
    if not req.cluster_operations:
        return NO_OPERATIONS
    if not rules.allows(ctx, session, rules.DESCRIBE, rules.CLUSTER, api=API):
        return 0
    return rules.authorized_operations(ctx, session, rules.CLUSTER)


def _create_refusals(ctx: BrokerContext, session: Session, missing: list[str]) -> dict[str, int]:
    """Auto-creation needs Create on the cluster, or else on each topic: the refused ones
    answer TOPIC_AUTHORIZATION_FAILED."""
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.CREATE, rules.CLUSTER, api=API, log_denied=False
    ):
        return {}
    refused = rules.denied(ctx, session, rules.CREATE, rules.TOPIC, missing, api=API)
    return dict.fromkeys(refused, TopicAuthorizationFailedError.code)


async def _auto_create(ctx: BrokerContext, name: str) -> int:
    """The error code the topic is answered with while it is created (or why it is not)."""
    live = ctx.metadata.live_broker_ids()
    rf = ctx.config.default_replication_factor
    try:
        validate_topic_name(name)
        if rf > len(live):
            raise InvalidReplicationFactorError(
                f"default replication factor {rf} is above the {len(live)} live brokers"
            )
        await ctx.topics.create_topic(name, ctx.config.num_partitions, rf, {}, live)
        log.info("auto-created topic %s for a client", name)
    except TopicAlreadyExistsError:
        pass
    except OdradekError as exc:
        return exc.code
    return LeaderNotAvailableError.code
