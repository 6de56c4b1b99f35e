"""What a coordinator needs of the broker: its internal topic's partitions and the cluster.

`CoordinatorLog`: the partitions of an internal topic this broker leads, their records to
replay, and appends that wait until the in-sync replicas have them. The broker's
ReplicaManager (broker/replica_manager.py) implements it; a coordinator sees nothing else of
the broker's partitions, so it never reads segment files or partition state itself. A
partition is named by (topic, partition), so the runtime says nothing of which topic a
coordinator keeps its records in.

`ClusterView` is what a coordinator reads of the cluster's metadata (the broker's
MetadataCache), and `TopicCreator` how it creates its internal topic on first use (the same
store CreateTopics uses). Both are protocols so that `coordinator/` never imports `broker/`:
the broker hands its objects in.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol


class CoordinatorLog(Protocol):
    def led_partitions(self, topic: str) -> dict[int, int]:
        """Partition -> leader epoch, for every partition of `topic` this broker leads now."""
        ...

    def leads(self, topic: str, partition: int, leader_epoch: int) -> bool:
        """Does this broker still lead the partition, in that leader epoch? (Checked on every
        request, so a coordinator whose leadership ended answers NOT_COORDINATOR at once,
        however the leadership ended: LeaderAndIsr, StopReplica, the ZooKeeper fence.)"""
        ...

    def log_range(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(log start offset, log end offset) of a partition hosted here; None if it is not."""
        ...

    def read_records(
        self, topic: str, partition: int, offset: int, max_bytes: int, max_offset: int
    ) -> tuple[bytes, int] | None:
        """Whole record batches from the one holding `offset` and below `max_offset` (about
        `max_bytes`, at least one batch), and the offset after the last one; None when there
        is nothing to read there."""
        ...

    async def append_replicated(
        self, topic: str, partition: int, records: bytes, timeout_ms: int
    ) -> int:
        """Append a batch as leader with acks=all, wait (at most `timeout_ms` for the
        replicas) until the high watermark passes it: its error code, 0 once replicated."""
        ...


class PartitionLeader(Protocol):
    @property
    def leader(self) -> int: ...


class BrokerAddress(Protocol):
    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


class ClusterView(Protocol):
    """The broker's metadata cache, read only."""

    @property
    def topics(self) -> Mapping[str, Mapping[int, PartitionLeader]]: ...
    @property
    def brokers(self) -> Mapping[int, BrokerAddress]: ...

    def live_broker_ids(self) -> list[int]: ...
    def has_topic(self, name: str) -> bool: ...
    def topic_id(self, name: str) -> uuid.UUID | None:
        """The topic's id (KIP-516), None for an unknown topic or one without an id."""
        ...

    def topic_by_id(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id, None when no topic known here has it."""
        ...

    def all_partitions_led(self, name: str) -> bool: ...
    async def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool: ...


class TopicCreator(Protocol):
    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        live_broker_ids: list[int],
        assignment: Mapping[int, Sequence[int]] | None = None,
    ) -> None:
        """Write the topic's znodes, its replicas `assignment` (partition -> brokers, already
        checked) or placed over `live_broker_ids` (raises TopicAlreadyExistsError, ...)."""
        ...
