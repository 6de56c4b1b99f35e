"""Replica placement for a new topic: seed 002's round-robin, as a pure function.

Sort the live brokers b[0..n-1]; replica j of partition i goes to b[(i + j) mod n]. Replica 0 is
the partition's preferred leader, so leaders spread over the brokers one partition at a time and
no partition has two replicas on one broker. With 5 brokers and rf 2: p0 -> [1, 2], p1 -> [2, 3],
..., p4 -> [5, 1], p5 -> [1, 2].
"""

from __future__ import annotations

from collections.abc import Iterable

from protocol.errors import InvalidPartitionsError, InvalidReplicationFactorError

MAX_PARTITIONS = 10_000


def assign_replicas(
    live_broker_ids: Iterable[int], num_partitions: int, replication_factor: int
) -> dict[int, list[int]]:
    """Partition -> replica list (preferred leader first)."""
    brokers = sorted(set(live_broker_ids))
    if not 1 <= num_partitions <= MAX_PARTITIONS:
        raise InvalidPartitionsError(
            f"number of partitions must be between 1 and {MAX_PARTITIONS}, not {num_partitions}"
        )
    if replication_factor < 1:
        raise InvalidReplicationFactorError(
            f"replication factor must be at least 1, not {replication_factor}"
        )
    n = len(brokers)
    if replication_factor > n:
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the {n} live brokers"
        )
    return {
        i: [brokers[(i + j) % n] for j in range(replication_factor)] for i in range(num_partitions)
    }
