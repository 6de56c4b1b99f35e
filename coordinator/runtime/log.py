"""What the group coordinator needs of the log: the `__consumer_offsets` partitions it leads,
their records to replay, and appends that wait until the in-sync replicas have them.

The broker's ReplicaManager (broker/replica_manager.py) implements it; the coordinator sees
nothing else of the broker's partitions, so it never reads segment files or partition state
itself. A partition is named by (topic, partition) so the protocol says nothing of which topic
the coordinator keeps its records in.
"""

from __future__ import annotations

from typing import Protocol


class GroupLog(Protocol):
    def led_partitions(self, topic: str) -> dict[int, int]:
        """Partition -> leader epoch, for every partition of `topic` this broker leads now."""
        ...

    def leads(self, topic: str, partition: int, leader_epoch: int) -> bool:
        """Does this broker still lead the partition, in that leader epoch? (Checked on every
        group request, so a coordinator whose leadership ended answers NOT_COORDINATOR at once,
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
