"""Metadata (api key 3): brokers, the controller, and each partition's leader, replicas and ISR.

`topics` None asks for every topic. Any broker answers from its metadata cache, which the
controller keeps current with UpdateMetadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.api.spec import ApiSpec


@dataclass(frozen=True, slots=True)
class MetadataRequest:
    topics: list[str] | None
    allow_auto_topic_creation: bool = False


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One advertised listener of a broker: which door (KAFKA_DOOR or NATIVE_DOOR), its
    name (Kafka's listener name), where, and its security protocol."""

    door: str
    name: str
    host: str
    port: int
    security_protocol: str


KAFKA_DOOR = "kafka"
NATIVE_DOOR = "native"


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """`host`/`port`: the native inter-broker listener; `kafka_host`/`kafka_port`: the first
    Kafka listener; `endpoints`: every listener (a client is told the one it came in on)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    kafka_host: str | None = None  # the broker's Kafka listener, when it has one
    kafka_port: int = -1
    endpoints: list[Endpoint] = field(default_factory=list)

    def endpoint(self, door: str, listener: str) -> tuple[str, int] | None:
        """(host, port) of the listener named `listener` on `door`; None when it has none.
        A broker that lists no endpoints (a registration from before them) has the
        legacy pair on every name."""
        if not self.endpoints:
            if door == NATIVE_DOOR:
                return self.host, self.port
            return None if self.kafka_host is None else (self.kafka_host, self.kafka_port)
        for e in self.endpoints:
            if e.door == door and e.name == listener:
                return e.host, e.port
        return None


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    error_code: int
    partition: int
    leader: int  # -1: offline
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]


# Kafka's internal topics (Topic.INTERNAL_TOPICS): the group, transaction and share
# coordinators' logs.
# Metadata marks them `is_internal` on both doors; `kafka-topics.sh --exclude-internal` and
# `odradek topics list --exclude-internal` leave them out, and pattern subscriptions skip them.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    error_code: int
    name: str
    is_internal: bool
    partitions: list[PartitionMetadata]


@dataclass(frozen=True, slots=True)
class MetadataResponse:
    brokers: list[BrokerInfo]
    cluster_id: str | None
    controller_id: int
    topics: list[TopicMetadata]


METADATA = ApiSpec(3, "Metadata", MetadataRequest, MetadataResponse)
