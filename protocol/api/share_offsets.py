"""The share groups' offsets APIs (KIP-932) on the native door: the twins of Kafka's
DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92),
at the same keys, with topics by name (and their ids as a uuid's text, "" when unknown).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec

# ----- DescribeShareGroupOffsets (90) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareOffsetsTopicRequest:
    topic: str
    partitions: list[int]  # empty: every partition


@dataclass(frozen=True, slots=True)
class ShareOffsetsGroupRequest:
    group_id: str
    topics: list[ShareOffsetsTopicRequest] | None = None  # None: the group's topics with state


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsetsRequest:
    groups: list[ShareOffsetsGroupRequest]


@dataclass(frozen=True, slots=True)
class SharePartitionOffset:
    partition: int
    start_offset: int  # -1: no state
    leader_epoch: int
    lag: int  # -1: unknown here
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True)
class ShareTopicOffsets:
    topic: str
    topic_id: str
    partitions: list[SharePartitionOffset]


@dataclass(frozen=True, slots=True)
class ShareGroupOffsets:
    group_id: str
    error_code: int
    error_message: str | None
    topics: list[ShareTopicOffsets]


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsetsResponse:
    groups: list[ShareGroupOffsets]


# ----- AlterShareGroupOffsets (91) -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareOffsetToSet:
    partition: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class ShareTopicToSet:
    topic: str
    partitions: list[ShareOffsetToSet]


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsRequest:
    group_id: str
    topics: list[ShareTopicToSet]


@dataclass(frozen=True, slots=True)
class SharePartitionError:
    partition: int
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True)
class ShareTopicAltered:
    topic: str
    topic_id: str
    partitions: list[SharePartitionError]


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsResponse:
    error_code: int
    error_message: str | None
    topics: list[ShareTopicAltered]


# ----- DeleteShareGroupOffsets (92) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeleteShareGroupOffsetsRequest:
    group_id: str
    topics: list[str]


@dataclass(frozen=True, slots=True)
class ShareTopicDeleted:
    topic: str
    topic_id: str
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True)
class DeleteShareGroupOffsetsResponse:
    error_code: int
    error_message: str | None
    topics: list[ShareTopicDeleted]


DESCRIBE_SHARE_GROUP_OFFSETS = ApiSpec(
    90, "DescribeShareGroupOffsets", DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)  # fmt: skip
ALTER_SHARE_GROUP_OFFSETS = ApiSpec(
    91, "AlterShareGroupOffsets", AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse
)
DELETE_SHARE_GROUP_OFFSETS = ApiSpec(
    92, "DeleteShareGroupOffsets", DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse
)
