"""Fetch (api key 1): many partitions per request, as seed 001 describes.

Consumers send replica_id -1; followers send their broker id (replication). The broker waits up
to max_wait_ms for min_bytes to accumulate (long polling) and answers with at most
partition_max_bytes per partition and max_bytes in all; at least one whole batch is returned for
the first partition with data even when it is larger, so a consumer never gets stuck.
`records` is served straight from the segment file.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.registry import ApiSpec, register
from protocol.schema import Records

CONSUMER_REPLICA_ID = -1


@dataclass(frozen=True, slots=True)
class FetchPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1  # followers report theirs


@dataclass(frozen=True, slots=True)
class FetchTopic:
    name: str
    partitions: list[FetchPartition]


@dataclass(frozen=True, slots=True)
class FetchRequest:
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: list[FetchTopic]


@dataclass(frozen=True, slots=True)
class FetchPartitionResponse:
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    records: Records


@dataclass(frozen=True, slots=True)
class FetchTopicResponse:
    name: str
    partitions: list[FetchPartitionResponse]


@dataclass(frozen=True, slots=True)
class FetchResponse:
    error_code: int
    topics: list[FetchTopicResponse]
    throttle_time_ms: int = 0


FETCH = register(ApiSpec(1, "Fetch", FetchRequest, FetchResponse))
