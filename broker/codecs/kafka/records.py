"""The Kafka door's codecs of the record APIs, Produce and Fetch (see
broker/codecs/kafka/__init__.py). Record batches pass through as they came (the bytes the client
sent are the bytes stored: no transcoding, no copy).

Produce (0), v0-v12: a null `records` is an empty batch, which the append refuses as
CORRUPT_MESSAGE; v0-v2 name no transactional id. v10+ carry the leader hints (KIP-951: the
current leader of a partition answered NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH, and the
leaders' endpoints), which older versions drop. v11 changes nothing for a broker; v12 is
KIP-890's transaction version 2 (the produce adds its partition to the transaction), which a
client uses only when the broker's ApiVersions finalizes transaction.version 2: odradek finalizes
none, so a transactional producer still calls AddPartitionsToTxn first, as with Kafka 4.0 at
version 1. The throttle is written 0: the server raises it (broker/quota/throttle.py).
"""

from __future__ import annotations

from typing import Any, cast

from broker.codecs import Codec
from broker.operations import produce
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class
from protocol.schema import Records

# ----- Produce (0) ----------------------------------------------------------------------------

LEADER_HINTS_FROM = 10
NO_RECORDS = cast(Records, b"")  # a null batch: the append refuses it as CORRUPT_MESSAGE


def _produce_in(request: KafkaRequest) -> produce.Produce:
    req = request.body
    topics = tuple(
        produce.TopicData(t.name, tuple(
            produce.PartitionData(p.index, NO_RECORDS if p.records is None else p.records)
            for p in t.partition_data
        ))
        for t in req.topic_data
    )  # fmt: skip
    tid = getattr(req, "transactional_id", None)
    return produce.Produce(req.acks, millis(req.timeout), topics, tid)


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
        return make(
            part_cls, index=p.partition, error_code=p.error_code, base_offset=p.base_offset,
            log_append_time=p.log_append_time_ms, log_start_offset=p.log_start_offset,
            record_errors=(), error_message=p.error_message, **extra,
        )  # fmt: skip

    topics = tuple(
        make(topic_cls, name=t.name, partition_responses=tuple(part(p) for p in t.partitions))
        for t in result.topics
    )
    extra: dict[str, Any] = {}
    if hints and result.leader_endpoints:
        node_cls = nested(cls, "NodeEndpoint")
        extra["node_endpoints"] = tuple(
            make(node_cls, node_id=n, host=h, port=port, rack=rack)
            for n, h, port, rack in result.leader_endpoints
        )
    return make(cls, responses=topics, throttle_time=0, **extra)


PRODUCE = Codec(_produce_in, _produce_out)
