"""The share coordinator running inside a broker, on the coordinator runtime (Kafka's
ShareCoordinatorService).

A share partition's state lives in partition `partition_for(key, N)` of `__share_group_state`
(records.py: the hash of "groupId:topicId:partition"), created on the first FindCoordinator
with key type 2, compacted (coordinator/internal_topics.py); the coordinator of a share
partition is that partition's leader. Ownership, loading by replay and appending are the
runtime's (coordinator/runtime/runtime.py): the same mechanism as the group and transaction
coordinators, with the shard of shard.py.

Every request runs one pure operation of shard.py under the share partition's lock: its
records are appended with acks=all, then replayed into the shard, then it is answered, so an
answered write survives the coordinator's SIGKILL (the next leader of the partition loads it).
A request for a share partition this broker does not coordinate is NOT_COORDINATOR, one that
arrives while its partition loads COORDINATOR_LOAD_IN_PROGRESS (the caller finds the
coordinator again and retries, as Kafka's persister does).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coordinator.group.records import partition_for as kafka_partition_for
from coordinator.internal_topics import SHARE_STATE_TOPIC_CONFIGS
from coordinator.runtime.log import ClusterView, CoordinatorLog, TopicCreator
from coordinator.runtime.runtime import (
    CoordinatorRuntime,
    KeyedLocks,
    Owned,
    RecordCodec,
    TopicSpec,
)
from coordinator.share import shard as ops
from coordinator.share.records import (
    MAX_RECORDS_PER_BATCH,
    SHARE_STATE_TOPIC,
    ShareKey,
    ShareRecord,
    StateBatch,
    build,
    decode,
    partition_for,
)
from coordinator.share.shard import ReadAnswer, Result, Shard
from protocol.errors import CoordinatorNotAvailableError, InvalidRequestError

if TYPE_CHECKING:
    from protocol.clock import Clock

log = logging.getLogger("odradek.coordinator.share")
NONE = 0
ShareOwned = Owned[Shard]
CODEC = RecordCodec(decode, build, ops.replay, MAX_RECORDS_PER_BATCH)


@dataclass(frozen=True, slots=True)
class ShareCoordinatorConfig:
    """Kafka's share.coordinator.* broker settings."""

    state_partitions: int = 50  # share.coordinator.state.topic.num.partitions
    state_replication_factor: int = 3  # share.coordinator.state.topic.replication.factor
    state_min_isr: int = 2  # share.coordinator.state.topic.min.isr (capped at the RF)
    state_segment_bytes: int = 100 * 1024 * 1024  # ...state.topic.segment.bytes
    updates_per_snapshot: int = 500  # share.coordinator.snapshot.update.records.per.snapshot
    append_timeout_ms: int = 5000
    topic_create_wait_ms: int = 5000


@dataclass(frozen=True, slots=True)
class Found:
    error_code: int
    message: str | None
    node_id: int = -1


@dataclass(frozen=True, slots=True)
class Answered:
    """One share partition's answer: its error, and the state for a read."""

    error_code: int
    error_message: str | None = None
    state: ReadAnswer | None = None


class ShareCoordinator:
    def __init__(
        self, broker_id: int, state_log: CoordinatorLog, cluster: ClusterView,
        topics: TopicCreator, clock: Clock,
        config: ShareCoordinatorConfig = ShareCoordinatorConfig(),
    ) -> None:  # fmt: skip
        self.broker_id = broker_id
        self.clock = clock
        self.config = config
        spec = TopicSpec(
            SHARE_STATE_TOPIC, config.state_partitions, config.state_replication_factor,
            {**SHARE_STATE_TOPIC_CONFIGS, "segment.bytes": str(config.state_segment_bytes),
             "min.insync.replicas": str(config.state_min_isr)},
            config.topic_create_wait_ms,
        )  # fmt: skip
        self.runtime: CoordinatorRuntime[Shard, ShareRecord] = CoordinatorRuntime(
            spec, state_log, cluster, topics, clock, CODEC, lambda _: Shard(),
            config.append_timeout_ms,
        )  # fmt: skip
        self._locks = KeyedLocks()
        self._ticker: asyncio.Task[None] | None = None

    # ----- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._ticker = asyncio.ensure_future(self._run())

    async def shutdown(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        await self.runtime.shutdown()

    async def _run(self) -> None:
        while True:  # the safety net of LeaderAndIsr's leadership check
            await asyncio.sleep(0.1)
            try:
                self.runtime.on_leadership_change()
            except Exception:
                log.exception("share coordinator tick failed")

    # ----- FindCoordinator (key type 2) -------------------------------------------------------

    async def find_coordinator(self, key: str) -> Found:
        """The coordinator of "groupId:topicId:partition" (Kafka's key type 2)."""
        if key.count(":") < 2 or not key.rsplit(":", 2)[0]:
            return Found(InvalidRequestError.code, f"{key!r} is not groupId:topicId:partition")
        await self.runtime.ensure_topic()
        index = _index_of(key, self.runtime.partition_count())
        broker = self.runtime.leader_of(index)
        if broker is None:
            return Found(CoordinatorNotAvailableError.code,
                         f"{SHARE_STATE_TOPIC} has no leader for this key yet")  # fmt: skip
        return Found(NONE, None, broker.node_id)

    # ----- the five state operations ---------------------------------------------------------

    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> Answered:
        now = self.clock.time_ms()
        return await self._operate(
            key, lambda s: (ops.initialize(s, key, state_epoch, start_offset, now), None)
        )

    async def read(self, key: ShareKey, leader_epoch: int) -> Answered:
        return await self._operate(key, lambda s: ops.read(s, key, leader_epoch))

    async def write(
        self, key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int,
        batches: Sequence[StateBatch], delivery_complete_count: int = -1,
    ) -> Answered:  # fmt: skip
        now, per_snapshot = self.clock.time_ms(), self.config.updates_per_snapshot
        return await self._operate(key, lambda s: (ops.write(
            s, key, state_epoch, leader_epoch, start_offset, batches, delivery_complete_count,
            per_snapshot, now), None))  # fmt: skip

    async def delete(self, key: ShareKey) -> Answered:
        return await self._operate(key, lambda s: (ops.delete(s, key), None))

    async def summary(self, key: ShareKey) -> Answered:
        owned, code = self._locate(key)
        if owned is None:
            return Answered(code, _why(code))
        return Answered(NONE, None, ops.summary(owned.shard, key))

    # ----- the share partition's lock, the write path -----------------------------------------

    def _locate(self, key: ShareKey) -> tuple[ShareOwned | None, int]:
        return self.runtime.locate(partition_for(key, self.runtime.partition_count()))

    async def _operate(
        self, key: ShareKey, decide: Callable[[Shard], tuple[Result, ReadAnswer | None]]
    ) -> Answered:
        owned, code = self._locate(key)
        if owned is None:
            return Answered(code, _why(code))
        async with self._locks.hold(key.coordinator_key()):
            owned, code = self._locate(key)  # the leadership may have moved while waiting
            if owned is None:
                return Answered(code, _why(code))
            result, state = decide(owned.shard)
            if result.error_code != NONE:
                return Answered(result.error_code, result.error_message)
            code = await self.runtime.write(owned, result.records)
            if code != NONE:
                return Answered(code, _why(code))
            return Answered(NONE, None, state)


def _index_of(coordinator_key: str, partitions: int) -> int:
    return kafka_partition_for(coordinator_key, partitions)


def _why(code: int) -> str | None:
    return {
        16: "this broker is not the share coordinator of this share partition",
        14: "the share coordinator is loading its state",
    }.get(code)
