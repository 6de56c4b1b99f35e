"""DeleteRecords: raise each partition's log start offset on its leader (broker/delete_records.py),
then wait, up to timeout_ms, until every live replica's log start offset has reached it.

Per partition: NOT_LEADER_FOR_PARTITION / UNKNOWN_TOPIC_OR_PARTITION (this broker does not lead
it), OFFSET_OUT_OF_RANGE (below 0, or above the high watermark), INVALID_TOPIC_EXCEPTION for the
internal offsets topic (Kafka refuses it to clients too), REQUEST_TIMED_OUT (done on the leader,
not yet on every live follower), KAFKA_STORAGE_ERROR. The answer gives the low watermark.
"""

from __future__ import annotations

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
from protocol.api.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from protocol.codec import Request
from protocol.errors import InvalidTopicError, KafkaStorageError, OdradekError

Result = tuple[int, int, str | None]  # (low watermark, error code, message), the field order


async def handle(ctx: BrokerContext, request: Request, session: Session) -> DeleteRecordsResponse:
    req: DeleteRecordsRequest = request.body
    results: dict[Key, Result] = {}
    required: dict[Key, int] = {}
    names = (t.name for t in req.topics)
    refused = rules.denied(ctx, session, rules.DELETE, rules.TOPIC, names, api="DeleteRecords")
    for t in req.topics:
        for p in t.partitions:
            key = (t.name, p.partition)
            try:
                if t.name in refused:
                    raise rules.refusal(session, rules.DELETE, rules.TOPIC, t.name)
                if t.name == OFFSETS_TOPIC:
                    raise InvalidTopicError(f"cannot delete records of internal topic {t.name}")
                required[key] = delete_on_leader(ctx.replicas, t.name, p.partition, p.offset)
            except OdradekError as exc:
                results[key] = (UNKNOWN_LOW_WATERMARK, exc.code, exc.message)
            except OSError as exc:
                results[key] = (UNKNOWN_LOW_WATERMARK, KafkaStorageError.code, str(exc))
    if required:
        alive = ctx.metadata.live_broker_ids
        waited = await await_low_watermarks(ctx.replicas, required, alive, req.timeout_ms)
        for key, (code, low) in waited.items():
            results[key] = (low, code, None)
    return DeleteRecordsResponse(
        [
            DeleteRecordsTopicResult(
                t.name,
                [
                    DeleteRecordsPartitionResult(p.partition, *results[(t.name, p.partition)])
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
    )
