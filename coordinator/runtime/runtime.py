"""One mechanism for every coordinator that keeps its state in an internal topic.

After Kafka's CoordinatorRuntime (shared by its group and transaction coordinators since 3.6):

- **Ownership follows leadership.** A key (a group id, a transactional id) hashes to one
  partition of the coordinator's topic; the coordinator is that partition's leader.
  `on_leadership_change` (after LeaderAndIsr and StopReplica, and on every tick as a safety
  net) compares the partitions this broker leads with those it owns: a new one goes Catch up and
  is loaded, one no longer led goes Down (states.py holds the table).
- **Loading is replay.** A shard (the coordinator's state for one partition: groups, or
  transactional ids) starts empty; every record from the log start to the log end is decoded
  and replayed into it, a megabyte at a time, yielding to the loop between reads. A record that
  does not decode is logged and skipped. A failed load gives the partition up; the next check
  takes it again.
- **An operation returns records and a response.** The coordinator's pure functions decide;
  `write` appends their records as leader with acks=all (answering only once the high watermark
  passes them), then replays them into the shard. A failed append is NOT_COORDINATOR (or the
  retriable error), so a client never sees a success a new coordinator could not load.
- **Every request checks leadership first** (`locate`): a coordinator fenced in ZooKeeper must
  not answer from its cache.

The topic is created on first use (`ensure_topic`) with the coordinator's partition count,
replication factor min(configured, live brokers) and configs (a `min.insync.replicas` capped at
that replication factor), through the same store
CreateTopics uses; `leader_of` answers FindCoordinator.

The partitions are reached only through `CoordinatorLog` (log.py; the broker's ReplicaManager),
the cluster through `ClusterView` and `TopicCreator`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from coordinator.runtime.log import BrokerAddress, ClusterView, CoordinatorLog, TopicCreator
from coordinator.runtime.states import PartitionState, check_transition
from protocol.batch import (
    ATTRIBUTES_AT,
    CONTROL_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    decode_records,
    iter_batches,
    with_producer,
)
from protocol.control import NO_SEQUENCE, parse_marker
from protocol.errors import (
    CoordinatorLoadInProgressError,
    NotCoordinatorError,
    NotLeaderForPartitionError,
    OdradekError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

if TYPE_CHECKING:
    from protocol.clock import Clock

NONE = 0
READ_BYTES = 1 << 20
S = TypeVar("S")  # a shard: the coordinator's state for one partition
R = TypeVar("R")  # one record of the coordinator's topic, decoded


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """The coordinator's internal topic, as it is created on first use."""

    name: str
    partitions: int
    replication_factor: int  # capped at the live brokers
    configs: Mapping[str, str]
    create_wait_ms: int = 5000


@dataclass(frozen=True, slots=True)
class RecordCodec(Generic[R]):
    """How a coordinator's records become batches and back, and how they apply to a shard.

    A coordinator whose records can be written inside a transaction (the group coordinator's
    TxnOffsetCommit) also says how a transactional record applies (`replay_txn`: pending until
    its marker) and how a marker ends it (`replay_marker`); for the others a transactional
    batch in their topic is a bug, and is skipped with a warning.
    """

    decode: Callable[[bytes | None, bytes | None], R]
    build: Callable[[Sequence[R], int], bytes]  # (records, time ms) -> one record batch
    replay: Callable[..., None]  # (shard, record, now ms): apply one appended record
    max_records_per_batch: int
    replay_txn: Callable[..., None] | None = None  # (shard, producer id, record, now ms)
    replay_marker: Callable[..., None] | None = None  # (shard, producer id, commit)


@dataclass(slots=True)
class Owned(Generic[S]):
    """One partition this broker leads: Catch up while loading, then Ready."""

    index: int
    leader_epoch: int
    shard: S
    state: PartitionState = PartitionState.CATCH_UP
    load_task: asyncio.Task[None] | None = None


class CoordinatorRuntime(Generic[S, R]):
    def __init__(
        self,
        topic: TopicSpec,
        log: CoordinatorLog,
        cluster: ClusterView,
        topics: TopicCreator,
        clock: Clock,
        codec: RecordCodec[R],
        new_shard: Callable[[int], S],
        append_timeout_ms: int,
        on_resign: Callable[[Owned[S]], None] | None = None,
        on_loaded: Callable[[Owned[S]], None] | None = None,
    ) -> None:
        self.topic = topic
        self.log = log
        self.cluster = cluster
        self.topics = topics
        self.clock = clock
        self.codec = codec
        self.new_shard = new_shard
        self.append_timeout_ms = append_timeout_ms
        self.on_resign = on_resign
        self.on_loaded = on_loaded
        self.owned: dict[int, Owned[S]] = {}
        self._creating: asyncio.Task[None] | None = None
        self._log = logging.getLogger(f"odradek.coordinator.runtime.{topic.name}")

    # ----- ownership (Down -> Catch up -> Ready) -------------------------------------------

    def on_leadership_change(self) -> None:
        led = self.log.led_partitions(self.topic.name)
        for index in list(self.owned):
            if led.get(index) != self.owned[index].leader_epoch:
                self.resign(index)
        for index, epoch in led.items():
            if index not in self.owned:
                owned = self.owned[index] = Owned(index, epoch, self.new_shard(index))
                owned.load_task = asyncio.ensure_future(self._load(owned))

    def resign(self, index: int) -> None:
        owned = self.owned.pop(index)
        check_transition(owned.state, PartitionState.DOWN)
        owned.state = PartitionState.DOWN
        if owned.load_task is not None and not owned.load_task.done():
            owned.load_task.cancel()
        if self.on_resign is not None:
            self.on_resign(owned)
        self._log.info("no longer coordinator for %s-%d", self.topic.name, index)

    async def shutdown(self) -> None:
        tasks = [o.load_task for o in self.owned.values() if o.load_task is not None]
        if self._creating is not None:
            tasks.append(self._creating)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for index in list(self.owned):
            self.resign(index)

    async def _load(self, owned: Owned[S]) -> None:
        """Catch up: replay the partition; a failure gives the partition up (the next check
        takes it again and retries), so it never stays stuck in Catch up."""
        try:
            count = await self._replay(owned)
        except asyncio.CancelledError:
            raise
        except Exception:
            self._log.exception("loading %s-%d failed; will retry", self.topic.name, owned.index)
            if self.owned.get(owned.index) is owned:
                self.resign(owned.index)
            return
        owned.state = check_transition(owned.state, PartitionState.READY)
        self._log.info("coordinator for %s-%d: loaded %d records", self.topic.name,
                       owned.index, count)  # fmt: skip
        if self.on_loaded is not None:
            self.on_loaded(owned)

    async def _replay(self, owned: Owned[S]) -> int:
        """Replay up to the log end as it is when the replay gets there: records appended
        while loading (a marker that a WriteTxnMarkers wrote meanwhile) are replayed too, and
        the partition goes Ready in the same step as the last read, so nothing appended is
        applied by neither the replay nor the live path."""
        name = self.topic.name
        offset: int | None = None
        count = 0
        while True:
            bounds = self.log.log_range(name, owned.index)
            if bounds is None:
                return count
            offset = bounds[0] if offset is None else offset
            if offset >= bounds[1]:
                return count
            read = self.log.read_records(name, owned.index, offset, READ_BYTES, bounds[1])
            if read is None:
                return count
            data, next_offset = read
            for pos, header in iter_batches(data, check_crc=False):
                if header.last_offset >= offset:
                    count += self._replay_batch(owned, data, pos, header, offset)
            offset = next_offset
            await asyncio.sleep(0)

    def _replay_batch(
        self, owned: Owned[S], data: bytes, pos: int, header: BatchHeader, start: int
    ) -> int:
        """Replay one batch's records at or after `start`; how many applied."""
        codec, now, count = self.codec, self.clock.monotonic_ms(), 0
        if header.attributes & CONTROL_BIT:
            if codec.replay_marker is not None:
                marker = parse_marker(data, pos)
                codec.replay_marker(owned.shard, header.producer_id, marker.commit)
            return 1
        txn = bool(header.attributes & TRANSACTIONAL_BIT)
        for rec in decode_records(data, pos)[1]:
            if rec.offset < start:
                continue
            try:
                record = codec.decode(rec.key, rec.value)
                if not txn:
                    codec.replay(owned.shard, record, now)
                elif codec.replay_txn is not None:
                    codec.replay_txn(owned.shard, header.producer_id, record, now)
                else:
                    raise ValueError("a transactional record in a coordinator topic")
                count += 1
            except (OdradekError, KeyError, TypeError, ValueError) as exc:
                self._log.warning("%s-%d offset %d: record skipped: %s", self.topic.name,
                                  owned.index, rec.offset, exc)  # fmt: skip
        return count

    def locate(self, index: int) -> tuple[Owned[S] | None, int]:
        """The Ready partition `index`, or the error a request for it gets."""
        owned = self.owned.get(index)
        if owned is None:
            return None, NotCoordinatorError.code
        if not self.log.leads(self.topic.name, owned.index, owned.leader_epoch):
            self.resign(owned.index)  # the leadership ended since the last check
            return None, NotCoordinatorError.code
        if owned.state is not PartitionState.READY:
            return None, CoordinatorLoadInProgressError.code
        return owned, NONE

    def ready(self) -> Iterator[Owned[S]]:
        return (o for o in list(self.owned.values()) if o.state is PartitionState.READY)

    def partition_count(self) -> int:
        parts = self.cluster.topics.get(self.topic.name)
        return len(parts) if parts else self.topic.partitions

    # ----- appending ------------------------------------------------------------------------

    async def append(
        self, owned: Owned[S], records: Sequence[R], producer: tuple[int, int] | None = None
    ) -> int:
        """Append as leader and wait for the HW to pass the records; an error code.
        `producer` (id, epoch): the batches belong to that producer's open transaction."""
        step = self.codec.max_records_per_batch
        for i in range(0, len(records), step):
            code = await self._append_batch(owned, records[i : i + step], producer)
            if code != NONE:
                return code
        return NONE

    async def write(self, owned: Owned[S], records: Sequence[R]) -> int:
        """Append, then replay the records into the shard: what the log holds is the state."""
        code = await self.append(owned, records) if records else NONE
        if code == NONE and self.owned.get(owned.index) is owned:
            now = self.clock.monotonic_ms()
            for record in records:
                self.codec.replay(owned.shard, record, now)
        return code

    async def _append_batch(
        self, owned: Owned[S], records: Sequence[R], producer: tuple[int, int] | None
    ) -> int:
        if self.owned.get(owned.index) is not owned:
            return NotCoordinatorError.code
        batch = self.codec.build(records, self.clock.time_ms())
        if producer is not None:
            batch = transactional(batch, *producer)
        code = await self.log.append_replicated(
            self.topic.name, owned.index, batch, self.append_timeout_ms
        )
        if code in (NotLeaderForPartitionError.code, UnknownTopicOrPartitionError.code):
            return NotCoordinatorError.code
        return code

    # ----- the topic and FindCoordinator ----------------------------------------------------

    async def ensure_topic(self) -> None:
        """Create the topic if it is missing and wait until every partition has a leader."""
        if self.cluster.all_partitions_led(self.topic.name):
            return
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create_topic())
        with contextlib.suppress(Exception):
            await asyncio.shield(self._creating)

    async def _create_topic(self) -> None:
        spec = self.topic
        if not self.cluster.has_topic(spec.name):
            live = self.cluster.live_broker_ids()
            rf = max(1, min(spec.replication_factor, len(live)))
            configs = dict(spec.configs)
            if "min.insync.replicas" in configs:  # never above the replicas it gets
                configs["min.insync.replicas"] = str(min(int(configs["min.insync.replicas"]), rf))
            try:
                await self.topics.create_topic(spec.name, spec.partitions, rf, configs, live)
                self._log.info("created %s: %d partitions, replication factor %d", spec.name,
                               spec.partitions, rf)  # fmt: skip
            except TopicAlreadyExistsError:
                pass
        await self.cluster.wait_until(
            lambda: self.cluster.all_partitions_led(spec.name), spec.create_wait_ms
        )

    def leader_of(self, index: int) -> BrokerAddress | None:
        """The broker leading partition `index` of the topic (the key's coordinator)."""
        state = self.cluster.topics.get(self.topic.name, {}).get(index)
        return self.cluster.brokers.get(state.leader) if state is not None else None


def transactional(batch: bytes, producer_id: int, producer_epoch: int) -> bytes:
    """A built batch as part of a producer's transaction: the transactional bit, the producer
    id and epoch, no sequence (the coordinator writes it, as Kafka's TxnOffsetCommit does)."""
    out = bytearray(batch)
    attributes = int.from_bytes(out[ATTRIBUTES_AT : ATTRIBUTES_AT + 2], "big")
    out[ATTRIBUTES_AT : ATTRIBUTES_AT + 2] = (attributes | TRANSACTIONAL_BIT).to_bytes(2, "big")
    return with_producer(out, producer_id, producer_epoch, NO_SEQUENCE)


@dataclass(slots=True)
class Spawner:
    """Background tasks a coordinator starts and must cancel at shutdown."""

    tasks: set[asyncio.Task[object]] = field(default_factory=set)

    def spawn(self, coro: Coroutine[Any, Any, object]) -> None:
        task: asyncio.Task[object] = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def cancel_all(self) -> None:
        tasks = list(self.tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class KeyedLocks:
    """One asyncio lock per key (a transactional id), dropped once nobody holds or waits for
    it, so the table stays as large as the keys in use. A key's entry counts its users: one
    released with others still queued stays, so a newcomer queues on the same lock."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def __len__(self) -> int:
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
