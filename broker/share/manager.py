"""The share partitions a leader serves (KIP-932, Kafka's SharePartitionManager): ShareFetch
and ShareAcknowledge for every share group, over the replica manager's reads, with their state
kept durable through the share coordinator (`persister`, broker/share/persister.py).

A share partition (share_partition.py) is loaded on the first fetch of its group in a leader
epoch, before it serves anything: ReadShareGroupState with the partition's leader epoch (which
fences the previous leader's writes) gives its start offset and state batches; a share
partition without state is initialized first (InitializeShareGroupState) at the high watermark
(`share.auto.offset.reset` `latest`, Kafka's default) or the log start (`earliest`). A fetch
waits for the load at most its `max_wait_ms` and answers nothing for a partition still loading
(the next fetch finds it loaded), as Kafka's delayed share fetch does. A share partition belongs
to the leader epoch it was loaded in: one found under another epoch is loaded again. Without a
persister (in-process tests) a share partition is made at once and kept in memory only.

What changes the state is written (WriteShareGroupState: the whole [SPSO, SPEO) window as
state batches, so the stored state has no holes) before it is answered: acknowledgements
(ShareAcknowledge's and ShareFetch's answer waits for the write, as Kafka's), and, in the
background, locks that expired and a closing member's records. Acquisitions are not written, as
in Kafka: a record acquired and never acknowledged before a failover is delivered again with
the delivery count last written. One write at a time per share partition, each of the state as
it is when it starts, so the last write holds every change.

A fetch, per partition of its session (sessions.py): release what expired, read the log from
`next_fetch_offset` (below the HW, or the last stable offset with read_committed; at most
fetched.py's `read_budget`, from the bytes per offset of the last read) and acquire
what the read holds (fetched.py leaves out control batches and aborted transactions), up to
the request's `max_records`. When nothing was acquired it waits (`max_wait_ms`, no longer than
the first acquisition lock to expire) for new records at the partitions' fetch offsets
(the replica manager's delayed fetch) or for records given back (a release, a member gone),
and tries again. The answer carries the whole batches that hold the acquired records (fetched.py
`covering`, as Kafka's; not the rest of the read: the client keeps the acquired offsets) and
the acquired ranges with their delivery counts.

Acknowledgements (piggy-backed on ShareFetch, or ShareAcknowledge) apply to the member's own
acquired records (share_partition.py `acknowledge`); a record archived at the delivery count
limit is counted (`archived_at_limit`) and logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from broker.partition_read import PartitionRead, read_slice
from broker.share.fetched import acquirable, covering, read_budget
from broker.share.metrics import ShareMetrics
from broker.share.persister import Loaded
from broker.share.sessions import Key, Part, ShareSessions
from broker.share.share_partition import (
    Acquired,
    ShareLimits,
    SharePartition,
    from_state,
    state_batches,
)
from coordinator.share.records import StateBatch
from protocol.api.fetch import (
    CONSUMER_REPLICA_ID,
    READ_UNCOMMITTED,
    FetchPartition,
    FetchRequest,
    FetchTopic,
)
from protocol.clock import Clock
from protocol.codec import FileSlice
from protocol.errors import OdradekError

log = logging.getLogger("odradek.share")
NONE = 0
FENCED_STATE_EPOCH = 124  # a write at a state epoch an admin moved past (alter, delete)
EARLIEST, LATEST = "earliest", "latest"


@dataclass(frozen=True, slots=True)
class GroupShareSettings:
    """A share group's settings on the leader: the broker's group.share.* with the group's
    share.* configs over them."""

    limits: ShareLimits = field(default_factory=ShareLimits)
    auto_offset_reset: str = LATEST
    isolation_level: int = READ_UNCOMMITTED


class LogView(Protocol):
    @property
    def log_start_offset(self) -> int: ...


class LedPartition(Protocol):
    @property
    def leader_epoch(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def log(self) -> LogView: ...


class ShareReplicas(Protocol):
    """What the manager uses of the ReplicaManager."""

    def leader(self, topic: str, partition: int, leader_epoch: int = -1) -> LedPartition:
        """The partition if this broker leads it; raises OdradekError (NOT_LEADER_OR_FOLLOWER,
        UNKNOWN_TOPIC_OR_PARTITION) otherwise."""
        ...

    def read_all(self, request: FetchRequest) -> list[PartitionRead]: ...

    def park_fetch(self, request: FetchRequest) -> object | None: ...


@dataclass(slots=True)
class ShareRead:
    """One partition's part of a ShareFetch answer."""

    topic: str
    partition: int
    error_code: int = NONE
    error_message: str | None = None
    records: bytes = b""
    acquired: list[Acquired] = field(default_factory=list)


class Persister(Protocol):
    """The share coordinator as a leader uses it (broker/share/persister.py)."""

    async def read(self, group_id: str, topic: str, partition: int, leader_epoch: int
                   ) -> Loaded: ...  # fmt: skip

    async def initialize(self, group_id: str, topic: str, partition: int, state_epoch: int,
                         start_offset: int) -> int: ...  # fmt: skip

    async def write(
        self, group_id: str, topic: str, partition: int, state_epoch: int, leader_epoch: int,
        start_offset: int, batches: Sequence[StateBatch], delivery_complete_count: int,
    ) -> int: ...  # fmt: skip


@dataclass(slots=True)
class _Held:
    leader_epoch: int
    partition: SharePartition
    state_epoch: int = 0
    dirty: bool = False  # changed since the last write began
    bytes_per_offset: float = 0.0  # of the last read (fetched.py `read_budget`'s estimate)
    writing: asyncio.Lock = field(default_factory=asyncio.Lock)


SpKey = tuple[str, str, int]  # (group id, topic, partition)


class SharePartitionManager:
    def __init__(
        self, replicas: ShareReplicas, clock: Clock,
        settings: Callable[[str], GroupShareSettings], sessions: ShareSessions | None = None,
        persister: Persister | None = None,
    ) -> None:  # fmt: skip
        self.replicas = replicas
        self.clock = clock
        self.settings = settings
        self.sessions = sessions or ShareSessions()
        self.persister = persister
        self._partitions: dict[SpKey, _Held] = {}
        self._loading: dict[SpKey, tuple[int, asyncio.Task[None]]] = {}
        self._writes: set[asyncio.Task[int]] = set()  # background writes (expiry, release)
        self._given_back = asyncio.Event()  # set when records become available again
        self.metrics = ShareMetrics()  # KIP-932's metrics (broker/share/metrics.py)
        self.metrics.held = self.partition_counts

    # ----- acknowledgements --------------------------------------------------------------

    async def acknowledge(
        self, group_id: str, member_id: str, topic: str, partition: int,
        batches: Sequence[tuple[int, int, Sequence[int]]],
    ) -> int:  # fmt: skip
        """Apply a partition's acknowledgement batches (first, last, types) and write the
        state; the first error code (the batches before it stay applied and written, as
        Kafka's), or the write's."""
        settings = self.settings(group_id)
        code = await self._acknowledge(group_id, member_id, topic, partition, batches, settings)
        self.metrics.on_request(False, (topic,), (topic,) if code else ())
        return code

    async def _acknowledge(
        self, group_id: str, member_id: str, topic: str, partition: int,
        batches: Sequence[tuple[int, int, Sequence[int]]], settings: GroupShareSettings,
    ) -> int:  # fmt: skip
        try:
            held = self._held(group_id, topic, partition)
        except OdradekError as exc:
            return exc.code
        if held is None:
            return 121  # INVALID_RECORD_STATE: nothing was ever acquired here
        sp, now = held.partition, self.clock.monotonic_ms()
        held.dirty |= sp.expire(now, settings.limits) > 0
        before = sp.archived_at_limit
        code = NONE
        for first, last, types in batches:
            code = sp.acknowledge(member_id, first, last, types, settings.limits, now)
            if code != NONE:
                break
            self.metrics.on_acknowledged(first, last, types)
            held.dirty = True
            if 2 in types:  # RELEASE
                self._given_back.set()
        self._note_archived(group_id, topic, partition, sp.archived_at_limit - before)
        written = await self._write((group_id, topic, partition), held)
        return code or written

    def release_member(self, group_id: str, member_id: str, parts: Sequence[Part]) -> None:
        """A member's session closed: its acquired records go back (Kafka's release on a
        session's end), and the state is written in the background."""
        settings = self.settings(group_id)
        for topic, partition in parts:
            key = (group_id, topic, partition)
            held = self._partitions.get(key)
            if held is not None and held.partition.release_member(member_id, settings.limits):
                self._given_back.set()
                held.dirty = True
                self._write_later(key, held)

    def connection_closed(self, key: Key, connection: object) -> None:
        """The connection that opened the member's share session closed (the member closed
        its socket, or died): the session ends and the member's acquired records go back at
        once, as Kafka's ShareSessionCache and SharePartitionManager do on a disconnect
        (their delivery count stays: KAFKA-19972), not after their lock."""
        session = self.sessions.close_for(key, connection)
        if session is not None:
            self.release_member(key[0], key[1], list(session.parts))

    def session_key(self, group_id: str, member_id: str) -> Key:
        return (group_id, member_id)

    # ----- fetching ----------------------------------------------------------------------

    async def fetch(
        self, group_id: str, member_id: str, parts: Sequence[Part], max_wait_ms: int,
        max_bytes: int, max_records: int,
    ) -> list[ShareRead]:  # fmt: skip
        """Acquire records of `parts` for the member, waiting up to `max_wait_ms` for some."""
        deadline = self.clock.monotonic_ms() + max(0, max_wait_ms)
        await self._load(group_id, parts, max_wait_ms)
        while True:
            settings = self.settings(group_id)
            reads, request, lock_deadline = self._try(
                group_id, member_id, parts, settings, max_bytes, max_records
            )
            now = self.clock.monotonic_ms()
            if any(r.acquired or r.error_code for r in reads) or now >= deadline:
                self.metrics.on_request(True, (t for t, _ in parts),
                                        (r.topic for r in reads if r.error_code))  # fmt: skip
                return [r for r in reads if r.acquired or r.error_code]
            wait_ms = min(deadline, lock_deadline) - now
            await self._wait(request, max(1, wait_ms))

    def _try(
        self, group_id: str, member_id: str, parts: Sequence[Part],
        settings: GroupShareSettings, max_bytes: int, max_records: int,
    ) -> tuple[list[ShareRead], FetchRequest, int]:  # fmt: skip
        """One pass: (the reads, the request that read them, the earliest lock deadline)."""
        now = self.clock.monotonic_ms()
        out: list[ShareRead] = []
        wanted: dict[Part, _Held] = {}
        lock_deadline = now + 3_600_000
        for topic, partition in parts:
            try:
                held = self._held(group_id, topic, partition, settings)
            except OdradekError as exc:
                out.append(ShareRead(topic, partition, exc.code, exc.message))
                continue
            if held is None:  # still loading: nothing from it this time
                continue
            sp = held.partition
            archived = sp.archived_at_limit
            if sp.expire(now, settings.limits):
                self._given_back.set()
                held.dirty = True
                self._write_later((group_id, topic, partition), held)
            self._note_archived(group_id, topic, partition, sp.archived_at_limit - archived)
            lock_deadline = min(lock_deadline, sp.deadline_floor)
            if sp.can_acquire(settings.limits):
                wanted[(topic, partition)] = held
        request = _request(wanted, max_bytes, max_records, settings.isolation_level)
        if wanted:
            left = max_records
            for r in self.replicas.read_all(request):
                held = wanted[(r.topic, r.partition)]
                if r.record_count > 0 and r.size_bytes > 0:
                    held.bytes_per_offset = r.size_bytes / r.record_count
                elif r.high_watermark > held.partition.next_fetch_offset():
                    held.bytes_per_offset = 0.0  # its budget held no whole batch: all next
                read = self._acquire(member_id, held.partition, r, left, settings, now)
                left -= sum(a.last_offset - a.first_offset + 1 for a in read.acquired)
                out.append(read)
        return out, request, lock_deadline

    def _acquire(
        self, member_id: str, sp: SharePartition, r: PartitionRead, max_records: int,
        settings: GroupShareSettings, now_ms: int,
    ) -> ShareRead:  # fmt: skip
        out = ShareRead(r.topic, r.partition, r.error_code)
        if r.error_code != NONE or max_records <= 0 or not r.size_bytes:
            return out
        data = read_slice(r.records) if isinstance(r.records, FileSlice) else bytes(r.records)
        batches, scanned_to = acquirable(data, r.aborted)
        out.acquired = sp.acquire(member_id, batches, max_records, settings.limits, now_ms,
                                  scanned_to)  # fmt: skip
        if out.acquired:
            out.records = covering(data, out.acquired[0].first_offset,
                                   out.acquired[-1].last_offset)  # fmt: skip
        return out

    async def _wait(self, request: FetchRequest, wait_ms: int) -> None:
        """Until new records at the request's offsets, records given back, or `wait_ms`."""
        self._given_back.clear()
        waits: list[asyncio.Future[object]] = [asyncio.ensure_future(self._given_back.wait())]
        parked = None
        if request.topics:
            level = request.isolation_level
            wait = FetchRequest(CONSUMER_REPLICA_ID, wait_ms, 1, request.max_bytes,
                                request.topics, isolation_level=level)  # fmt: skip
            parked = self.replicas.park_fetch(wait)
        if parked is not None:
            waits.append(asyncio.ensure_future(_awaited(parked)))
        try:
            await asyncio.wait(waits, timeout=wait_ms / 1000, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
            cancel = getattr(parked, "cancel", None)
            if cancel is not None:
                cancel()

    # ----- share partitions --------------------------------------------------------------

    def _held(
        self, group_id: str, topic: str, partition: int,
        settings: GroupShareSettings | None = None,
    ) -> _Held | None:  # fmt: skip
        """The group's share partition if loaded in the current leader epoch (without a
        persister, made at `share.auto.offset.reset` when `settings` are given); raises the
        partition's error when this broker does not lead it."""
        led = self.replicas.leader(topic, partition)
        key = (group_id, topic, partition)
        held = self._partitions.get(key)
        if held is not None and held.leader_epoch == led.leader_epoch:
            return held
        if self.persister is not None or settings is None:
            return None
        start = _start(led, settings)
        held = self._partitions[key] = _Held(led.leader_epoch, SharePartition(start))
        log.info("share group %s: share partition %s-%d starts at %d (%s)",
                 group_id, topic, partition, start, settings.auto_offset_reset)  # fmt: skip
        return held

    async def _load(self, group_id: str, parts: Sequence[Part], max_wait_ms: int) -> None:
        """Start loading the share partitions not loaded in their current leader epoch; wait
        for them at most `max_wait_ms`."""
        if self.persister is None:
            return
        waiting = []
        for topic, partition in parts:
            try:
                led = self.replicas.leader(topic, partition)
            except OdradekError:
                continue  # the fetch answers the partition's error
            key = (group_id, topic, partition)
            held = self._partitions.get(key)
            if held is not None and held.leader_epoch == led.leader_epoch:
                continue
            loading = self._loading.get(key)
            if loading is None or loading[0] != led.leader_epoch or loading[1].done():
                task = asyncio.ensure_future(self._load_one(key, led.leader_epoch))
                loading = self._loading[key] = (led.leader_epoch, task)
            waiting.append(loading[1])
        if waiting:
            await asyncio.wait(waiting, timeout=max(1, max_wait_ms) / 1000)

    async def _load_one(self, key: SpKey, leader_epoch: int) -> None:
        """Read the share partition's state (initializing it first when it has none) and hold
        it, if this broker still leads the partition in `leader_epoch`."""
        assert self.persister is not None
        group_id, topic, partition = key
        started_ms = self.clock.monotonic_ms()
        loaded = await self.persister.read(group_id, topic, partition, leader_epoch)
        if loaded.error_code == NONE and loaded.start_offset < 0:
            try:
                start = _start(self.replicas.leader(topic, partition), self.settings(group_id))
            except OdradekError:
                return
            code = await self.persister.initialize(group_id, topic, partition,
                                                   loaded.state_epoch, start)  # fmt: skip
            if code != NONE:
                return
            loaded = await self.persister.read(group_id, topic, partition, leader_epoch)
        if loaded.error_code != NONE or loaded.start_offset < 0:
            log.warning("share group %s: loading %s-%d failed (error %d); the next fetch "
                        "tries again", group_id, topic, partition, loaded.error_code)  # fmt: skip
            return
        try:
            if self.replicas.leader(topic, partition).leader_epoch != leader_epoch:
                return
        except OdradekError:
            return
        sp = from_state(loaded.start_offset, [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in loaded.batches])  # fmt: skip
        self._partitions[key] = _Held(leader_epoch, sp, loaded.state_epoch)
        self.metrics.on_loaded(self.clock.monotonic_ms() - started_ms)
        log.info("share group %s: share partition %s-%d loaded at %d (%d in flight)",
                 group_id, topic, partition, sp.start_offset, len(sp.records))  # fmt: skip
        self._given_back.set()

    async def _write(self, key: SpKey, held: _Held) -> int:
        """Write the share partition's state if it changed; the error code."""
        if self.persister is None:
            return NONE
        async with held.writing:
            if not held.dirty:
                return NONE
            held.dirty = False
            sp = held.partition
            ranges, done = state_batches(sp)
            code = await self.persister.write(
                *key, held.state_epoch, held.leader_epoch, sp.start_offset,
                [StateBatch(*r) for r in ranges], done,
            )  # fmt: skip
            if code == FENCED_STATE_EPOCH and self._partitions.get(key) is held:
                self._partitions.pop(key)  # an admin replaced the state: load it anew
            elif code != NONE:
                held.dirty = True
            return code

    def _write_later(self, key: SpKey, held: _Held) -> None:
        if self.persister is None:
            return
        task = asyncio.ensure_future(self._write(key, held))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def close(self) -> None:
        """Cancel the loads and background writes under way (the broker is stopping)."""
        tasks: list[asyncio.Task[object]] = [t for _, t in self._loading.values()]
        tasks += list(self._writes)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def forget(self, group_id: str, topic: str, partition: int) -> None:
        """Drop what is held of a share partition whose durable state an admin replaced
        (AlterShareGroupOffsets, DeleteShareGroupOffsets): the next fetch loads it anew."""
        self._partitions.pop((group_id, topic, partition), None)

    def share_partition(self, group_id: str, topic: str, partition: int) -> SharePartition | None:
        held = self._partitions.get((group_id, topic, partition))
        return None if held is None else held.partition

    def partition_counts(self) -> dict[SpKey, tuple[int, int]]:
        """(in flight, archived) of each share partition held (for the metrics)."""
        return {k: (h.partition.in_flight(), h.partition.archived)
                for k, h in self._partitions.items()}  # fmt: skip

    def _note_archived(self, group_id: str, topic: str, partition: int, count: int) -> None:
        if count > 0:
            log.info("share group %s: %d record(s) of %s-%d archived at the delivery count "
                     "limit", group_id, count, topic, partition)  # fmt: skip


def _start(led: LedPartition, settings: GroupShareSettings) -> int:
    """Where a new share partition starts: `share.auto.offset.reset`."""
    if settings.auto_offset_reset == EARLIEST:
        return led.log.log_start_offset
    return led.high_watermark


def _request(
    wanted: dict[Part, _Held], max_bytes: int, max_records: int, isolation_level: int
) -> FetchRequest:
    topics: dict[str, list[FetchPartition]] = {}
    for (topic, partition), held in wanted.items():
        sp = held.partition
        offset = sp.next_fetch_offset()
        budget = read_budget(held.bytes_per_offset, offset, sp.end_offset, max_records,
                             max_bytes)  # fmt: skip
        topics.setdefault(topic, []).append(FetchPartition(partition, offset, budget))
    return FetchRequest(
        CONSUMER_REPLICA_ID, 0, 1, max_bytes,
        [FetchTopic(t, ps) for t, ps in topics.items()], isolation_level=isolation_level,
    )  # fmt: skip


async def _awaited(waitable: object) -> object:
    return await waitable  # type: ignore[misc]
