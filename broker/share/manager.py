"""The share partitions a leader serves (KIP-932, Kafka's SharePartitionManager): ShareFetch
and ShareAcknowledge for every share group, over the replica manager's reads. In memory only:
a leader change or a restart starts each share partition again from `share.auto.offset.reset`
(the share coordinator's durable state, `__share_group_state`, is later work).

A share partition (share_partition.py) is made on the first fetch of its group, at the high
watermark (`latest`, Kafka's default) or the log start (`earliest`), and belongs to the leader
epoch it was made in: one found under another epoch is made again.

A fetch, per partition of its session (sessions.py): release what expired, read the log from
`next_fetch_offset` (below the HW, or the last stable offset with read_committed) and acquire
what the read holds (fetched.py leaves out control batches and aborted transactions), up to
the request's `max_records`. When nothing was acquired it waits (`max_wait_ms`, no longer than
the first acquisition lock to expire) for new records at the partitions' fetch offsets
(the replica manager's delayed fetch) or for records given back (a release, a member gone),
and tries again. The answer carries the bytes read (whole batches, as Kafka's; the client keeps
the acquired offsets) and the acquired ranges with their delivery counts.

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
from broker.share.fetched import acquirable
from broker.share.sessions import Key, Part, ShareSessions
from broker.share.share_partition import Acquired, ShareLimits, SharePartition
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


@dataclass(slots=True)
class _Held:
    leader_epoch: int
    partition: SharePartition


class SharePartitionManager:
    def __init__(
        self, replicas: ShareReplicas, clock: Clock,
        settings: Callable[[str], GroupShareSettings], sessions: ShareSessions | None = None,
    ) -> None:  # fmt: skip
        self.replicas = replicas
        self.clock = clock
        self.settings = settings
        self.sessions = sessions or ShareSessions()
        self._partitions: dict[tuple[str, str, int], _Held] = {}
        self._given_back = asyncio.Event()  # set when records become available again

    # ----- acknowledgements --------------------------------------------------------------

    def acknowledge(
        self, group_id: str, member_id: str, topic: str, partition: int,
        batches: Sequence[tuple[int, int, Sequence[int]]],
    ) -> int:  # fmt: skip
        """Apply a partition's acknowledgement batches (first, last, types); the first error
        code (the batches before it stay applied, as Kafka's)."""
        settings = self.settings(group_id)
        try:
            sp = self._partition(group_id, topic, partition, settings, create=False)
        except OdradekError as exc:
            return exc.code
        if sp is None:
            return 121  # INVALID_RECORD_STATE: nothing was ever acquired here
        now = self.clock.monotonic_ms()
        sp.expire(now, settings.limits)
        before = sp.archived_at_limit
        for first, last, types in batches:
            code = sp.acknowledge(member_id, first, last, types, settings.limits, now)
            if code != NONE:
                return code
            if 2 in types:  # RELEASE
                self._given_back.set()
        self._note_archived(group_id, topic, partition, sp.archived_at_limit - before)
        return NONE

    def release_member(self, group_id: str, member_id: str, parts: Sequence[Part]) -> None:
        """A member's session closed: its acquired records go back (Kafka's release on a
        session's end)."""
        settings = self.settings(group_id)
        for topic, partition in parts:
            held = self._partitions.get((group_id, topic, partition))
            if held is not None and held.partition.release_member(member_id, settings.limits):
                self._given_back.set()

    def session_key(self, group_id: str, member_id: str) -> Key:
        return (group_id, member_id)

    # ----- fetching ----------------------------------------------------------------------

    async def fetch(
        self, group_id: str, member_id: str, parts: Sequence[Part], max_wait_ms: int,
        max_bytes: int, max_records: int,
    ) -> list[ShareRead]:  # fmt: skip
        """Acquire records of `parts` for the member, waiting up to `max_wait_ms` for some."""
        deadline = self.clock.monotonic_ms() + max(0, max_wait_ms)
        while True:
            settings = self.settings(group_id)
            reads, request, lock_deadline = self._try(
                group_id, member_id, parts, settings, max_bytes, max_records
            )
            now = self.clock.monotonic_ms()
            if any(r.acquired or r.error_code for r in reads) or now >= deadline:
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
        wanted: dict[Part, SharePartition] = {}
        lock_deadline = now + 3_600_000
        for topic, partition in parts:
            try:
                sp = self._partition(group_id, topic, partition, settings, create=True)
            except OdradekError as exc:
                out.append(ShareRead(topic, partition, exc.code, exc.message))
                continue
            assert sp is not None
            archived = sp.archived_at_limit
            if sp.expire(now, settings.limits):
                self._given_back.set()
            self._note_archived(group_id, topic, partition, sp.archived_at_limit - archived)
            lock_deadline = min([lock_deadline] + [
                e.lock_deadline_ms for e in sp.records.values() if e.lock_deadline_ms
            ])  # fmt: skip
            if sp.can_acquire(settings.limits):
                wanted[(topic, partition)] = sp
        request = _request(wanted, max_bytes, settings.isolation_level)
        if wanted:
            left = max_records
            for r in self.replicas.read_all(request):
                sp = wanted[(r.topic, r.partition)]
                read = self._acquire(member_id, sp, r, left, settings, now)
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
            out.records = data
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

    def _partition(
        self, group_id: str, topic: str, partition: int, settings: GroupShareSettings,
        create: bool,
    ) -> SharePartition | None:  # fmt: skip
        """The group's share partition, made at `share.auto.offset.reset` when `create`;
        raises the partition's error when this broker does not lead it."""
        led = self.replicas.leader(topic, partition)
        epoch, log_start, high_watermark = (
            led.leader_epoch,
            led.log.log_start_offset,
            led.high_watermark,
        )
        key = (group_id, topic, partition)
        held = self._partitions.get(key)
        if held is not None and held.leader_epoch == epoch:
            return held.partition
        if not create:
            return None
        start = log_start if settings.auto_offset_reset == EARLIEST else high_watermark
        held = self._partitions[key] = _Held(epoch, SharePartition(start))
        log.info("share group %s: share partition %s-%d starts at %d (%s)",
                 group_id, topic, partition, start, settings.auto_offset_reset)  # fmt: skip
        return held.partition

    def share_partition(self, group_id: str, topic: str, partition: int) -> SharePartition | None:
        held = self._partitions.get((group_id, topic, partition))
        return None if held is None else held.partition

    def _note_archived(self, group_id: str, topic: str, partition: int, count: int) -> None:
        if count > 0:
            log.info("share group %s: %d record(s) of %s-%d archived at the delivery count "
                     "limit", group_id, count, topic, partition)  # fmt: skip


def _request(
    wanted: dict[Part, SharePartition], max_bytes: int, isolation_level: int
) -> FetchRequest:
    topics: dict[str, list[FetchPartition]] = {}
    for (topic, partition), sp in wanted.items():
        topics.setdefault(topic, []).append(
            FetchPartition(partition, sp.next_fetch_offset(), max_bytes)
        )
    return FetchRequest(
        CONSUMER_REPLICA_ID, 0, 1, max_bytes,
        [FetchTopic(t, ps) for t, ps in topics.items()], isolation_level=isolation_level,
    )  # fmt: skip


async def _awaited(waitable: object) -> object:
    return await waitable  # type: ignore[misc]
