"""Consumer groups: FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13),
OffsetCommit (8), OffsetFetch (9), DescribeGroups (15), ListGroups (16), DeleteGroups (42).

Fields follow seed 000's redesign (the 0.9 wiki design, and KIP-848): the coordinator assigns,
so JoinGroup answers with the partitions the member owns and there is no SyncGroup.

    FindCoordinator   GroupId (the key), KeyType               -> ErrorCode, Coordinator
    JoinGroup         GroupId, SessionTimeout, Topics, ConsumerId, PartitionAssignmentStrategy
                      (+ rebalance timeout, client id, an optional topic pattern)
                                                               -> ErrorCode, GroupGenerationId,
                                                                  ConsumerId, PartitionsToOwn
    Heartbeat         GroupId, GroupGenerationId, ConsumerId   -> ErrorCode

A member may name a group instance id (static membership, KIP-345): back from a restart with
an empty member id it gets a new id and its old assignment without a rebalance, and the old id
is fenced (FENCED_INSTANCE_ID). LeaveGroup with member id "" and an instance id removes that
static member (an admin's removal).

An empty member id in JoinGroup asks the coordinator for a new one. A JoinGroup is answered
when the rebalance it takes part in completes (or fails), so it may wait up to the group's
rebalance timeout.

FindCoordinator's key type is Kafka's: 0 a group (the key is its id), 1 a transactional id,
whose coordinator is the leader of its `__transaction_state` partition (protocol/api/txn.py).

DescribeGroups and ListGroups also show the groups of Kafka clients (Kafka's classic protocol,
through the Kafka door): their protocol type ("consumer"; None for a native group or one with
no members), the state as Kafka names it, each member's host, and the partitions decoded from
the assignment its leader handed out.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec

NO_GENERATION = -1
NO_MEMBER = ""
GROUP_KEY_TYPE = 0  # FindCoordinator: a consumer group's coordinator
TRANSACTION_KEY_TYPE = 1  # FindCoordinator: a transactional id's (protocol/api/txn.py)
SHARE_KEY_TYPE = 2  # FindCoordinator: a share partition's share coordinator (KIP-932)


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic: str
    partitions: list[int]


# ----- FindCoordinator (ConsumerMetadataRequest) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class FindCoordinatorRequest:
    group_id: str  # the key: a group id, or a transactional id (key_type 1)
    key_type: int = GROUP_KEY_TYPE


@dataclass(frozen=True, slots=True)
class FindCoordinatorResponse:
    error_code: int
    error_message: str | None
    node_id: int
    host: str
    port: int


# ----- JoinGroup ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    topics: list[str]
    member_id: str
    assignment_strategy: str
    rebalance_timeout_ms: int = 30_000
    client_id: str = ""
    topic_pattern: str | None = None  # a regex; topics matching it are subscribed too
    group_instance_id: str | None = None  # static membership (KIP-345); None: dynamic


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error_code: int
    generation_id: int
    member_id: str
    partitions_to_own: list[TopicPartitions]
    error_message: str | None = None


# ----- Heartbeat / LeaveGroup -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: int


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    member_id: str  # "" with an instance id: remove the static member of that id (admin)
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error_code: int


# ----- OffsetCommit / OffsetFetch -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommitPartition:
    partition: int
    offset: int
    metadata: str | None = None
    leader_epoch: int = -1  # KIP-320's committed leader epoch; -1: not given


@dataclass(frozen=True, slots=True)
class CommitTopic:
    name: str
    partitions: list[CommitPartition]


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_id: int  # -1 with member "": a commit from outside the group (admin reset)
    member_id: str
    topics: list[CommitTopic]
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionResult:
    partition: int
    error_code: int


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    partitions: list[PartitionResult]


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    topics: list[TopicResult]


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    topics: list[TopicPartitions] | None  # None: every committed partition of the group


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    partition: int
    offset: int  # -1: nothing committed
    metadata: str | None
    error_code: int
    leader_epoch: int = -1  # the committed leader epoch; -1: none


@dataclass(frozen=True, slots=True)
class FetchedTopic:
    name: str
    partitions: list[FetchedOffset]


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error_code: int
    topics: list[FetchedTopic]


# ----- DescribeGroups / ListGroups / DeleteGroups ---------------------------------------------


@dataclass(frozen=True, slots=True)
class DescribeGroupsRequest:
    group_ids: list[str]


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    client_id: str
    assignment: list[TopicPartitions]
    client_host: str = ""  # Kafka groups: the member's address as Kafka shows it, "/127.0.0.1"
    group_instance_id: str | None = None  # a static member's (KIP-345)
    member_epoch: int = -1  # a consumer group's (KIP-848); -1: a classic member
    target_assignment: list[TopicPartitions] | None = None  # a consumer group's; None: classic


@dataclass(frozen=True, slots=True)
class GroupDescription:
    error_code: int
    group_id: str
    state: str
    generation_id: int
    assignment_strategy: str
    members: list[MemberDescription]
    protocol_type: str | None = None  # a Kafka group's ("consumer"); None: native, or no members
    kafka_state: str = ""  # the state as Kafka names it: Stable, PreparingRebalance, ...
    group_type: str = "classic"  # "consumer": a KIP-848 group (then the epochs below)
    group_epoch: int = -1
    target_assignment_epoch: int = -1


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    groups: list[GroupDescription]


@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    states: list[str] | None = None


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    state: str
    protocol_type: str | None = None  # as GroupDescription's
    kafka_state: str = ""
    group_type: str = "classic"  # or "consumer" (KIP-848)


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    error_code: int
    groups: list[ListedGroup]


@dataclass(frozen=True, slots=True)
class DeleteGroupsRequest:
    group_ids: list[str]


@dataclass(frozen=True, slots=True)
class DeletedGroup:
    group_id: str
    error_code: int


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    results: list[DeletedGroup]


OFFSET_COMMIT = ApiSpec(8, "OffsetCommit", OffsetCommitRequest, OffsetCommitResponse)
OFFSET_FETCH = ApiSpec(9, "OffsetFetch", OffsetFetchRequest, OffsetFetchResponse)
FIND_COORDINATOR = ApiSpec(10, "FindCoordinator", FindCoordinatorRequest, FindCoordinatorResponse)
JOIN_GROUP = ApiSpec(11, "JoinGroup", JoinGroupRequest, JoinGroupResponse)
HEARTBEAT = ApiSpec(12, "Heartbeat", HeartbeatRequest, HeartbeatResponse)
LEAVE_GROUP = ApiSpec(13, "LeaveGroup", LeaveGroupRequest, LeaveGroupResponse)
DESCRIBE_GROUPS = ApiSpec(15, "DescribeGroups", DescribeGroupsRequest, DescribeGroupsResponse)
LIST_GROUPS = ApiSpec(16, "ListGroups", ListGroupsRequest, ListGroupsResponse)
DELETE_GROUPS = ApiSpec(42, "DeleteGroups", DeleteGroupsRequest, DeleteGroupsResponse)


# ----- ConsumerGroupHeartbeat (KIP-848, the consumer protocol) ----------------------------------
# The native twin of Kafka's ConsumerGroupHeartbeat (68): one request joins (member epoch 0),
# heartbeats, reports the partitions the member owns, and leaves (-1; -2 a static member). The
# native door names topics, not ids (the broker maps them with its metadata cache).


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str  # made by the client (a uuid), as Kafka's v1 (KIP-1082)
    member_epoch: int  # 0 joins, -1 leaves, -2 leaves a static member's place
    instance_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None  # None: unchanged
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: list[TopicPartitions] | None = None  # None: unchanged since the last heartbeat
    client_id: str = ""


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: list[TopicPartitions] | None  # None: unchanged


CONSUMER_GROUP_HEARTBEAT = ApiSpec(
    68,
    "ConsumerGroupHeartbeat",
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
