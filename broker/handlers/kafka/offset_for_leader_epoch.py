"""OffsetForLeaderEpoch (23), v2-v4: the end offset of a leader epoch (KIP-101, KIP-320), for
clients that check for log truncation after a leader change; the native handler's lookup."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import offsets_for_leader_epoch as native
from broker.handlers.kafka._adapt import as_native, per_topic
from broker.session import Session
from protocol.api.fetch import CONSUMER_REPLICA_ID
from protocol.api.replication import (
    OFFSETS_FOR_LEADER_EPOCH,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetsForLeaderEpochRequest,
)
from protocol.kafka.codec import KafkaRequest, make, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    topics = [
        OffsetForLeaderTopic(
            t.topic,
            [
                OffsetForLeaderPartition(p.partition, p.current_leader_epoch, p.leader_epoch)
                for p in t.partitions
            ],
        )
        for t in request.body.topics
    ]
    native_req = OffsetsForLeaderEpochRequest(CONSUMER_REPLICA_ID, topics)
    resp = native.handle(ctx, as_native(OFFSETS_FOR_LEADER_EPOCH, native_req, request), session)
    cls = response_class(OFFSETS_FOR_LEADER_EPOCH.key, request.header.api_version)
    out = per_topic(
        cls, resp.topics, "OffsetForLeaderTopicResult", "EpochEndOffset",
        lambda p: {"error_code": p.error_code, "partition": p.partition,
                   "leader_epoch": p.leader_epoch, "end_offset": p.end_offset},
        topic_key="topic",
    )  # fmt: skip
    return make(cls, throttle_time=0, topics=out)
