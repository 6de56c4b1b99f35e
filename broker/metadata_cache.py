"""What this broker believes about the cluster: live brokers, the controller, partition states.

Only UpdateMetadata from the controller writes it (`apply`); Metadata requests read it
(`describe`). A partition whose leader is -1 (offline) or not among the live brokers is answered
with LEADER_NOT_AVAILABLE. Admin handlers that wait for a topic to appear or vanish
(CreateTopics, DeleteTopics) call `wait_until(predicate, timeout_ms)`, woken on every update.
Topic ids (KIP-516) come in each partition state from the controller; `topic_id(name)` and
`topic_by_id(id)` look them up both ways (None for a topic without one, or unknown here).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from protocol.api.controller import PartitionState
from protocol.api.metadata import (
    INTERNAL_TOPICS,
    KAFKA_DOOR,
    BrokerInfo,
    PartitionMetadata,
    TopicMetadata,
)
from protocol.errors import LeaderNotAvailableError, UnknownTopicOrPartitionError
from protocol.topic_ids import InvalidTopicIdError, decode_topic_id

log = logging.getLogger(__name__)

NONE = 0


class MetadataUpdate(Protocol):
    """What an UpdateMetadata carries (broker/operations/update_metadata.py's request, or the
    native wire message)."""

    @property
    def controller_id(self) -> int: ...
    @property
    def partition_states(self) -> Sequence[PartitionState]: ...
    @property
    def live_brokers(self) -> Sequence[BrokerInfo]: ...
    @property
    def deleted_topics(self) -> Sequence[str]: ...


class MetadataCache:
    def __init__(self) -> None:
        self.controller_id = -1
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, dict[int, PartitionState]] = {}
        # KIP-516 topic ids, both ways; a topic whose id the controller has not sent has none.
        self._ids: dict[str, uuid.UUID] = {}
        self._names: dict[uuid.UUID, str] = {}
        self._texts: dict[str, str] = {}  # the ids as the controller wrote them
        self._changed = asyncio.Event()

    def apply(self, request: MetadataUpdate) -> None:
        self.controller_id = request.controller_id
        self.brokers = {b.node_id: b for b in request.live_brokers}
        for name in request.deleted_topics:
            self.topics.pop(name, None)
            old_id = self._ids.pop(name, None)
            self._texts.pop(name, None)
            if old_id is not None:
                self._names.pop(old_id, None)
        for state in request.partition_states:
            self.topics.setdefault(state.topic, {})[state.partition] = state
            if state.topic_id is not None:
                self._set_id(state.topic, state.topic_id)
        self._changed.set()
        self._changed = asyncio.Event()

    def _set_id(self, name: str, text: str) -> None:
        if self._texts.get(name) == text:
            return  # the usual case: every partition state repeats the topic's id
        try:
            topic_id = decode_topic_id(text)
        except InvalidTopicIdError as exc:
            log.warning("topic %s: the controller sent a bad topic id: %s", name, exc)
            return
        old_id = self._ids.get(name)
        if old_id == topic_id:
            return
        if old_id is not None:  # re-created between two updates we saw
            self._names.pop(old_id, None)
        self._ids[name] = topic_id
        self._texts[name] = text
        self._names[topic_id] = name

    # ----- reads ----------------------------------------------------------------------------

    def live_broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def kafka_brokers(self, listener: str) -> list[tuple[int, str, int, str | None]]:
        """(node id, host, port, rack) of the live brokers with a Kafka listener named
        `listener`, as advertised: what a client that came in on it is told (Kafka's rule)."""
        out = []
        for node_id in sorted(self.brokers):
            b = self.brokers[node_id]
            endpoint = b.endpoint(KAFKA_DOOR, listener)
            if endpoint is not None:
                out.append((node_id, endpoint[0], endpoint[1], b.rack))
        return out

    def kafka_endpoint(self, node_id: int, listener: str) -> tuple[str, int] | None:
        """(host, port) of a live broker's Kafka listener named `listener`, if it has one."""
        b = self.brokers.get(node_id)
        return None if b is None else b.endpoint(KAFKA_DOOR, listener)

    def has_topic(self, name: str) -> bool:
        return name in self.topics

    def has_partition(self, topic: str, partition: int) -> bool:
        """Whether this broker knows the partition (Kafka's `metadataCache.contains(tp)`)."""
        return partition in self.topics.get(topic, ())

    def topic_id(self, name: str) -> uuid.UUID | None:
        """The topic's id (KIP-516), None for an unknown topic or one without an id."""
        return self._ids.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id, None when no topic known here has it."""
        return self._names.get(topic_id)

    def all_partitions_led(self, name: str) -> bool:
        parts = self.topics.get(name)
        return parts is not None and bool(parts) and all(s.leader >= 0 for s in parts.values())

    def describe(self, names: list[str] | None) -> list[TopicMetadata]:
        wanted = sorted(self.topics) if names is None else names
        return [self._topic(name) for name in wanted]

    def _topic(self, name: str) -> TopicMetadata:
        parts = self.topics.get(name)
        if parts is None:
            return TopicMetadata(UnknownTopicOrPartitionError.code, name, False, [])
        partitions = [self._partition(parts[i]) for i in sorted(parts)]
        return TopicMetadata(NONE, name, name in INTERNAL_TOPICS, partitions)

    def _partition(self, s: PartitionState) -> PartitionMetadata:
        online = s.leader >= 0 and s.leader in self.brokers
        offline = sorted(set(s.offline_replicas) | {r for r in s.replicas if r not in self.brokers})
        return PartitionMetadata(
            NONE if online else LeaderNotAvailableError.code,
            s.partition,
            s.leader if online else -1,
            s.leader_epoch,
            list(s.replicas),
            list(s.isr),
            offline,
        )

    async def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        """Wait until `predicate()` holds after some update; False when `timeout_ms` passes."""
        try:
            async with asyncio.timeout(max(0, timeout_ms) / 1000):
                while not predicate():
                    await self._changed.wait()
        except TimeoutError:
            return predicate()
        return True
