"""Share groups (KIP-932) on the native door: the twins of Kafka's ShareGroupHeartbeat (76),
ShareGroupDescribe (77), ShareFetch (78) and ShareAcknowledge (79), at the same keys.

Topics are named by id in ShareFetch and ShareAcknowledge, as Kafka's (a uuid's text here);
the heartbeat's assignment gives each assigned topic's name beside its id, which is how a
native member learns the ids it fetches with (the native Metadata has no topic ids).
Acknowledgement types are Kafka's: 0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT, 4 RENEW; a batch
carries one type for its whole range, or one per offset.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec
from protocol.schema import Records

# ----- ShareGroupHeartbeat (76) ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatRequest:
    group_id: str
    member_id: str  # made by the client (a uuid), as Kafka's
    member_epoch: int  # 0 joins, -1 leaves
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None  # None: unchanged
    client_id: str = ""


@dataclass(frozen=True, slots=True)
class ShareAssignedTopic:
    topic: str  # "" when the broker's metadata does not know the id's name
    topic_id: str
    partitions: list[int]


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatResponse:
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: list[ShareAssignedTopic] | None  # None: unchanged


# ----- ShareGroupDescribe (77) -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupDescribeRequest:
    group_ids: list[str]


@dataclass(frozen=True, slots=True)
class ShareMemberDescription:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: list[ShareAssignedTopic]


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    group_id: str
    error_code: int
    error_message: str | None
    state: str  # Kafka's: Empty, Stable, Dead
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[ShareMemberDescription]


@dataclass(frozen=True, slots=True)
class ShareGroupDescribeResponse:
    groups: list[ShareGroupDescription]


# ----- ShareFetch (78) and ShareAcknowledge (79) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareAckBatch:
    first_offset: int
    last_offset: int
    types: list[int]  # one for the whole range, or one per offset


@dataclass(frozen=True, slots=True)
class SharePartitionRequest:
    topic_id: str
    partition: int
    acks: list[ShareAckBatch]


@dataclass(frozen=True, slots=True)
class ShareForgotten:
    topic_id: str
    partition: int


@dataclass(frozen=True, slots=True)
class ShareFetchRequest:
    group_id: str
    member_id: str
    session_epoch: int  # 0 opens a share session, -1 closes it
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    partitions: list[SharePartitionRequest]  # added to the session, with acknowledgements
    forgotten: list[ShareForgotten]


@dataclass(frozen=True, slots=True)
class ShareAcquired:
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class SharePartitionData:
    topic_id: str
    partition: int
    error_code: int
    error_message: str | None
    acknowledge_error_code: int
    records: Records
    acquired: list[ShareAcquired]


@dataclass(frozen=True, slots=True)
class ShareFetchResponse:
    error_code: int
    error_message: str | None
    lock_timeout_ms: int
    partitions: list[SharePartitionData]


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeRequest:
    group_id: str
    member_id: str
    session_epoch: int
    partitions: list[SharePartitionRequest]


@dataclass(frozen=True, slots=True)
class ShareAcknowledged:
    topic_id: str
    partition: int
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeResponse:
    error_code: int
    error_message: str | None
    partitions: list[ShareAcknowledged]


SHARE_GROUP_HEARTBEAT = ApiSpec(
    76, "ShareGroupHeartbeat", ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
)
SHARE_GROUP_DESCRIBE = ApiSpec(
    77, "ShareGroupDescribe", ShareGroupDescribeRequest, ShareGroupDescribeResponse
)
SHARE_FETCH = ApiSpec(78, "ShareFetch", ShareFetchRequest, ShareFetchResponse)
SHARE_ACKNOWLEDGE = ApiSpec(79, "ShareAcknowledge", ShareAcknowledgeRequest,
                            ShareAcknowledgeResponse)  # fmt: skip
