"""Topic administration: CreateTopics (19), DeleteTopics (20), DescribeConfigs (32),
AlterConfigs (33) and CreatePartitions (37).

Any broker accepts these and acts through ZooKeeper (the controller does the placement work
when it sees the new znodes; every broker applies a topic's new config when it sees its change
notification), as Kafka's ZooKeeper-era brokers did.

AlterConfigs carries both of Kafka's config APIs: `incremental=False` replaces a resource's
whole override set with the configs listed (Kafka's AlterConfigs, 33); `incremental=True`
applies each config's `op` (Kafka's IncrementalAlterConfigs, 44: SET, DELETE, and APPEND and
SUBTRACT, which only list configs take: `cleanup.policy`). Which topic configs exist, their
types, defaults and docs: protocol/topic_config.py.

DescribeConfigs answers as Kafka's: each entry's source, its synonyms when asked (the topic's
override, then the broker's setting, then the default: where the value would come from in
turn), read-only and sensitive flags, type, and its documentation when asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.api.spec import ApiSpec

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32  # a group's configs (KIP-848; coordinator/group/group_configs.py)

# Where a described config's value comes from (Kafka's DescribeConfigs config_source).
SOURCE_TOPIC_CONFIG = 1  # the topic's own override (/config/topics/<topic>)
SOURCE_DYNAMIC_BROKER_CONFIG = 2  # this broker's own dynamic config (/config/brokers/<id>)
SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = 3  # the cluster default (/config/brokers/<default>)
SOURCE_STATIC_BROKER_CONFIG = 4  # set in the broker's config file
SOURCE_DEFAULT_CONFIG = 5  # nobody set it: the built-in default
SOURCE_GROUP_CONFIG = 8  # the group's own config (/config/groups/<group>)
SOURCE_NAMES = {SOURCE_TOPIC_CONFIG: "DYNAMIC_TOPIC_CONFIG",
                SOURCE_DYNAMIC_BROKER_CONFIG: "DYNAMIC_BROKER_CONFIG",
                SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                SOURCE_STATIC_BROKER_CONFIG: "STATIC_BROKER_CONFIG",
                SOURCE_DEFAULT_CONFIG: "DEFAULT_CONFIG",
                SOURCE_GROUP_CONFIG: "DYNAMIC_GROUP_CONFIG"}  # Kafka's names  # fmt: skip

# A config's type (Kafka's DescribeConfigs config_type, v3+); UNKNOWN where we cannot tell.
TYPE_UNKNOWN, TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_SHORT, TYPE_LONG = 0, 1, 2, 3, 4, 5
TYPE_DOUBLE, TYPE_LIST, TYPE_CLASS, TYPE_PASSWORD = 6, 7, 8, 9

# IncrementalAlterConfigs operations (Kafka's AlterConfigOp.OpType ids).
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3


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
    include_synonyms: bool = False
    include_documentation: bool = False


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """One place a config's value may come from: `name` as that place calls it (the topic
    config's name for an override, the broker setting's name for the broker's)."""

    name: str
    value: str | None
    source: int


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool
    is_default: bool
    source: int = SOURCE_DEFAULT_CONFIG
    config_type: int = TYPE_UNKNOWN
    is_sensitive: bool = False
    synonyms: list[ConfigSynonym] = field(default_factory=list)  # when include_synonyms
    documentation: str | None = None  # when include_documentation


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


@dataclass(frozen=True, slots=True)
class AlterableConfig:
    name: str
    value: str | None  # None: DELETE (incremental), or left out (a whole-set replace)
    op: int = OP_SET  # incremental only


@dataclass(frozen=True, slots=True)
class AlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: list[AlterableConfig]


@dataclass(frozen=True, slots=True)
class AlterConfigsRequest:
    resources: list[AlterConfigsResource]
    validate_only: bool = False
    incremental: bool = True  # False: the configs listed replace the whole override set


@dataclass(frozen=True, slots=True)
class AlterConfigsResult:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str


@dataclass(frozen=True, slots=True)
class AlterConfigsResponse:
    results: list[AlterConfigsResult]


@dataclass(frozen=True, slots=True)
class CreatePartitionsTopic:
    name: str
    count: int  # the new total number of partitions
    assignments: list[list[int]] | None  # replicas of each added partition; None: placed


@dataclass(frozen=True, slots=True)
class CreatePartitionsRequest:
    topics: list[CreatePartitionsTopic]
    timeout_ms: int
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class CreatePartitionsResult:
    name: str
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class CreatePartitionsResponse:
    results: list[CreatePartitionsResult]


CREATE_TOPICS = ApiSpec(19, "CreateTopics", CreateTopicsRequest, CreateTopicsResponse)
DELETE_TOPICS = ApiSpec(20, "DeleteTopics", DeleteTopicsRequest, DeleteTopicsResponse)
DESCRIBE_CONFIGS = ApiSpec(32, "DescribeConfigs", DescribeConfigsRequest, DescribeConfigsResponse)
ALTER_CONFIGS = ApiSpec(33, "AlterConfigs", AlterConfigsRequest, AlterConfigsResponse)
CREATE_PARTITIONS = ApiSpec(
    37, "CreatePartitions", CreatePartitionsRequest, CreatePartitionsResponse
)
