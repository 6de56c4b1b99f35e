"""The plain values the client library hands to and takes from users.

All are NamedTuples: cheap to build (a consumer makes one per record), immutable, hashable
where their fields are, and printable. Names and field orders follow kafka-python/aiokafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


def partition_words(tp: tuple[str, int]) -> str:
    """A partition as an error message names it: "topic orders partition 0" (a message that
    printed the tuple showed "TopicPartition(topic='orders', partition=0)")."""
    return f"topic {tp[0]} partition {tp[1]}"


def partitions_words(tps: Sequence[tuple[str, int]]) -> str:
    """Several partitions, by topic: "topic orders partitions 0, 1; topic audit partition 3"."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(tps):
        by_topic.setdefault(topic, []).append(partition)
    return "; ".join(
        f"topic {t} partition{'s' if len(ps) > 1 else ''} {', '.join(map(str, ps))}"
        for t, ps in by_topic.items()
    )


class ConsumerRecord(NamedTuple):
    """One fetched record. `headers` is a sequence of (name, value) pairs, or None."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]] | None


class RecordMetadata(NamedTuple):
    """Where one produced record landed."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class BatchMetadata(NamedTuple):
    """Where a bulk batch (`send_batch`) landed: records base_offset .. base_offset+count-1."""

    topic: str
    partition: int
    base_offset: int
    record_count: int
    timestamp: int


class NewTopic(NamedTuple):
    """A topic to create: `num_partitions` and `replication_factor`, or with
    `replica_assignment` each partition's replicas (partition i: the i-th list, its first broker
    the preferred leader), the counts then ignored and sent as -1, as Kafka wants them."""

    name: str
    num_partitions: int
    replication_factor: int = 1
    configs: dict[str, str] = {}  # shared default: never mutated, copied before use
    replica_assignment: tuple[tuple[int, ...], ...] | None = None


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


class PartitionDescription(NamedTuple):
    partition: int
    leader: int  # -1: offline
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    error_code: int


class TopicDescription(NamedTuple):
    name: str
    is_internal: bool
    partitions: list[PartitionDescription]
    error_code: int
