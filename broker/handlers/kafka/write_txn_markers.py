"""WriteTxnMarkers (27), v1-v2: end transactions on partitions this broker leads, through the
Kafka door: what `kafka-transactions.sh abort` (and kafka-python's admin abort_transaction)
sends to a partition's leader to abort a hanging transaction, and what a Kafka coordinator
would send. The same appends as the native WriteTxnMarkers (broker/handlers/write_txn_markers.py)
that odradek's own coordinators send; v2's transaction_version is carried, not needed (the
marker is the same)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.write_txn_markers import may_write_markers, refused_marker, write_marker
from broker.session import Session
from protocol.api.txn_markers import TxnMarker, TxnMarkerTopic
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import WRITE_TXN_MARKERS


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    cls = response_class(WRITE_TXN_MARKERS, request.header.api_version)
    result_cls = nested(cls, "WritableTxnMarkerResult")
    topic_cls = nested(cls, "WritableTxnMarkerTopicResult")
    part_cls = nested(cls, "WritableTxnMarkerPartitionResult")
    results = []
    allowed = may_write_markers(ctx, session)
    for m in request.body.markers:
        native = TxnMarker(
            m.producer_id, m.producer_epoch, bool(m.transaction_result), m.coordinator_epoch,
            [TxnMarkerTopic(t.name, [int(p) for p in t.partition_indexes]) for t in m.topics],
        )  # fmt: skip
        done = await write_marker(ctx, native) if allowed else refused_marker(native)
        results.append(make(result_cls, producer_id=done.producer_id, topics=tuple(
            make(topic_cls, name=t.name, partitions=tuple(
                make(part_cls, partition_index=p.partition, error_code=p.error_code)
                for p in t.partitions))
            for t in done.topics)))  # fmt: skip
    return make(cls, markers=tuple(results))
