"""The share coordinator's five state APIs on the native door (KIP-932, Kafka's api keys
83-87): InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
DeleteShareGroupState and ReadShareGroupStateSummary, broker to broker (a partition leader's
persister asks its share partitions' coordinator, FindCoordinator key type 2).

All five carry one group id and, by topic id (its 16 bytes), partitions; each partition names
only what its API reads (`state_epoch` and `start_offset` for Initialize, `leader_epoch` for
Read, everything for Write, nothing for Delete) and leaves the rest at -1. One answer shape
serves the five: per partition its error and, for the reads, the state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.api.spec import ApiSpec


@dataclass(frozen=True, slots=True)
class WireStateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int  # 0 Available, 2 Acknowledged, 4 Archived
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareStatePartition:
    partition: int
    state_epoch: int = -1
    leader_epoch: int = -1
    start_offset: int = -1
    delivery_complete_count: int = -1
    state_batches: list[WireStateBatch] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ShareStateTopic:
    topic_id: bytes  # the topic id's 16 bytes
    partitions: list[ShareStatePartition]


@dataclass(frozen=True, slots=True)
class InitializeShareGroupStateRequest:
    group_id: str
    topics: list[ShareStateTopic]


@dataclass(frozen=True, slots=True)
class ReadShareGroupStateRequest:
    group_id: str
    topics: list[ShareStateTopic]


@dataclass(frozen=True, slots=True)
class WriteShareGroupStateRequest:
    group_id: str
    topics: list[ShareStateTopic]


@dataclass(frozen=True, slots=True)
class DeleteShareGroupStateRequest:
    group_id: str
    topics: list[ShareStateTopic]


@dataclass(frozen=True, slots=True)
class ReadShareGroupStateSummaryRequest:
    group_id: str
    topics: list[ShareStateTopic]


@dataclass(frozen=True, slots=True)
class ShareStatePartitionResult:
    partition: int
    error_code: int
    error_message: str | None = None
    state_epoch: int = -1
    leader_epoch: int = -1
    start_offset: int = -1
    delivery_complete_count: int = -1
    state_batches: list[WireStateBatch] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ShareStateTopicResult:
    topic_id: bytes
    partitions: list[ShareStatePartitionResult]


@dataclass(frozen=True, slots=True)
class ShareStateResponse:
    topics: list[ShareStateTopicResult]


INITIALIZE_SHARE_GROUP_STATE = ApiSpec(
    83, "InitializeShareGroupState", InitializeShareGroupStateRequest, ShareStateResponse
)
READ_SHARE_GROUP_STATE = ApiSpec(
    84, "ReadShareGroupState", ReadShareGroupStateRequest, ShareStateResponse
)
WRITE_SHARE_GROUP_STATE = ApiSpec(
    85, "WriteShareGroupState", WriteShareGroupStateRequest, ShareStateResponse
)
DELETE_SHARE_GROUP_STATE = ApiSpec(
    86, "DeleteShareGroupState", DeleteShareGroupStateRequest, ShareStateResponse
)
READ_SHARE_GROUP_STATE_SUMMARY = ApiSpec(
    87, "ReadShareGroupStateSummary", ReadShareGroupStateSummaryRequest, ShareStateResponse
)
