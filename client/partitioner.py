"""Which partition a record goes to: Kafka's murmur2 for keyed records, sticky for the rest.

`murmur2` is a line-by-line port of Kafka's `org.apache.kafka.common.utils.Utils.murmur2`
(32-bit, seed 0x9747b28c, signed result), and a keyed record goes to
`(murmur2(key) & 0x7fffffff) % num_partitions`, Kafka's `toPositive(hash) % n`, so a key lands
on the same partition number as it would with Kafka's default partitioner.

Keyless records are sticky (KIP-480): all go to one partition until the accumulator closes a
batch there, then the partitioner moves to the next partition (round robin over the partitions
that have a leader, when any do). Batches fill up and spread evenly across partitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2: a signed 32-bit hash of `data`."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[n4 + 2] << 16
    if rest >= 2:
        h ^= data[n4 + 1] << 8
    if rest >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(value: int) -> int:
    return value & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """Keyed: murmur2. Keyless: one partition per topic until `on_new_batch` moves it on."""

    def __init__(self) -> None:
        self._sticky: dict[str, int] = {}
        self.current = self._sticky  # read-only view for the producer's hot path
        self._next: dict[str, int] = {}

    def partition(
        self,
        topic: str,
        key: bytes | None,
        num_partitions: int,
        available: Sequence[int] = (),
    ) -> int:
        if key is not None:
            return partition_for_key(key, num_partitions)
        sticky = self._sticky.get(topic)
        if sticky is None or sticky >= num_partitions:
            sticky = self._advance(topic, num_partitions, available)
        return sticky

    def sticky(self, topic: str, num_partitions: int, meta: Any) -> int:
        """The keyless choice; `meta.available_partitions(topic)` is read only when moving."""
        sticky = self._sticky.get(topic)
        if sticky is None or sticky >= num_partitions:
            sticky = self._advance(topic, num_partitions, meta.available_partitions(topic))
        return sticky

    def on_new_batch(self, topic: str, num_partitions: int, available: Sequence[int] = ()) -> int:
        """A batch was closed on the sticky partition: move to the next one."""
        return self._advance(topic, num_partitions, available)

    def _advance(self, topic: str, num_partitions: int, available: Sequence[int]) -> int:
        n = self._next.get(topic, 0)
        self._next[topic] = n + 1
        choice = available[n % len(available)] if available else n % num_partitions
        self._sticky[topic] = choice
        return choice
