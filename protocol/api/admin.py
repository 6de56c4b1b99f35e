"""Topic administration: CreateTopics (19), DeleteTopics (20), DescribeConfigs (32).

Any broker accepts these and acts through ZooKeeper (the controller does the placement work
when it sees the new znodes), as Kafka's ZooKeeper-era brokers did.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.registry import ApiSpec, register

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    partition: int
    broker_ids: list[int]


@dataclass(frozen=True, slots=True)
class CreatableTopic:
    name: str
    num_partitions: int
    replication_factor: int
    assignments: list[ReplicaAssignment]
    configs: dict[str, str]


@dataclass(frozen=True, slots=True)
class CreateTopicsRequest:
    topics: list[CreatableTopic]
    timeout_ms: int
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class CreatableTopicResult:
    name: str
    error_code: int
    error_message: str | None
    num_partitions: int
    replication_factor: int


@dataclass(frozen=True, slots=True)
class CreateTopicsResponse:
    topics: list[CreatableTopicResult]


@dataclass(frozen=True, slots=True)
class DeleteTopicsRequest:
    topic_names: list[str]
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class DeletableTopicResult:
    name: str
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteTopicsResponse:
    responses: list[DeletableTopicResult]


@dataclass(frozen=True, slots=True)
class DescribeConfigsResource:
    resource_type: int
    resource_name: str
    config_names: list[str] | None


@dataclass(frozen=True, slots=True)
class DescribeConfigsRequest:
    resources: list[DescribeConfigsResource]


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool
    is_default: bool


@dataclass(frozen=True, slots=True)
class DescribeConfigsResult:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    configs: list[ConfigEntry]


@dataclass(frozen=True, slots=True)
class DescribeConfigsResponse:
    results: list[DescribeConfigsResult]


CREATE_TOPICS = register(ApiSpec(19, "CreateTopics", CreateTopicsRequest, CreateTopicsResponse))
DELETE_TOPICS = register(ApiSpec(20, "DeleteTopics", DeleteTopicsRequest, DeleteTopicsResponse))
DESCRIBE_CONFIGS = register(
    ApiSpec(32, "DescribeConfigs", DescribeConfigsRequest, DescribeConfigsResponse)
)
