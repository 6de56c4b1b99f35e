"""DeleteTopics (20), v1-v6: the native DeleteTopics (mark in ZooKeeper, wait until the
controller has deleted), answered in Kafka's shape. v6 names topics by name or by id (KIP-516):
an id is looked up in the metadata cache, and one no topic has gets UNKNOWN_TOPIC_ID; each
result carries the topic's id as it was before the delete."""

from __future__ import annotations

import uuid
from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import delete_topics as native
from broker.handlers.kafka._adapt import as_native
from broker.security import rules
from broker.session import Session
from protocol.api.admin import DELETE_TOPICS, DeleteTopicsRequest, DeleteTopicsResponse
from protocol.errors import TopicAuthorizationFailedError, UnknownTopicIdError
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class
from protocol.topic_ids import encode_topic_id


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    unknown: list[uuid.UUID] = []
    by_id: list[str] = []
    if version >= 6:
        names = []
        for t in req.topics:
            name = t.name if t.name is not None else _by_id(ctx, t.topic_id)
            if name is None:
                unknown.append(t.topic_id)
            else:
                names.append(name)
                if t.name is None:
                    by_id.append(name)
    else:
        names = list(req.topic_names)
    ids = {name: ctx.metadata.topic_id(name) for name in names}  # before they are gone
    # a topic named by id that the principal may not Describe: answered without its name (Kafka)
    nameless = rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, by_id, api="DeleteTopics",
                            log_denied=False)  # fmt: skip
    native_req = DeleteTopicsRequest([n for n in names if n not in nameless], millis(req.timeout))
    result = native.handle(ctx, as_native(DELETE_TOPICS, native_req, request), session)
    return then(result, lambda r: _answer(version, r, ids, unknown, nameless))


def _by_id(ctx: BrokerContext, topic_id: uuid.UUID | None) -> str | None:
    return None if topic_id is None else ctx.metadata.topic_by_id(topic_id)


def _answer(
    version: int,
    resp: DeleteTopicsResponse,
    ids: dict[str, uuid.UUID | None],
    unknown: list[uuid.UUID],
    nameless: frozenset[str] = frozenset(),
) -> Any:
    cls = response_class(DELETE_TOPICS.key, version)
    result_cls = nested(cls, "DeletableTopicResult")
    results = [
        make(
            result_cls,
            name=r.name,
            topic_id=ids.get(r.name),
            error_code=r.error_code,
            error_message=r.error_message,
        )
        for r in resp.responses
    ]
    results += [
        make(
            result_cls,
            name=None,
            topic_id=tid,
            error_code=UnknownTopicIdError.code,
            error_message=f"no topic has the id {_text(tid)}",
        )
        for tid in unknown
    ]
    results += [
        make(
            result_cls,
            name=None,
            topic_id=ids.get(name),
            error_code=TopicAuthorizationFailedError.code,
            error_message="Topic authorization failed.",
        )
        for name in sorted(nameless)
    ]
    return make(cls, throttle_time=0, responses=tuple(results))


def _text(topic_id: uuid.UUID | None) -> str:
    return "null" if topic_id is None else encode_topic_id(topic_id)
