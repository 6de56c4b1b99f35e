"""Leader hints (KIP-951): with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, Fetch (v12+
tagged current_leader, v16+ node_endpoints) and Produce (v10+) tell the client the partition's
current leader and how to reach it, from the metadata cache, so it need not ask Metadata first.
A partition whose leader is unknown or offline gets no hint."""

from __future__ import annotations

from broker.metadata_cache import MetadataCache
from protocol.errors import FencedLeaderEpochError, NotLeaderForPartitionError

HINTED = frozenset({NotLeaderForPartitionError.code, FencedLeaderEpochError.code})


def current_leader(cache: MetadataCache, topic: str, partition: int) -> tuple[int, int] | None:
    """(leader id, leader epoch) of a partition with a live leader, else None."""
    state = cache.topics.get(topic, {}).get(partition)
    if state is None or state.leader < 0 or state.leader not in cache.brokers:
        return None
    return state.leader, state.leader_epoch


def endpoints(
    cache: MetadataCache, leaders: set[int], listener: str
) -> list[tuple[int, str, int, str | None]]:
    """(node id, host, port, rack) of those leaders that have a Kafka listener named
    `listener` (the one the client came in on), as advertised."""
    return [e for e in cache.kafka_brokers(listener) if e[0] in leaders]
