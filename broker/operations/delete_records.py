"""DeleteRecords: raise each partition's log start offset on its leader (broker/delete_records.py),
then wait, up to `timeout_ms`, until every live replica's log start offset has reached it. An
offset of -1 means the high watermark. Each partition is answered with its low watermark (the
smallest log start offset over its live replicas), in the order asked.

Per partition: no Delete on its topic is TOPIC_AUTHORIZATION_FAILED; NOT_LEADER_OR_FOLLOWER /
UNKNOWN_TOPIC_OR_PARTITION (this broker does not lead it), OFFSET_OUT_OF_RANGE (below 0, or above
the high watermark), INVALID_TOPIC_EXCEPTION for the internal offsets topic (Kafka refuses it to
clients too), REQUEST_TIMED_OUT (done on the leader, not yet on every live follower),
KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.delete_records import (
    UNKNOWN_LOW_WATERMARK,
    Key,
    await_low_watermarks,
    delete_on_leader,
)
from broker.security import rules
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from protocol.errors import InvalidTopicError, KafkaStorageError, OdradekError

API = "DeleteRecords"


@dataclass(frozen=True, slots=True)
class RecordsTopic:
    name: str
    partitions: tuple[tuple[int, int], ...]  # (partition, the new log start offset; -1: HW)


@dataclass(frozen=True, slots=True)
class DeleteRecords:
    topics: tuple[RecordsTopic, ...]
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class PartitionDeleted:
    partition: int
    low_watermark: int  # -1 when unknown (an error before the deletion)
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class TopicDeleted:
    name: str
    partitions: tuple[PartitionDeleted, ...]


@dataclass(frozen=True, slots=True)
class DeleteRecordsResult:
    topics: tuple[TopicDeleted, ...]  # in the order asked


async def run(ctx: BrokerContext, session: Session, req: DeleteRecords) -> DeleteRecordsResult:
    results: dict[Key, PartitionDeleted] = {}
    required: dict[Key, int] = {}
    refused = rules.denied(ctx, session, rules.DELETE, rules.TOPIC, (t.name for t in req.topics),
                           api=API)  # fmt: skip
    for t in req.topics:
        for partition, offset in t.partitions:
            try:
                if t.name in refused:
                    raise rules.refusal(session, rules.DELETE, rules.TOPIC, t.name)
                if t.name == OFFSETS_TOPIC:
                    raise InvalidTopicError(f"cannot delete records of internal topic {t.name}")
                required[(t.name, partition)] = delete_on_leader(
                    ctx.replicas, t.name, partition, offset
                )
            except OdradekError as exc:
                results[(t.name, partition)] = _failed(partition, exc.code, exc.message)
            except OSError as exc:
                results[(t.name, partition)] = _failed(partition, KafkaStorageError.code, str(exc))
    if required:
        alive = ctx.metadata.live_broker_ids
        waited = await await_low_watermarks(ctx.replicas, required, alive, req.timeout_ms)
        for (topic, partition), (code, low) in waited.items():
            results[(topic, partition)] = PartitionDeleted(partition, low, code)
    return DeleteRecordsResult(tuple(
        TopicDeleted(t.name, tuple(results[(t.name, p)] for p, _ in t.partitions))
        for t in req.topics
    ))  # fmt: skip


def _failed(partition: int, code: int, message: str | None) -> PartitionDeleted:
    return PartitionDeleted(partition, UNKNOWN_LOW_WATERMARK, code, message)
