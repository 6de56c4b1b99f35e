"""Produce (0), v3-v12: the same appends as the native Produce, answered in Kafka's shape.

Each partition's `records` is one record batch v2 (the bytes the client sent are the bytes
stored: no transcoding); a null `records` is CORRUPT_MESSAGE. acks 0 sends no response, as Kafka.
v10+ answers NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH with the current leader and its
endpoint (KIP-951, _leader_hints.py). v11 changes nothing for a broker; v12 is KIP-890's
transaction version 2 (the produce adds its partition to the transaction), which a client uses
only when the broker's ApiVersions finalizes transaction.version 2: odradek finalizes none, so
a transactional producer still calls AddPartitionsToTxn first, as with Kafka 4.0 at version 1.
"""

from __future__ import annotations

from typing import Any, cast

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import produce as native
from broker.handlers.kafka._adapt import as_native
from broker.handlers.kafka._leader_hints import HINTED, current_leader, endpoints
from broker.session import Session
from protocol.api.produce import PRODUCE, ProducePartition, ProduceRequest, ProduceTopic
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class
from protocol.kafka.versions import PRODUCE as PRODUCE_KEY
from protocol.schema import Records

LEADER_HINTS_FROM = 10
NO_RECORDS = b""  # the native check refuses an empty batch as CORRUPT_MESSAGE


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
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
    result = native.handle(ctx, as_native(PRODUCE, native_req, request), session)
    version = request.header.api_version
    listener = session.listener
    return then(result, lambda r: None if r is None else _answer(ctx, version, r, tid, listener))


def _answer(
    ctx: BrokerContext, version: int, resp: Any, transactional_id: str | None, listener: str
) -> Any:
    cls = response_class(PRODUCE_KEY, version)
    topic_cls = nested(cls, "TopicProduceResponse")
    part_cls = nested(cls, "PartitionProduceResponse")
    hints = version >= LEADER_HINTS_FROM
    leaders: set[int] = set()

    def part(topic: str, p: Any) -> Any:
        extra: dict[str, Any] = {}
        hinted = hints and p.error_code in HINTED  # looked up only on the error path
        hint = current_leader(ctx.metadata, topic, p.partition) if hinted else None
        if hint is not None:
            leaders.add(hint[0])
            extra["current_leader"] = make(
                nested(cls, "LeaderIdAndEpoch"), leader_id=hint[0], leader_epoch=hint[1]
            )
        return make(
            part_cls, index=p.partition, error_code=p.error_code, base_offset=p.base_offset,
            log_append_time=p.log_append_time_ms, log_start_offset=p.log_start_offset,
            record_errors=(), error_message=_message(p.error_message, transactional_id), **extra,
        )  # fmt: skip

    topics = tuple(
        make(
            topic_cls, name=t.name, partition_responses=tuple(part(t.name, p) for p in t.partitions)
        )
        for t in resp.topics
    )
    extra: dict[str, Any] = {}
    if leaders:
        node_cls = nested(cls, "NodeEndpoint")
        extra["node_endpoints"] = tuple(
            make(node_cls, node_id=n, host=h, port=port, rack=rack)
            for n, h, port, rack in endpoints(ctx.metadata, leaders, listener)
        )
    return make(cls, responses=topics, throttle_time=resp.throttle_time_ms, **extra)


def _message(message: str | None, transactional_id: str | None) -> str | None:
    """A transactional producer's error names its transactional id (which producer a fenced
    one was, when several share a process)."""
    if message is None or transactional_id is None:
        return message
    return f"transactional id {transactional_id!r}: {message}"
