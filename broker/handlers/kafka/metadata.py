"""Metadata (3): the cluster as Kafka clients see it, from the same metadata cache.

Brokers are listed at their Kafka endpoints (those without a Kafka listener are left out, as
Kafka leaves out brokers without the listener asked on). Topics: v0 asks for all with an empty
list, v1+ with null. An unknown topic is created when the request allows it (v0-3 always do;
v4+ say so) and the broker's `auto_create_topics_enable` is on, with `num_partitions` and
`default_replication_factor`, and answered LEADER_NOT_AVAILABLE meanwhile, as Kafka does; the
client asks again. Topic ids (KIP-516): v10+ answers each topic's id from the metadata cache
(the null id for a topic the controller has not given one yet); v12+ may name topics by id
instead, and an id no topic has is answered UNKNOWN_TOPIC_ID with a null name, as Kafka does.
v13 adds only a top-level error code (KIP-1102), always NONE here.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from broker.context import BrokerContext
from broker.handlers import metadata as native
from broker.operations.create_topics import check_topic_name
from broker.security import rules
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from protocol.api.metadata import TopicMetadata
from protocol.errors import (
    InvalidReplicationFactorError,
    LeaderNotAvailableError,
    OdradekError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import METADATA

log = logging.getLogger("odradek.broker.kafka")
BY_ID_SINCE = 12  # Metadata v12: topics may be named by id
NO_OPERATIONS = -2147483648  # KIP-430's authorized operations, when not asked for


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    names, by_id = _requested(ctx, req, version)
    allow = version < 4 or bool(req.allow_auto_topic_creation)
    ops = _operations(ctx, session, req, version)
    refused = rules.NOTHING
    if names is not None and ctx.authorizer is not None:
        refused = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, names, api="Metadata")
        names, by_id = _answered_by_id(ctx, req, version, names, by_id, refused)
    missing = [] if names is None else [
        n for n in names if n not in refused and not ctx.metadata.has_topic(n)
    ]  # fmt: skip
    errors: dict[str, int] = {}
    if missing and allow and ctx.config.auto_create_topics_enable:
        errors = _create_refusals(ctx, session, missing)
        missing = [n for n in missing if n not in errors]
        if missing:
            return _create_then_answer(ctx, session, version, names, missing, by_id, errors, ops)
    topics = native.describe(ctx, session, names)
    return answer(ctx, version, topics, errors, by_id, session.listener, ops)


Operations = tuple[int, Callable[[str], int] | None]


def _operations(ctx: BrokerContext, session: Session, req: Any, version: int) -> Operations:
    """KIP-430, when asked (v8+; the cluster's v8-v10): the cluster's authorized operations
    (0 without Describe on the cluster), and how to get each topic's."""
    cluster_ops = NO_OPERATIONS
    if 8 <= version <= 10 and getattr(req, "include_cluster_authorized_operations", False):
        allowed = rules.allows(ctx, session, rules.DESCRIBE, rules.CLUSTER, api="Metadata")
        cluster_ops = rules.authorized_operations(ctx, session, rules.CLUSTER) if allowed else 0
    topic_ops = None
    if version >= 8 and getattr(req, "include_topic_authorized_operations", False):

        def topic_ops(name: str) -> int:
            return rules.authorized_operations(ctx, session, rules.TOPIC, name)

    return cluster_ops, topic_ops


def _create_refusals(ctx: BrokerContext, session: Session, missing: list[str]) -> dict[str, int]:
    """Auto-creation needs Create on the cluster, or else on each topic: the refused ones
    answer TOPIC_AUTHORIZATION_FAILED."""
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.CREATE, rules.CLUSTER, api="Metadata", log_denied=False
    ):
        return {}
    refused = rules.denied(ctx, session, rules.CREATE, rules.TOPIC, missing, api="Metadata")
    return dict.fromkeys(refused, TopicAuthorizationFailedError.code)


def _answered_by_id(
    ctx: BrokerContext, req: Any, version: int, names: list[str], by_id: list[Any],
    refused: frozenset[str],
) -> tuple[list[str], list[Any]]:  # fmt: skip
    """A topic asked for by id that the principal may not Describe is answered by its id
    alone, TOPIC_AUTHORIZATION_FAILED (Kafka: the id is not secret, the name is)."""
    named = _named(req, version)
    hidden = [n for n in names if n in refused and n not in named]
    if not hidden:
        return names, by_id
    code = TopicAuthorizationFailedError.code
    ids = [(tid, code) for tid in map(ctx.metadata.topic_id, hidden) if tid is not None]
    return [n for n in names if n not in hidden], by_id + ids


def _named(req: Any, version: int) -> set[str]:
    """The topics the request names by name (not by id)."""
    if req.topics is None or (version == 0 and not req.topics):
        return set()
    return {t.name for t in req.topics if t.name is not None}


def _requested(ctx: BrokerContext, req: Any, version: int) -> tuple[list[str] | None, list[Any]]:
    """(the names asked for, None for all; the ids asked for that no topic has)."""
    if req.topics is None or (version == 0 and not req.topics):
        return None, []
    names: list[str] = []
    unknown_ids: list[uuid.UUID] = []
    for t in req.topics:
        if t.name is not None:
            names.append(t.name)
            continue
        topic_id = getattr(t, "topic_id", None) if version >= BY_ID_SINCE else None
        if topic_id is None:
            continue
        name = ctx.metadata.topic_by_id(topic_id)
        if name is None:
            unknown_ids.append(topic_id)
        else:
            names.append(name)
    return names, unknown_ids


async def _create_then_answer(
    ctx: BrokerContext,
    session: Session,
    version: int,
    names: list[str] | None,
    missing: list[str],
    unknown_ids: list[uuid.UUID],
    errors: dict[str, int],
    ops: Operations,
) -> Any:
    for name in missing:
        errors[name] = await _auto_create(ctx, name)
    topics = native.describe(ctx, session, names)
    return answer(ctx, version, topics, errors, unknown_ids, session.listener, ops)


async def _auto_create(ctx: BrokerContext, name: str) -> int:
    """The error code the topic is answered with while it is created (or why it is not)."""
    live = ctx.metadata.live_broker_ids()
    rf = ctx.config.default_replication_factor
    try:
        check_topic_name(name)
        if rf > len(live):
            raise InvalidReplicationFactorError(
                f"default replication factor {rf} is above the {len(live)} live brokers"
            )
        await ctx.topics.create_topic(name, ctx.config.num_partitions, rf, {}, live)
        log.info("auto-created topic %s for a Kafka client", name)
    except TopicAlreadyExistsError:
        pass
    except OdradekError as exc:
        return exc.code
    return LeaderNotAvailableError.code


def answer(
    ctx: BrokerContext,
    version: int,
    topics: list[TopicMetadata],
    errors: dict[str, int],
    unknown_ids: list[uuid.UUID] | None = None,
    listener: str = "PLAINTEXT",
    ops: Operations = (NO_OPERATIONS, None),
) -> Any:
    """Brokers as advertised on `listener`, the one the client came in on (Kafka's rule: a
    broker without that listener is left out)."""
    cls = response_class(METADATA, version)
    cluster_ops, topic_ops = ops
    broker_cls = nested(cls, "MetadataResponseBroker")
    cache = ctx.metadata
    brokers = tuple(
        make(broker_cls, node_id=node_id, host=host, port=port, rack=rack)
        for node_id, host, port, rack in cache.kafka_brokers(listener)
    )
    return make(
        cls, throttle_time=0, brokers=brokers, cluster_id=ctx.cluster_id,
        controller_id=cache.controller_id,
        topics=tuple(_topic(cls, t, errors, cache.topic_id(t.name), topic_ops) for t in topics)
        + tuple(_by_id(cls, i) for i in unknown_ids or ()),
        cluster_authorized_operations=cluster_ops, error_code=0,
    )  # fmt: skip


def _by_id(cls: Any, asked: uuid.UUID | tuple[uuid.UUID, int]) -> Any:
    """A topic asked for by id and answered without its name: an id no topic has
    (UNKNOWN_TOPIC_ID), or (id, TOPIC_AUTHORIZATION_FAILED) for one the principal may not
    Describe (Kafka does not consider the id secret, the name it does)."""
    topic_id, code = asked if isinstance(asked, tuple) else (asked, UnknownTopicIdError.code)
    return make(
        nested(cls, "MetadataResponseTopic"), error_code=code, name=None,
        topic_id=topic_id, is_internal=False, partitions=(),
        topic_authorized_operations=NO_OPERATIONS,
    )  # fmt: skip


def _topic(
    cls: Any, t: TopicMetadata, errors: dict[str, int], topic_id: uuid.UUID | None,
    topic_ops: Callable[[str], int] | None,
) -> Any:  # fmt: skip
    part_cls = nested(cls, "MetadataResponsePartition")
    code = t.error_code
    ops = NO_OPERATIONS
    if code == TopicAuthorizationFailedError.code:
        topic_id = None  # Kafka does not give the id of a topic the principal may not see
    elif topic_ops is not None:
        ops = topic_ops(t.name)
    if code == UnknownTopicOrPartitionError.code and t.name in errors:
        code = errors[t.name]
    parts = tuple(
        make(
            part_cls,
            error_code=p.error_code,
            partition_index=p.partition,
            leader_id=p.leader,
            leader_epoch=p.leader_epoch,
            replica_nodes=tuple(p.replicas),
            isr_nodes=tuple(p.isr),
            offline_replicas=tuple(p.offline_replicas),
        )
        for p in t.partitions
    )
    return make(
        nested(cls, "MetadataResponseTopic"), error_code=code, name=t.name,
        topic_id=topic_id, is_internal=t.name == OFFSETS_TOPIC or t.is_internal,
        partitions=parts, topic_authorized_operations=ops,
    )  # fmt: skip
