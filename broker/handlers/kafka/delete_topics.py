"""DeleteTopics (20), v1-v6: the native DeleteTopics (mark in ZooKeeper, wait until the
controller has deleted), answered in Kafka's shape. v6 names topics by name or id; odradek has
no topic ids, so an entry without a name gets UNKNOWN_TOPIC_ID."""

from __future__ import annotations

import uuid
from typing import Any

from broker.context import BrokerContext
from broker.handlers import delete_topics as native
from broker.handlers.kafka._adapt import as_native, then
from protocol.api.admin import DELETE_TOPICS, DeleteTopicsRequest, DeleteTopicsResponse
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class

UNKNOWN_TOPIC_ID = 100
NULL_TOPIC_ID = uuid.UUID(int=0)


def handle(ctx: BrokerContext, request: KafkaRequest) -> Any:
    req = request.body
    version = request.header.api_version
    if version >= 6:
        names = [t.name for t in req.topics if t.name is not None]
        unnamed = [t.topic_id for t in req.topics if t.name is None]
    else:
        names, unnamed = list(req.topic_names), []
    native_req = DeleteTopicsRequest(names, millis(req.timeout))
    result = native.handle(ctx, as_native(DELETE_TOPICS, native_req, request))
    return then(result, lambda r: _answer(version, r, unnamed))


def _answer(version: int, resp: DeleteTopicsResponse, unnamed: list[Any]) -> Any:
    cls = response_class(DELETE_TOPICS.key, version)
    result_cls = nested(cls, "DeletableTopicResult")
    results = [
        make(
            result_cls,
            name=r.name,
            topic_id=NULL_TOPIC_ID,
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
            error_code=UNKNOWN_TOPIC_ID,
            error_message="odradek names topics; it has no topic ids",
        )
        for tid in unnamed
    ]
    return make(cls, throttle_time=0, responses=tuple(results))
