"""Replica placement for a new topic (and for partitions added to one): seed 002's
round-robin, as pure functions.

Sort the live brokers b[0..n-1]; replica j of partition i goes to b[(i + j) mod n]. Replica 0 is
the partition's preferred leader, so leaders spread over the brokers one partition at a time and
no partition has two replicas on one broker. With 5 brokers and rf 2: p0 -> [1, 2], p1 -> [2, 3],
..., p4 -> [5, 1], p5 -> [1, 2].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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


def assign_added_partitions(
    live_broker_ids: Iterable[int], existing: Mapping[int, list[int]], total: int
) -> dict[int, list[int]]:
    """Replicas for partitions len(existing)..total-1, placed as Kafka places added partitions:
    the replication factor of partition 0, and the round-robin above continued from the
    broker where partition 0's preferred leader starts it (the first live broker whose id is
    >= it). So adding to a topic created on the same brokers gives the replicas that creating
    it with `total` partitions would have given."""
    brokers = sorted(set(live_broker_ids))
    first = existing[0]
    start = next((i for i, b in enumerate(brokers) if b >= first[0]), 0)
    if not len(existing) < total <= MAX_PARTITIONS:
        raise InvalidPartitionsError(
            f"the new partition count must be above {len(existing)} and at most "
            f"{MAX_PARTITIONS}, not {total}"
        )
    n, rf = len(brokers), len(first)
    if rf > n:
        raise InvalidReplicationFactorError(
            f"the topic's replication factor {rf} is larger than the {n} live brokers"
        )
    return {
        i: [brokers[(start + i + j) % n] for j in range(rf)] for i in range(len(existing), total)
    }
