"""Fetch (1), v4-v12: the same reads and long polls as the native Fetch, log data sent from the
segment files (the response is laid out by protocol/kafka/fetch_response.py with FileSlices).

Kafka clients fetch as consumers whatever replica id they send (followers use the native door),
so only data below the high watermark is served. Fetch sessions (KIP-227, v7+) are the native
door's (broker/fetch_session.py): a client that asks for one (kafka-python does) gets
incremental answers; one that does not (librdkafka, aiokafka) is answered in full, as Kafka
answers session id 0. isolation_level read_committed (1) reads stop at the last stable offset,
which the response carries, with the aborted transactions of the records returned (KIP-98).
"""

from __future__ import annotations

from typing import Any, cast

from broker.context import BrokerContext
from broker.handlers import fetch as native
from broker.handlers.kafka._adapt import as_native, then
from protocol.api.fetch import (
    CONSUMER_REPLICA_ID,
    FETCH,
    FINAL_EPOCH,
    NO_SESSION,
    READ_UNCOMMITTED,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
)
from protocol.codec import Chunk, FileSlice
from protocol.kafka.codec import KafkaRequest, millis, response_header
from protocol.kafka.fetch_response import FetchedPartition, encode_fetch_response


def handle(ctx: BrokerContext, request: KafkaRequest) -> Any:
    req = request.body
    topics = [
        FetchTopic(
            t.topic,
            [
                FetchPartition(
                    p.partition,
                    p.fetch_offset,
                    p.partition_max_bytes,
                    getattr(p, "current_leader_epoch", -1),
                )
                for p in t.partitions
            ],
        )
        for t in req.topics
    ]
    forgotten = [
        ForgottenTopic(t.topic, [int(p) for p in t.partitions])
        for t in getattr(req, "forgotten_topics_data", ())
    ]
    native_req = FetchRequest(
        CONSUMER_REPLICA_ID, millis(req.max_wait), req.min_bytes, req.max_bytes, topics,
        getattr(req, "session_id", NO_SESSION), getattr(req, "session_epoch", FINAL_EPOCH),
        forgotten, getattr(req, "isolation_level", READ_UNCOMMITTED),
    )  # fmt: skip
    result = native.handle(ctx, as_native(FETCH, native_req, request))
    return then(result, lambda r: _answer(request, r))


def _answer(request: KafkaRequest, resp: FetchResponse) -> list[Chunk]:
    topics = [
        (
            t.name,
            [
                FetchedPartition(
                    p.partition,
                    p.error_code,
                    p.high_watermark,
                    p.log_start_offset,
                    cast(bytes | FileSlice, p.records),  # bytes, or a FileSlice sent from the file
                    p.last_stable_offset,
                    None
                    if p.aborted_transactions is None
                    else [(a.producer_id, a.first_offset) for a in p.aborted_transactions],
                )
                for p in t.partitions
            ],
        )
        for t in resp.topics
    ]
    return encode_fetch_response(
        request.header.api_version, response_header(request), topics, resp.error_code,
        session_id=resp.session_id,
    )  # fmt: skip
