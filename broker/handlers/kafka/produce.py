"""Produce (0), v3-v9: the same appends as the native Produce, answered in Kafka's shape.

Each partition's `records` is one record batch v2 (the bytes the client sent are the bytes
stored: no transcoding); a null `records` is CORRUPT_MESSAGE. acks 0 sends no response, as Kafka.
"""

from __future__ import annotations

from typing import Any, cast

from broker.context import BrokerContext
from broker.handlers import produce as native
from broker.handlers.kafka._adapt import as_native, per_topic, then
from protocol.api.produce import PRODUCE, ProducePartition, ProduceRequest, ProduceTopic
from protocol.kafka.codec import KafkaRequest, make, millis, response_class
from protocol.kafka.versions import PRODUCE as PRODUCE_KEY
from protocol.schema import Records

NO_RECORDS = b""  # the native check refuses an empty batch as CORRUPT_MESSAGE


def handle(ctx: BrokerContext, request: KafkaRequest) -> Any:
    req = request.body
    topics = [
        ProduceTopic(
            t.name,
            [
                ProducePartition(
                    p.index, cast(Records, NO_RECORDS if p.records is None else p.records)
                )
                for p in t.partition_data
            ],
        )
        for t in req.topic_data
    ]
    tid = getattr(req, "transactional_id", None)
    native_req = ProduceRequest(req.acks, millis(req.timeout), topics, tid)
    result = native.handle(ctx, as_native(PRODUCE, native_req, request))
    version = request.header.api_version
    return then(result, lambda r: None if r is None else _answer(version, r, tid))


def _answer(version: int, resp: Any, transactional_id: str | None) -> Any:
    cls = response_class(PRODUCE_KEY, version)
    topics = per_topic(
        cls, resp.topics, "TopicProduceResponse", "PartitionProduceResponse",
        lambda p: {"index": p.partition, "error_code": p.error_code,
                   "base_offset": p.base_offset, "log_append_time": p.log_append_time_ms,
                   "log_start_offset": p.log_start_offset, "record_errors": (),
                   "error_message": _message(p.error_message, transactional_id)},
        parts_key="partition_responses",
    )  # fmt: skip
    return make(cls, responses=topics, throttle_time=resp.throttle_time_ms)


def _message(message: str | None, transactional_id: str | None) -> str | None:
    """A transactional producer's error names its transactional id (which producer a fenced
    one was, when several share a process)."""
    if message is None or transactional_id is None:
        return message
    return f"transactional id {transactional_id!r}: {message}"
