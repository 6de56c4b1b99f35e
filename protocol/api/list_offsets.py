"""ListOffsets (api key 2): earliest (-2), latest (-1) or the first offset at or after a time;
also, as Kafka 4.0: max timestamp (-3, KIP-734: the record with the largest timestamp),
earliest local (-4, KIP-405: the log start, as odradek has no tiered storage) and latest
tiered (-5: offset -1, nothing is tiered); as Kafka 4.2, earliest pending upload (-6,
KIP-1023: offset -1, as Kafka answers for a topic not tiered)."""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6


@dataclass(frozen=True, slots=True)
class ListOffsetsPartition:
    partition: int
    timestamp: int
    current_leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ListOffsetsTopic:
    name: str
    partitions: list[ListOffsetsPartition]


@dataclass(frozen=True, slots=True)
class ListOffsetsRequest:
    replica_id: int
    topics: list[ListOffsetsTopic]
    isolation_level: int = 0  # 1 (read_committed): LATEST is the last stable offset


@dataclass(frozen=True, slots=True)
class ListOffsetsPartitionResponse:
    partition: int
    error_code: int
    timestamp: int
    offset: int
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ListOffsetsTopicResponse:
    name: str
    partitions: list[ListOffsetsPartitionResponse]


@dataclass(frozen=True, slots=True)
class ListOffsetsResponse:
    topics: list[ListOffsetsTopicResponse]


LIST_OFFSETS = ApiSpec(2, "ListOffsets", ListOffsetsRequest, ListOffsetsResponse)
