"""Controller-to-broker requests: LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6),
and ControlledShutdown (7, broker-to-controller); the admin requests only the controller
answers: ElectLeaders (43, preferred leader election), AlterPartitionReassignments (45) and
ListPartitionReassignments (46). A broker that is not the controller answers those with
NOT_CONTROLLER; clients find the controller from Metadata's controller_id.

The controller batches these per broker (seed 002: one notification per broker, not one per
partition). Each carries the controller epoch; a broker that has seen a newer epoch answers
STALE_CONTROLLER_EPOCH and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.metadata import BrokerInfo
from protocol.api.spec import ApiSpec


@dataclass(frozen=True, slots=True)
class PartitionState:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: list[int]
    zk_version: int
    replicas: list[int]
    offline_replicas: list[int]
    is_new: bool = False
    # KIP-516: the topic's id in its string form (protocol/topic_ids.py); None for a topic
    # the controller has not given one yet. Brokers keep it in the metadata cache and in
    # each replica's partition.metadata.
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    controller_id: int
    controller_epoch: int
    partition_states: list[PartitionState]
    live_leaders: list[BrokerInfo]


@dataclass(frozen=True, slots=True)
class PartitionError:
    topic: str
    partition: int
    error_code: int


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponse:
    error_code: int
    partitions: list[PartitionError]


@dataclass(frozen=True, slots=True)
class TopicPartitionRef:
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class StopReplicaRequest:
    controller_id: int
    controller_epoch: int
    delete_partitions: bool
    partitions: list[TopicPartitionRef]


@dataclass(frozen=True, slots=True)
class StopReplicaResponse:
    error_code: int
    partitions: list[PartitionError]


@dataclass(frozen=True, slots=True)
class UpdateMetadataRequest:
    controller_id: int
    controller_epoch: int
    partition_states: list[PartitionState]
    live_brokers: list[BrokerInfo]
    deleted_topics: list[str]


@dataclass(frozen=True, slots=True)
class UpdateMetadataResponse:
    error_code: int


@dataclass(frozen=True, slots=True)
class ControlledShutdownRequest:
    broker_id: int


@dataclass(frozen=True, slots=True)
class ControlledShutdownResponse:
    error_code: int
    remaining_partitions: list[TopicPartitionRef]


LEADER_AND_ISR = ApiSpec(4, "LeaderAndIsr", LeaderAndIsrRequest, LeaderAndIsrResponse)
STOP_REPLICA = ApiSpec(5, "StopReplica", StopReplicaRequest, StopReplicaResponse)
UPDATE_METADATA = ApiSpec(6, "UpdateMetadata", UpdateMetadataRequest, UpdateMetadataResponse)
CONTROLLED_SHUTDOWN = ApiSpec(
    7, "ControlledShutdown", ControlledShutdownRequest, ControlledShutdownResponse
)


@dataclass(frozen=True, slots=True)
class ElectLeadersRequest:
    partitions: list[TopicPartitionRef] | None  # None: every partition
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class PartitionResult:
    topic: str
    partition: int
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True)
class ElectLeadersResponse:
    error_code: int
    results: list[PartitionResult]


@dataclass(frozen=True, slots=True)
class ReassignmentTarget:
    topic: str
    partition: int
    replicas: list[int]


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsRequest:
    timeout_ms: int
    partitions: list[ReassignmentTarget]


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsResponse:
    error_code: int
    error_message: str | None
    results: list[PartitionResult]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsRequest:
    timeout_ms: int
    partitions: list[TopicPartitionRef] | None  # None: every reassignment in progress


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    topic: str
    partition: int
    replicas: list[int]  # the assignment now (targets first, then the replicas leaving)
    adding_replicas: list[int]
    removing_replicas: list[int]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsResponse:
    error_code: int
    error_message: str | None
    reassignments: list[OngoingReassignment]


ELECT_LEADERS = ApiSpec(43, "ElectLeaders", ElectLeadersRequest, ElectLeadersResponse)
ALTER_PARTITION_REASSIGNMENTS = ApiSpec(
    45,
    "AlterPartitionReassignments",
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
LIST_PARTITION_REASSIGNMENTS = ApiSpec(
    46,
    "ListPartitionReassignments",
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
