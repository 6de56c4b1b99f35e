"""How a partition leader keeps its share partitions' state durable (KIP-932, Kafka's
DefaultStatePersister and PersisterStateManager): through the share coordinator of each
share partition, the leader of its `__share_group_state` partition (FindCoordinator key
type 2's rule, coordinator/share/service.py `find_coordinator`).

Each call finds the coordinator, then asks it: this broker's own ShareCoordinator directly,
another broker over the native door (protocol/api/share_state.py, one connection per broker
through `Peers`). A coordinator that moved or is loading (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE), a write not yet replicated enough
(NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT) or a broker that cannot be reached is asked again,
found anew each time, with a growing pause, until `deadline_ms`: a SIGKILLed coordinator's
partitions move to a new leader, which loads them, and the call goes on there. Any other error
(FENCED_LEADER_EPOCH: a newer leader read the state) is answered at once.

The same object is the group side's way to the share coordinator (`ctx.share_persister`):
`summary` (ReadShareGroupStateSummary: DescribeShareGroupOffsets' start offsets and lag),
`delete` (DeleteShareGroupState: DeleteGroups, DeleteShareGroupOffsets) and `initialize` at a
new state epoch (AlterShareGroupOffsets), each for one share partition by topic name.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.runtime.peers import Peers
from coordinator.share.records import ShareKey, StateBatch
from coordinator.share.service import Answered, ShareCoordinator
from coordinator.share.shard import ReadAnswer
from protocol.api import share_state as wire
from protocol.clock import Clock
from protocol.errors import OdradekError

log = logging.getLogger("odradek.share.persister")
NONE = 0
COORDINATOR_NOT_AVAILABLE = 15
RETRIABLE = frozenset({
    7,  # REQUEST_TIMED_OUT
    14,  # COORDINATOR_LOAD_IN_PROGRESS
    15,  # COORDINATOR_NOT_AVAILABLE
    16,  # NOT_COORDINATOR
    19,  # NOT_ENOUGH_REPLICAS
    20,  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
    8,  # BROKER_NOT_AVAILABLE
    6,  # NOT_LEADER_OR_FOLLOWER
})  # fmt: skip
BACKOFF_MS = (50, 100, 200, 400, 800, 1000)


@dataclass(frozen=True, slots=True)
class Loaded:
    """What a leader reads of a share partition (start offset -1: no state yet)."""

    error_code: int
    state_epoch: int = 0
    start_offset: int = -1
    batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class Summary:
    """ReadShareGroupStateSummary's answer for one share partition."""

    error_code: int
    state_epoch: int = 0
    leader_epoch: int = -1
    start_offset: int = -1
    delivery_complete_count: int = -1


class StatePersister:
    def __init__(
        self, broker_id: int, coordinator: ShareCoordinator, peers: Peers,
        topic_id: Callable[[str], uuid.UUID | None], clock: Clock, deadline_ms: int = 30_000,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:  # fmt: skip
        self.broker_id = broker_id
        self.coordinator = coordinator
        self.peers = peers
        self.topic_id = topic_id
        self.clock = clock
        self.deadline_ms = deadline_ms
        self.sleep = sleep

    async def read(self, group_id: str, topic: str, partition: int, leader_epoch: int) -> Loaded:
        key = self._key(group_id, topic, partition)
        if key is None:
            return Loaded(COORDINATOR_NOT_AVAILABLE)
        part = wire.ShareStatePartition(partition, leader_epoch=leader_epoch)
        got = await self._call(key, lambda: self.coordinator.read(key, leader_epoch),
                               wire.ReadShareGroupStateRequest, part)  # fmt: skip
        s = got.state
        if got.error_code != NONE or s is None:
            return Loaded(got.error_code or COORDINATOR_NOT_AVAILABLE)
        return Loaded(NONE, s.state_epoch, s.start_offset, s.batches)

    async def initialize(
        self, group_id: str, topic: str, partition: int, state_epoch: int, start_offset: int
    ) -> int:
        key = self._key(group_id, topic, partition)
        if key is None:
            return COORDINATOR_NOT_AVAILABLE
        part = wire.ShareStatePartition(
            partition, state_epoch=state_epoch, start_offset=start_offset
        )
        got = await self._call(
            key, lambda: self.coordinator.initialize(key, state_epoch, start_offset),
            wire.InitializeShareGroupStateRequest, part,
        )  # fmt: skip
        return got.error_code

    async def write(
        self, group_id: str, topic: str, partition: int, state_epoch: int, leader_epoch: int,
        start_offset: int, batches: Sequence[StateBatch], delivery_complete_count: int,
    ) -> int:  # fmt: skip
        key = self._key(group_id, topic, partition)
        if key is None:
            return COORDINATOR_NOT_AVAILABLE
        part = wire.ShareStatePartition(
            partition, state_epoch, leader_epoch, start_offset, delivery_complete_count,
            [wire.WireStateBatch(b.first_offset, b.last_offset, b.delivery_state,
                                 b.delivery_count) for b in batches],
        )  # fmt: skip
        got = await self._call(
            key, lambda: self.coordinator.write(key, state_epoch, leader_epoch, start_offset,
                                                batches, delivery_complete_count),
            wire.WriteShareGroupStateRequest, part,
        )  # fmt: skip
        return got.error_code

    async def summary(self, group_id: str, topic: str, partition: int) -> Summary:
        """ReadShareGroupStateSummary of one share partition (start offset -1: no state)."""
        key = self._key(group_id, topic, partition)
        if key is None:
            return Summary(COORDINATOR_NOT_AVAILABLE)
        got = await self._call(key, lambda: self.coordinator.summary(key),
                               wire.ReadShareGroupStateSummaryRequest,
                               wire.ShareStatePartition(partition))  # fmt: skip
        s = got.state
        if got.error_code != NONE or s is None:
            return Summary(got.error_code or COORDINATOR_NOT_AVAILABLE)
        return Summary(NONE, s.state_epoch, s.leader_epoch, s.start_offset,
                       s.delivery_complete_count)  # fmt: skip

    async def delete(self, group_id: str, topic: str, partition: int) -> int:
        """DeleteShareGroupState of one share partition; its error code."""
        key = self._key(group_id, topic, partition)
        if key is None:
            return COORDINATOR_NOT_AVAILABLE
        got = await self._call(key, lambda: self.coordinator.delete(key),
                               wire.DeleteShareGroupStateRequest,
                               wire.ShareStatePartition(partition))  # fmt: skip
        return got.error_code

    # ----- finding the coordinator, asking it, asking again -----------------------------------

    def _key(self, group_id: str, topic: str, partition: int) -> ShareKey | None:
        topic_id = self.topic_id(topic)
        return None if topic_id is None else ShareKey(group_id, topic_id, partition)

    async def _call(
        self, key: ShareKey, local: Callable[[], Awaitable[Answered]], request_cls: Any,
        part: wire.ShareStatePartition,
    ) -> Answered:  # fmt: skip
        deadline = self.clock.monotonic_ms() + self.deadline_ms
        attempt = 0
        while True:
            got = await self._once(key, local, request_cls, part)
            if got.error_code not in RETRIABLE or self.clock.monotonic_ms() >= deadline:
                if got.error_code != NONE:
                    log.info("share state of %s: %s (error %d)", key.coordinator_key(),
                             request_cls.__name__, got.error_code)  # fmt: skip
                return got
            await self.sleep(BACKOFF_MS[min(attempt, len(BACKOFF_MS) - 1)] / 1000)
            attempt += 1

    async def _once(
        self, key: ShareKey, local: Callable[[], Awaitable[Answered]], request_cls: Any,
        part: wire.ShareStatePartition,
    ) -> Answered:  # fmt: skip
        found = await self.coordinator.find_coordinator(key.coordinator_key())
        if found.error_code != NONE:
            return Answered(found.error_code, found.message)
        if found.node_id == self.broker_id:
            return await local()
        request = request_cls(key.group_id, [wire.ShareStateTopic(key.topic_id.bytes, [part])])
        try:
            response: wire.ShareStateResponse = await self.peers.send(found.node_id, request)
        except OdradekError as exc:
            return Answered(exc.code if exc.code in RETRIABLE else COORDINATOR_NOT_AVAILABLE,
                            exc.message)  # fmt: skip
        return _answered(response)


def _answered(response: wire.ShareStateResponse) -> Answered:
    for topic in response.topics:
        for p in topic.partitions:
            batches = tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state,
                                       b.delivery_count) for b in p.state_batches)  # fmt: skip
            state = ReadAnswer(p.state_epoch, p.leader_epoch, p.start_offset, batches,
                               p.delivery_complete_count)  # fmt: skip
            return Answered(p.error_code, p.error_message, state)
    return Answered(COORDINATOR_NOT_AVAILABLE, "an empty answer")
