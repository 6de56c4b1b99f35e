"""Metadata (api key 3): brokers, the controller, and each partition's leader, replicas and ISR.

`topics` None asks for every topic. Any broker answers from its metadata cache, which the
controller keeps current with UpdateMetadata.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.registry import ApiSpec, register


@dataclass(frozen=True, slots=True)
class MetadataRequest:
    topics: list[str] | None
    allow_auto_topic_creation: bool = False


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    kafka_host: str | None = None  # the broker's Kafka listener, when it has one
    kafka_port: int = -1


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    error_code: int
    partition: int
    leader: int  # -1: offline
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]


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


METADATA = register(ApiSpec(3, "Metadata", MetadataRequest, MetadataResponse))
