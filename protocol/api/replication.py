"""OffsetForLeaderEpoch (api key 23, Kafka's name): a follower asks the leader where an epoch ends.

KIP-101: a replica that becomes a follower (a new one, or an old leader coming back) sends, for
each partition, the latest leader epoch in its own log (`leader_epoch`) and the epoch of the
leadership it knows (`current_leader_epoch`, fenced like Fetch: older -> FENCED_LEADER_EPOCH,
newer -> UNKNOWN_LEADER_EPOCH). The leader answers with the largest epoch it knows that is
<= the one asked for and the offset where that epoch ends in its log (its log end offset for
its latest epoch; -1/-1 when it knows no such epoch). The follower truncates to the smaller of
that end offset and its own end for the same epoch (KIP-279 walks back when the answer's epoch
is older than the one asked for).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class OffsetForLeaderPartition:
    partition: int
    current_leader_epoch: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class OffsetForLeaderTopic:
    name: str
    partitions: list[OffsetForLeaderPartition]


@dataclass(frozen=True, slots=True)
class OffsetsForLeaderEpochRequest:
    replica_id: int
    topics: list[OffsetForLeaderTopic]


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    partition: int
    error_code: int
    leader_epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class OffsetForLeaderTopicResult:
    name: str
    partitions: list[EpochEndOffset]


@dataclass(frozen=True, slots=True)
class OffsetsForLeaderEpochResponse:
    topics: list[OffsetForLeaderTopicResult]
    throttle_time_ms: int = 0


OFFSETS_FOR_LEADER_EPOCH = ApiSpec(
    23, "OffsetForLeaderEpoch", OffsetsForLeaderEpochRequest, OffsetsForLeaderEpochResponse
)
