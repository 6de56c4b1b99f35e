"""DeleteRecords (api key 21): raise partitions' log start offsets (Kafka's DeleteRecords).

Sent to each partition's leader. `offset` is the new log start offset (records below it are gone
for readers, and closed segments wholly below it are deleted); -1 means the high watermark. The
answer waits, up to `timeout_ms`, until every live replica's log start offset has reached it,
and gives the partition's `low_watermark` (the smallest log start offset over its replicas).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec

DELETE_TO_HIGH_WATERMARK = -1


@dataclass(frozen=True, slots=True)
class DeleteRecordsPartition:
    partition: int
    offset: int  # the new log start offset; DELETE_TO_HIGH_WATERMARK: the high watermark


@dataclass(frozen=True, slots=True)
class DeleteRecordsTopic:
    name: str
    partitions: list[DeleteRecordsPartition]


@dataclass(frozen=True, slots=True)
class DeleteRecordsRequest:
    topics: list[DeleteRecordsTopic]
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class DeleteRecordsPartitionResult:
    partition: int
    low_watermark: int  # -1 when unknown (an error before the deletion)
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteRecordsTopicResult:
    name: str
    partitions: list[DeleteRecordsPartitionResult]


@dataclass(frozen=True, slots=True)
class DeleteRecordsResponse:
    topics: list[DeleteRecordsTopicResult]


DELETE_RECORDS = ApiSpec(21, "DeleteRecords", DeleteRecordsRequest, DeleteRecordsResponse)
