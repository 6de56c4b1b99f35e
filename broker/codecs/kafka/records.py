"""The Kafka door's codecs of the record APIs, Produce and Fetch (see
broker/codecs/kafka/__init__.py). Record batches pass through as they came (the bytes the client
sent are the bytes stored: no transcoding, no copy).

Fetch (1), v4-v18: the response is laid out by protocol/kafka/fetch_response.py as chunks, log
data as the FileSlices the reads gave (sent from the segment files). A Kafka client fetches as
a consumer whatever replica id it sends (followers use the native door). Sessions (KIP-227) are
v7+; before, a full fetch without one. v13+ names topics by id (the operation names them, and
answers with each topic's id); v12+ carries the current leader of a partition answered
NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH, v16+ the leaders' endpoints (KIP-951). v15
(replica_state), v17 (replica directory ids) and v18 (the follower's high watermark, KIP-1166)
concern followers only.

Produce (0), v0-v13: a null `records` is an empty batch, which the append refuses as
CORRUPT_MESSAGE; v0-v2 name no transactional id; v13 (Kafka 4.1) names topics by id (the
operation names them, answers each under its id, and an unknown id UNKNOWN_TOPIC_ID). v10+
carry the leader hints (KIP-951: the current leader of a partition answered
NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH, and the leaders' endpoints), which older
versions drop. v11 changes nothing for a broker; v12 is KIP-890's transaction version 2: the
produce adds its partition to the transaction (the leader asks the coordinator), which a client
does only when ApiVersions finalizes transaction.version 2, as odradek does; below v12 a
transactional producer calls AddPartitionsToTxn first. The throttle is written 0: the server
raises it (broker/quota/throttle.py).

Produce v8+ carries `record_errors` and `error_message` (KIP-467): the records a refused batch was
refused for, by index, each with a message; older versions get the partition's error alone.
"""

from __future__ import annotations

from typing import Any, cast

from broker.codecs import Codec
from broker.operations import fetch, produce
from protocol.api.fetch import (
    CONSUMER_REPLICA_ID,
    FINAL_EPOCH,
    NO_SESSION,
    READ_UNCOMMITTED,
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ForgottenTopic,
)
from protocol.codec import Chunk, FileSlice
from protocol.errors import UnknownTopicIdError
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class, response_header
from protocol.kafka.fetch_response import (
    TOPIC_IDS_FROM,
    FetchedPartition,
    NodeEndpoint,
    encode_fetch_response,
)
from protocol.schema import Records

# ----- Produce (0) ----------------------------------------------------------------------------

LEADER_HINTS_FROM = 10
RECORD_ERRORS_FROM = 8  # KIP-467: a refused batch's bad records, by index, with a message each
TV2_FROM = 12  # KIP-890 part 2: the produce adds its partitions to the transaction
PRODUCE_TOPIC_IDS_FROM = 13
NO_RECORDS = cast(Records, b"")  # a null batch: the append refuses it as CORRUPT_MESSAGE


def _produce_in(request: KafkaRequest) -> produce.Produce:
    req = request.body
    by_id = request.header.api_version >= PRODUCE_TOPIC_IDS_FROM
    topics = tuple(
        produce.TopicData("" if by_id else t.name, tuple(
            produce.PartitionData(p.index, NO_RECORDS if p.records is None else p.records)
            for p in t.partition_data
        ))
        for t in req.topic_data
    )  # fmt: skip
    tid = getattr(req, "transactional_id", None)
    txn_version = 2 if request.header.api_version >= TV2_FROM else 0
    ids = tuple(t.topic_id for t in req.topic_data) if by_id else None
    return produce.Produce(req.acks, millis(req.timeout), topics, tid, txn_version, ids)


def _produce_out(request: KafkaRequest, result: produce.ProduceResult | None) -> Any:
    if result is None:  # acks=0: no answer, as Kafka
        return None
    version = request.header.api_version
    cls = response_class(v.PRODUCE, version)
    topic_cls = nested(cls, "TopicProduceResponse")
    part_cls = nested(cls, "PartitionProduceResponse")
    hints = version >= LEADER_HINTS_FROM

    def part(p: produce.PartitionResult) -> Any:
        extra: dict[str, Any] = {}
        if hints and p.current_leader is not None:
            extra["current_leader"] = make(nested(cls, "LeaderIdAndEpoch"),
                                           leader_id=p.current_leader[0],
                                           leader_epoch=p.current_leader[1])  # fmt: skip
        errors: tuple[Any, ...] = ()
        if p.record_errors and version >= RECORD_ERRORS_FROM:
            error_cls = nested(cls, "BatchIndexAndErrorMessage")
            errors = tuple(
                make(error_cls, batch_index=e.batch_index, batch_index_error_message=e.message)
                for e in p.record_errors
            )
        return make(
            part_cls, index=p.partition, error_code=p.error_code, base_offset=p.base_offset,
            log_append_time=p.log_append_time_ms, log_start_offset=p.log_start_offset,
            record_errors=errors, error_message=p.error_message, **extra,
        )  # fmt: skip

    ids = result.topic_ids or {}
    topics = tuple(
        make(topic_cls, name=t.name, topic_id=ids.get(t.name),
             partition_responses=tuple(part(p) for p in t.partitions))
        for t in result.topics
    ) + tuple(
        make(topic_cls, name="", topic_id=topic_id, partition_responses=tuple(
            make(part_cls, index=i, error_code=UnknownTopicIdError.code, base_offset=-1,
                 log_append_time=-1, log_start_offset=-1, record_errors=(), error_message=None)
            for i in indexes))
        for topic_id, indexes in result.unknown_ids
    )  # fmt: skip
    extra: dict[str, Any] = {}
    if hints and result.leader_endpoints:
        node_cls = nested(cls, "NodeEndpoint")
        extra["node_endpoints"] = tuple(
            make(node_cls, node_id=n, host=h, port=port, rack=rack)
            for n, h, port, rack in result.leader_endpoints
        )
    return make(cls, responses=topics, throttle_time=0, **extra)


PRODUCE = Codec(_produce_in, _produce_out)

# ----- Fetch (1) ------------------------------------------------------------------------------

FETCH_LEADER_HINTS_FROM = 12


def _fetch_in(request: KafkaRequest) -> fetch.Fetch:
    req = request.body
    by_id = request.header.api_version >= TOPIC_IDS_FROM
    topics = [
        (t, [FetchPartition(p.partition, p.fetch_offset, p.partition_max_bytes,
                            getattr(p, "current_leader_epoch", -1)) for p in t.partitions])
        for t in req.topics
    ]  # fmt: skip
    forgotten = getattr(req, "forgotten_topics_data", ())
    native = FetchRequest(
        CONSUMER_REPLICA_ID, millis(req.max_wait), req.min_bytes, req.max_bytes,
        [] if by_id else [FetchTopic(t.topic, parts) for t, parts in topics],
        getattr(req, "session_id", NO_SESSION), getattr(req, "session_epoch", FINAL_EPOCH),
        [] if by_id else [ForgottenTopic(t.topic, [int(p) for p in t.partitions])
                          for t in forgotten],
        getattr(req, "isolation_level", READ_UNCOMMITTED),
    )  # fmt: skip
    hints = request.header.api_version >= FETCH_LEADER_HINTS_FROM
    if not by_id:
        return fetch.Fetch(native, leader_hints=hints)
    return fetch.Fetch(
        native,
        tuple((t.topic_id, tuple(parts)) for t, parts in topics),
        tuple((t.topic_id, tuple(int(p) for p in t.partitions)) for t in forgotten),
        leader_hints=hints,
    )


def _fetch_out(request: KafkaRequest, result: fetch.FetchResult) -> list[Chunk]:
    resp, ids, leaders = result.response, result.topic_ids, result.leaders or {}
    topics: list[tuple[Any, list[FetchedPartition]]] = []
    for t in resp.topics:
        parts = []
        for p in t.partitions:
            aborted = p.aborted_transactions
            parts.append(
                FetchedPartition(
                    p.partition, p.error_code, p.high_watermark, p.log_start_offset,
                    cast(bytes | FileSlice, p.records),  # bytes, or a FileSlice sent from the file
                    p.last_stable_offset,
                    None if aborted is None else [(a.producer_id, a.first_offset) for a in aborted],
                    leaders.get((t.name, p.partition)) if leaders else None,
                )
            )  # fmt: skip
        topics.append((t.name if ids is None else ids.get(t.name), parts))
    code = UnknownTopicIdError.code
    for topic_id, indexes in result.unknown_ids:
        topics.append((topic_id, [FetchedPartition(i, code, -1, -1, b"") for i in indexes]))
    nodes = [NodeEndpoint(*e) for e in result.leader_endpoints]
    return encode_fetch_response(
        request.header.api_version, response_header(request), topics, resp.error_code,
        throttle_time_ms=resp.throttle_time_ms, session_id=resp.session_id, node_endpoints=nodes,
    )  # fmt: skip


FETCH = Codec(_fetch_in, _fetch_out)
