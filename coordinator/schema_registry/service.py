"""The registry service: reads from the state this broker replayed, writes through one writer.

- **Every broker reads `_schemas` partition 0 from its own replica** (`follow`, a task): every
  `poll_ms` it reads what lies below the replica's high watermark past its position and
  applies it to its state (state.py). A read is answered from that state, so after a write is
  acknowledged (the HW passed it) another broker answers it within `poll_ms` plus the time
  its replica takes to fetch the record and learn the new HW (its replica fetcher's next
  fetch: about one fetch wait, 500 ms by default): about a second, bounded by
  `replica.lag.time.max.ms` while the broker stays in sync.
- **One writer**: the broker leading partition 0 (`writer_id`). A write (`write`) holds the
  writer's lock, first waits until this broker has replayed the log to its end (so the next
  id is past every id the topic holds, as Confluent's leader does when elected), decides
  (writes.py: records plus the answer), appends the records as leader with acks=all (a
  broker no longer leading fails the append: no two writers can both succeed), then waits
  until its own replay has applied them, and answers. The writing broker thus sees its
  write at once. Another broker's door forwards a write to the writer (broker/registry/),
  which answers with the records it appended and its position past them; the forwarding
  broker applies them to its state at once (`apply_ahead`), as Confluent's followers take
  their leader's answer as it is, so it too sees the write at once without waiting for its
  replica to learn the new high watermark (a replica fetch wait, ~500 ms). Until its replay
  passes that position, those records are applied again after each replay step, so what
  the replay brings in from before them never hides them; applying a record twice changes
  nothing (state.py).
- The topic is created on the first write (`ensure_topic`): one partition, compacted,
  replication factor min(3, live brokers), like Confluent's `_schemas`.
- A broker with no replica of `_schemas` (a cluster of more than three brokers) has no state
  to read from: `hosts_replica` is False and its door forwards reads to the writer too.

The broker's partitions are reached through `RegistryLog` (the ReplicaManager, adapted by
the broker), the cluster through coordinator/runtime/log.py's `ClusterView` and
`TopicCreator`; time and sleeping are injected. A record that is not a registry record, or a
batch that does not decode, is skipped with a warning, never applied and never retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from coordinator.runtime.log import ClusterView, TopicCreator
from coordinator.schema_registry import compat
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import TOPIC, Record, SchemaRecord, decode, encode
from coordinator.schema_registry.state import RegistryState
from protocol.batch import (
    CONTROL_BIT,
    InvalidBatchError,
    build_batch,
    decode_records,
    iter_batches,
)
from protocol.clock import Clock
from protocol.errors import TopicAlreadyExistsError

log = logging.getLogger("odradek.schema_registry")

T = TypeVar("T")
READ_BYTES = 1 << 20
TOPIC_CONFIGS = {"cleanup.policy": "compact"}
Sleep = Callable[[float], Awaitable[None]]


class RegistryLog(Protocol):
    def led_partitions(self, topic: str) -> dict[int, int]: ...
    def log_range(self, topic: str, partition: int) -> tuple[int, int] | None: ...
    def high_watermark(self, topic: str, partition: int) -> int | None: ...
    def read_records(
        self, topic: str, partition: int, offset: int, max_bytes: int, max_offset: int
    ) -> tuple[bytes, int] | None: ...
    async def append_replicated(
        self, topic: str, partition: int, records: bytes, timeout_ms: int
    ) -> int: ...


@dataclass(frozen=True, slots=True)
class RegistrySettings:
    default_level: str = compat.DEFAULT_LEVEL
    replication_factor: int = 3
    poll_ms: int = 50  # how often a broker reads what its replica got
    append_timeout_ms: int = 10_000  # acks=all
    catch_up_timeout_ms: int = 10_000  # the writer's replay to the log end
    create_wait_ms: int = 10_000


class RegistryService:
    def __init__(
        self,
        log_: RegistryLog,
        cluster: ClusterView,
        topics: TopicCreator,
        clock: Clock,
        settings: RegistrySettings = RegistrySettings(),
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.log, self.cluster, self.topics = log_, cluster, topics
        self.clock, self.settings, self.sleep = clock, settings, sleep
        self.state = RegistryState()
        self.position = 0  # the next offset to apply
        # a forwarded write's records, applied before the replay reaches them: (the offset
        # past them, record, canonical text), kept on top of the replay until it passes them
        self._ahead: list[tuple[int, Record, str | None]] = []
        self._lock = asyncio.Lock()

    # ----- reading the topic --------------------------------------------------------------

    async def follow(self) -> None:
        """Apply what the replica holds below its HW, every `poll_ms`, until cancelled."""
        while True:
            try:
                self.catch_up()
            except Exception:  # a bug here must not end the follower
                log.exception("reading %s failed; retrying", TOPIC)
            await self.sleep(self.settings.poll_ms / 1000)

    def hosts_replica(self) -> bool:
        return self.log.log_range(TOPIC, 0) is not None

    def catch_up(self) -> int:
        """Apply every record below the HW past `position`; how many were applied."""
        bounds, hw = self.log.log_range(TOPIC, 0), self.log.high_watermark(TOPIC, 0)
        if bounds is None or hw is None:
            return 0
        if hw < self.position:  # the topic was deleted and made again: start over
            log.warning("%s ends at %d, before what was read (%d): replaying", TOPIC, hw,
                        self.position)  # fmt: skip
            self.state, self.position, self._ahead = RegistryState(), 0, []
        self.position = max(self.position, bounds[0])
        count = 0
        while self.position < hw:
            read = self.log.read_records(TOPIC, 0, self.position, READ_BYTES, hw)
            if read is None:
                break
            data, next_offset = read
            for pos, header in iter_batches(data, check_crc=False):
                if header.last_offset < self.position or header.attributes & CONTROL_BIT:
                    continue
                try:
                    count += self._apply_batch(data, pos)
                except InvalidBatchError as exc:  # skipped, so the replay never sticks there
                    log.warning("%s batch at offset %d skipped: %s", TOPIC, header.base_offset,
                                exc)  # fmt: skip
            self.position = max(self.position, next_offset)
        if self._ahead:
            self._ahead = [a for a in self._ahead if a[0] > self.position]
            for _, record, canonical in self._ahead if count else ():
                self.state.apply(record, canonical)  # still newer than what was replayed
        return count

    def apply_ahead(self, records: list[Record], end: int) -> None:
        """Apply a forwarded write's records, which the writer appended below offset `end`,
        at once, unless the replay has passed `end` already (module comment)."""
        if self.position >= end:
            return
        for record in records:
            canonical = canonical_of(record)
            self._ahead.append((end, record, canonical))
            self.state.apply(record, canonical)

    def _apply_batch(self, data: bytes, pos: int) -> int:
        count = 0
        for rec in decode_records(data, pos)[1]:
            if rec.offset < self.position:
                continue
            try:
                record = decode(rec.key, rec.value)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("%s offset %d: record skipped: %s", TOPIC, rec.offset, exc)
                continue
            self.state.apply(record, canonical_of(record))
            count += 1
        return count

    # ----- writing ------------------------------------------------------------------------

    def writer_id(self) -> int | None:
        """The broker leading `_schemas` partition 0 (None: no leader known)."""
        partition = self.cluster.topics.get(TOPIC, {}).get(0)
        return None if partition is None or partition.leader < 0 else partition.leader

    def is_writer(self) -> bool:
        return 0 in self.log.led_partitions(TOPIC)

    async def write(self, decide: Callable[[RegistryState], tuple[list[Record], T]]) -> T:
        """Decide over the replayed state, append, wait until applied here; the answer.
        Raises RegistryError (50004 when this broker is not the writer)."""
        return (await self.write_logged(decide))[0]

    async def write_logged(
        self, decide: Callable[[RegistryState], tuple[list[Record], T]]
    ) -> tuple[T, list[Record]]:
        """`write`, with the records it appended (none when the write changed nothing)."""
        async with self._lock:
            if not self.is_writer():
                raise RegistryError.unknown_leader(f"broker is not the {TOPIC} writer")
            await self._replayed_to_end()
            records, answer = decide(self.state)
            if records:
                batch = build_batch([(*encode(r), None, self.clock.time_ms()) for r in records])
                timeout_ms = self.settings.append_timeout_ms
                code = await self.log.append_replicated(TOPIC, 0, batch, timeout_ms)
                if code != 0:
                    raise RegistryError.store(f"writing to {TOPIC} failed (error code {code})")
                await self._replayed_to_end()
            return answer, records

    async def _replayed_to_end(self) -> None:
        deadline = self.clock.monotonic_ms() + self.settings.catch_up_timeout_ms
        while True:
            self.catch_up()
            bounds = self.log.log_range(TOPIC, 0)
            if bounds is not None and self.position >= bounds[1]:
                return
            if self.clock.monotonic_ms() >= deadline:
                raise RegistryError.timeout(
                    f"{TOPIC} not replayed to its end within {self.settings.catch_up_timeout_ms} ms"
                )
            await self.sleep(self.settings.poll_ms / 1000)

    async def wait_applied(self, offset: int) -> bool:
        """Wait (at most `catch_up_timeout_ms`) until this broker has applied the records
        below `offset` (a forwarded write's, as the writer reported it): False on timeout,
        or at once without a replica here (its reads are forwarded)."""
        deadline = self.clock.monotonic_ms() + self.settings.catch_up_timeout_ms
        while self.hosts_replica():
            self.catch_up()
            if self.position >= offset:
                return True
            if self.clock.monotonic_ms() >= deadline:
                return False
            await self.sleep(self.settings.poll_ms / 1000)
        return False

    async def ensure_topic(self) -> None:
        """Create `_schemas` if it is missing and wait until it has a leader."""
        if self.writer_id() is not None:
            return
        if not self.cluster.has_topic(TOPIC):
            live = self.cluster.live_broker_ids()
            rf = max(1, min(self.settings.replication_factor, len(live)))
            try:
                await self.topics.create_topic(TOPIC, 1, rf, TOPIC_CONFIGS, live)
                log.info("created %s: replication factor %d", TOPIC, rf)
            except TopicAlreadyExistsError:
                pass
        await self.cluster.wait_until(lambda: self.writer_id() is not None,
                                      self.settings.create_wait_ms)  # fmt: skip


def canonical_of(record: Record) -> str | None:
    """The text a SCHEMA record's schema is matched by (state.py `ids`); None for others."""
    if not isinstance(record, SchemaRecord) or record.schema is None:
        return None
    if record.schema_type not in compat.CHECKED:
        return record.schema.strip()
    try:
        return compat.canonical(compat.Schema(record.schema_type, record.schema))
    except ValueError:
        return None
