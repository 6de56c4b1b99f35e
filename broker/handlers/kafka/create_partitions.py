"""CreatePartitions (37), v0-v3: the native CreatePartitions (validate, write the assignment,
wait for the new partitions' leaders), answered in Kafka's shape."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import create_partitions as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.admin import (
    CREATE_PARTITIONS,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
)
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    topics = [
        CreatePartitionsTopic(
            t.name,
            t.count,
            None if t.assignments is None else [list(a.broker_ids) for a in t.assignments],
        )
        for t in req.topics
    ]
    native_req = CreatePartitionsRequest(topics, millis(req.timeout), bool(req.validate_only))
    result = native.handle(ctx, as_native(CREATE_PARTITIONS, native_req, request), session)
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: CreatePartitionsResponse) -> Any:
    cls = response_class(CREATE_PARTITIONS.key, version)
    result_cls = nested(cls, "CreatePartitionsTopicResult")
    results = tuple(
        make(result_cls, name=r.name, error_code=r.error_code, error_message=r.error_message)
        for r in resp.results
    )
    return make(cls, throttle_time=0, results=results)
