"""DeleteRecords (21), v0-v2: the native DeleteRecords (raise each partition's log start offset
on its leader, then wait until every live replica has: broker/delete_records.py), answered in
Kafka's shape with each partition's low watermark. Offset -1 means the high watermark."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import delete_records as native
from broker.handlers.kafka._adapt import as_native, per_topic
from broker.session import Session
from protocol.api.delete_records import (
    DELETE_RECORDS,
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
)
from protocol.kafka.codec import KafkaRequest, make, millis, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    topics = [
        DeleteRecordsTopic(
            t.name, [DeleteRecordsPartition(p.partition_index, p.offset) for p in t.partitions]
        )
        for t in req.topics
    ]
    native_req = DeleteRecordsRequest(topics, millis(req.timeout))
    result = native.handle(ctx, as_native(DELETE_RECORDS, native_req, request), session)
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: DeleteRecordsResponse) -> Any:
    cls = response_class(DELETE_RECORDS.key, version)
    topics = per_topic(
        cls, resp.topics, "DeleteRecordsTopicResult", "DeleteRecordsPartitionResult",
        lambda p: {"partition_index": p.partition, "low_watermark": p.low_watermark,
                   "error_code": p.error_code},
    )  # fmt: skip
    return make(cls, throttle_time=0, topics=topics)
