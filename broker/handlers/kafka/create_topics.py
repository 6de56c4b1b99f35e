"""CreateTopics (19), v2-v7: the native CreateTopics (validate, write to ZooKeeper, wait for
leaders), answered in Kafka's shape. v7 answers a created topic's id (KIP-516, from the
metadata cache the native handler waited on; the null id for a failed one). From v5 a created
topic's answer lists its configs with their sources, as DescribeConfigs gives them
(broker/handlers/describe_configs.py `topic_entries`); a failed one's is null."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import create_topics as native
from broker.handlers.describe_configs import topic_entries
from broker.handlers.kafka._adapt import as_native
from broker.security import rules
from broker.session import Session
from protocol.api.admin import (
    CREATE_TOPICS,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    ReplicaAssignment,
)
from protocol.errors import TopicAuthorizationFailedError
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    topics = [
        CreatableTopic(
            t.name,
            t.num_partitions,
            t.replication_factor,
            [ReplicaAssignment(a.partition_index, list(a.broker_ids)) for a in t.assignments],
            {c.name: c.value for c in t.configs if c.value is not None},
        )
        for t in req.topics
    ]
    native_req = CreateTopicsRequest(topics, millis(req.timeout), bool(req.validate_only))
    result = native.handle(ctx, as_native(CREATE_TOPICS, native_req, request), session)
    given = {t.name: t.configs for t in topics}
    # v5+ shows the new topic's configs only to a principal that may DescribeConfigs it (Kafka:
    # TOPIC_AUTHORIZATION_FAILED as topic_config_error_code, the topic itself still created)
    hidden = rules.denied(ctx, session, rules.DESCRIBE_CONFIGS, rules.TOPIC, given,
                          api="CreateTopics", log_denied=False)  # fmt: skip
    version = request.header.api_version
    return then(result, lambda r: _answer(ctx, version, r, given, hidden))


def _answer(
    ctx: BrokerContext,
    version: int,
    resp: CreateTopicsResponse,
    given: dict[str, dict[str, str]],
    hidden: frozenset[str] = frozenset(),
) -> Any:
    cls = response_class(CREATE_TOPICS.key, version)
    result_cls = nested(cls, "CreatableTopicResult")
    config_cls = nested(cls, "CreatableTopicConfigs") if version >= 5 else None

    def configs(name: str, error_code: int) -> tuple[Any, ...] | None:
        if config_cls is None or error_code != 0 or name in hidden:
            return None
        return tuple(
            make(config_cls, name=e.name, value=e.value, read_only=e.read_only,
                 config_source=e.source, is_sensitive=e.is_sensitive)
            for e in topic_entries(ctx.config, given.get(name, {}), synonyms=False)
        )  # fmt: skip

    topics = tuple(
        make(
            result_cls,
            name=t.name,
            topic_id=ctx.metadata.topic_id(t.name) if t.error_code == 0 else None,
            error_code=t.error_code,
            error_message=t.error_message,
            topic_config_error_code=TopicAuthorizationFailedError.code
            if t.name in hidden and t.error_code == 0
            else 0,
            num_partitions=t.num_partitions if t.error_code == 0 else -1,
            replication_factor=t.replication_factor if t.error_code == 0 else -1,
            configs=configs(t.name, t.error_code),
        )
        for t in resp.topics
    )
    return make(cls, throttle_time=0, topics=topics)
