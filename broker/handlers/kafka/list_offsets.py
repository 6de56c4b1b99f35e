"""ListOffsets (2), v1-v6: earliest (-2), latest (-1: the high watermark) or by timestamp,
through the same lookup as the native ListOffsets. Kafka clients are consumers (replica -1)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import list_offsets as native
from broker.handlers.kafka._adapt import as_native, per_topic
from protocol.api.fetch import CONSUMER_REPLICA_ID
from protocol.api.list_offsets import (
    LIST_OFFSETS,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.kafka.codec import KafkaRequest, make, response_class


def handle(ctx: BrokerContext, request: KafkaRequest) -> Any:
    topics = [
        ListOffsetsTopic(
            t.name,
            [
                ListOffsetsPartition(
                    p.partition_index, p.timestamp, getattr(p, "current_leader_epoch", -1)
                )
                for p in t.partitions
            ],
        )
        for t in request.body.topics
    ]
    native_req = ListOffsetsRequest(CONSUMER_REPLICA_ID, topics)
    resp: ListOffsetsResponse = native.handle(ctx, as_native(LIST_OFFSETS, native_req, request))
    cls = response_class(LIST_OFFSETS.key, request.header.api_version)
    out = per_topic(
        cls, resp.topics, "ListOffsetsTopicResponse", "ListOffsetsPartitionResponse",
        lambda p: {"partition_index": p.partition, "error_code": p.error_code,
                   "timestamp": p.timestamp, "offset": p.offset, "leader_epoch": p.leader_epoch},
    )  # fmt: skip
    return make(cls, throttle_time=0, topics=out)
