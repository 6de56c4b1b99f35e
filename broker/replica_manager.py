"""The partitions this broker hosts, and the produce / fetch / list-offsets work on them.

`ReplicaManager` maps (topic, partition) to a `Partition` (broker/partition.py), created and
re-roled only by the controller's LeaderAndIsr and removed by StopReplica: that work is
`PartitionRoles`' (broker/partition_roles.py, `self.roles`, sharing the map). Handlers call it
with decoded requests and turn what it returns into responses; it never sees sockets or envelopes.

Produce (`append`): a client's control or transactional batch is refused (INVALID_RECORD,
protocol/batch.py `check_client_batch`; followers copy batches without this check); the batch
bytes go to `Log.append_as_leader` unread (the log checks header, CRC and size, stamps offset
and leader epoch, and writes nothing on error), unless the topic's cleanup.policy,
compression.type or message.timestamp.* configs ask the leader to check or rewrite it first
(broker/log_validator.py: INVALID_RECORD / INVALID_TIMESTAMP naming the bad records in
`AppendOutcome.record_errors`, recompression, LogAppendTime); parked follower fetches wake, and
the HW moves if the ISR allows. For a topic with `flush.messages=1` the caller awaits
`AppendOutcome.durable` (group commit) before answering. acks=all: refused with
NOT_ENOUGH_REPLICAS (nothing appended) while the ISR is below min.insync.replicas; otherwise
`await_replication` parks the request in the partitions' delayed-produce queues
(broker/delayed_produce.py) until the HW passes its batches or its timeout_ms ends.

Fetch (`fetch`): partitions are read in request order within a byte budget (KIP-74,
broker/partition_read.py `read_limit`, which also says what a read returns). Consumers read
below the HW; replicas up to the log end, and their fetch offset is their log end offset for the
leader (`Partition.record_follower_fetch`: HW, and ISR expansion; the log start offset they
report is kept for DeleteRecords, broker/delete_records.py). When fewer than
`min_bytes` came back, the fetch parks one future on each partition it reads and re-reads when
any of them moves, until `min_bytes` or `max_wait_ms`. At most `max_delayed_fetches` park at
once; beyond that a fetch is answered at once with what there is. The wait is measured on the
event loop's clock (asyncio.timeout): the loop is the edge that owns real time here.

ISR changes (leader side) are `IsrChanges`' (broker/isr_changes.py, `self.isr`): a follower's
fetch may expand the ISR there, a periodic check shrinks it; both are written to ZooKeeper first.

The coordinators see the partitions only through `CoordinatorLog` (coordinator/runtime/log.py):
`led_partitions`, `log_range`, `read_records` (bytes, read here) and `append_replicated`.

A failed log directory (KIP-112) is `StorageFailures`' (broker/storage_failures.py,
`self.failures`): `failures.failed` turns a log operation's error into its answer (an I/O error
takes the directory offline first: every partition goes OFFLINE, the controller is told), so
produce, fetch and list-offsets answer KAFKA_STORAGE_ERROR for them.

`start` runs the periodic ISR check and high watermark checkpoint; `shutdown` cancels them,
stops the fetchers and writes the checkpoint a last time.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from broker.deferred import Deferred
from broker.delayed_fetch import DelayedFetch, FetchPurgatory
from broker.delayed_produce import DelayedProduce
from broker.fetch_session import DEFAULT_SLOTS, FetchContext, FetchSessionCache, Key, request_parts
from broker.isr_changes import IsrChanges, IsrWriter
from broker.log.config import LogConfig
from broker.log.dir_moves import ReplicaMoves
from broker.log_validator import needs_rewrite, validate_for_leader
from broker.metrics_counters import TopicTraffic
from broker.offset_lookup import offset_for_timestamp
from broker.partition import Partition
from broker.partition_read import (
    SMALL_READ_BYTES,
    PartitionRead,
    fetch_satisfied,
    read_limit,
    read_slice,
)
from broker.partition_roles import PartitionRoles
from broker.replica_fetcher import (
    Connector,
    FetcherSettings,
    ReplicaFetcherManager,
    default_connector,
)
from broker.replication_decisions import (
    check_enough_replicas,
    not_enough_replicas_message,
    produce_outcome,
    record_fetch,
)
from broker.replication_timeline import ConfirmTimes
from broker.storage_failures import (
    LogDirNotifier,
    StorageFailures,
)
from protocol.api.fetch import READ_COMMITTED, READ_UNCOMMITTED, FetchPartition, FetchRequest
from protocol.api.produce import ACKS_ALL, RecordError
from protocol.batch import check_client_batch, read_header
from protocol.clock import Clock, SystemClock
from protocol.codec import FileSlice
from protocol.errors import (
    FencedLeaderEpochError,
    LogDirOfflineError,
    NotLeaderForPartitionError,
    OdradekError,
    ReplicaNotAvailableError,
    RequestTimedOutError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
    for_code,
)
from protocol.record_errors import RecordValidationError

if TYPE_CHECKING:
    from broker.log.flusher import GroupCommitFlusher
    from broker.log.manager import LogManager


@dataclass(slots=True)
class TxnCheck:
    """A transactional batch's verification (KIP-890): the token to present at the append,
    and whether the coordinator must still be asked."""

    token: object | None
    needed: bool


@dataclass(frozen=True, slots=True)
class ReplicationSettings:
    replica_lag_time_max_ms: int = 10_000
    fetcher: FetcherSettings = field(default_factory=FetcherSettings)
    hw_checkpoint_interval_ms: int = 5000  # replica.high.watermark.checkpoint.interval.ms
    # replica.alter.log.dirs.io.max.bytes.per.second: replica moves' copying (None: unthrottled)
    alter_log_dirs_io_max_bytes_per_second: int | None = None


NONE = 0
log = logging.getLogger("odradek.broker.replicas")


@dataclass(slots=True)
class AppendOutcome:
    error_code: int
    base_offset: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    durable: Awaitable[None] | None = None  # flush.messages=1: await before answering
    required_offset: int = -1  # acks=all: the HW this batch needs (its last offset + 1)
    log_append_time_ms: int = -1  # message.timestamp.type=LogAppendTime: the time stamped
    record_errors: tuple[RecordError, ...] = ()  # the records a refused batch was refused for


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        flusher: GroupCommitFlusher,
        default_log_config: LogConfig,
        max_delayed_fetches: int,
        fetch_max_bytes: int,
        *,
        clock: Clock | None = None,
        replication: ReplicationSettings | None = None,
        isr_writer: IsrWriter | None = None,
        connect: Connector | None = None,
        log_dir_notifier: LogDirNotifier | None = None,
        fetch_session_slots: int = DEFAULT_SLOTS,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.flusher = flusher
        self.default_log_config = default_log_config
        self.max_delayed_fetches = max_delayed_fetches
        self.fetch_max_bytes = fetch_max_bytes
        self.clock: Clock = clock or SystemClock()
        self.replication = replication or ReplicationSettings()
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.purgatory = FetchPurgatory()  # parked long-polling fetches
        self.sessions = FetchSessionCache(fetch_session_slots)  # followers' fetch sessions
        self.traffic = TopicTraffic()  # bytes/records in and out, ISR changes (metrics)
        self.timeline = ConfirmTimes()  # appends to their followers' confirmations (metrics)
        self.fetchers = ReplicaFetcherManager(
            broker_id, self.replication.fetcher, connect or default_connector,
            on_storage_failure=self.log_manager.fail,
        )  # fmt: skip
        self._tasks: set[asyncio.Task[None]] = set()
        self.isr = IsrChanges(
            broker_id, self.partitions, self.clock, self.replication.replica_lag_time_max_ms,
            isr_writer, self.traffic, self._spawn,
        )  # fmt: skip
        self.failures = StorageFailures(
            log_manager, self.partitions, self.fetchers, log_dir_notifier, self._spawn
        )
        log_manager.add_failure_listener(self.failures.on_log_dir_offline)
        self.moves = ReplicaMoves(
            log_manager,
            self.partitions,  # AlterReplicaLogDirs
            self.replication.alter_log_dirs_io_max_bytes_per_second,
        )
        self.roles = PartitionRoles(
            broker_id, self.partitions, log_manager, self.fetchers, self.failures,
            default_log_config, self.clock, self.replication.hw_checkpoint_interval_ms,
        )  # fmt: skip

    # ----- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the periodic ISR check and HW checkpoint (the daemon calls this; unit tests
        drive isr.check_isr and roles.checkpoint_high_watermarks)."""
        self._spawn(self.isr.run_isr_checks())
        self._spawn(self.roles.run_hw_checkpoints())
        self._spawn(self.moves.run())

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.fetchers.shutdown()
        self.roles.checkpoint_high_watermarks()  # the logs close after this (Kafka's order too)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----- lookups --------------------------------------------------------------------------

    def leader(self, topic: str, partition: int, leader_epoch: int = -1) -> Partition:
        """The partition if this broker leads it (at `leader_epoch`, when one is given)."""
        p = self.partitions.get((topic, partition))
        if p is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{partition} is not hosted here")
        if p.storage_failed:
            raise LogDirOfflineError(
                f"the log directory of {topic}-{partition} on broker {self.broker_id} is offline"
            )
        if not p.is_leader:
            raise NotLeaderForPartitionError(
                f"broker {self.broker_id} does not lead {topic}-{partition}"
            )
        check_leader_epoch(p, leader_epoch)
        return p

    # ----- produce --------------------------------------------------------------------------

    def append(
        self,
        topic: str,
        partition: int,
        records: bytes,
        acks: int = 1,
        coordinator: bool = False,
        txn_check: TxnCheck | None = None,
    ) -> AppendOutcome:
        """A produce's append as leader. `coordinator`: a coordinator's own batch (the group
        and transaction coordinators' records), not checked as a client's. `txn_check`: a
        transactional producer's batch goes in only into a transaction the coordinator
        verified (KIP-890, broker/txn_verifier.py)."""
        try:
            p = self.leader(topic, partition)
            if acks == ACKS_ALL:
                code = check_enough_replicas(len(p.isr), p.min_insync_replicas)
                if code != NONE:
                    return AppendOutcome(code, error_message=not_enough_replicas_message(
                        f"{topic}-{partition}", p.isr, p.min_insync_replicas, len(p.replicas)
                    ))  # fmt: skip
            if not coordinator:
                check_client_batch(read_header(records))  # no control batches (KIP-98)
            append_time = -1
            if needs_rewrite(p.log.config):  # compression.type, message.timestamp.*
                records, append_time = validate_for_leader(
                    records, p.log.config, p.log.clock.time_ms()
                )
            verify = None
            if txn_check is not None:
                producers, token = p.log.producers, txn_check.token

                def verify(pid: int, epoch: int) -> None:
                    producers.check_verified(pid, epoch, token)

            info = p.log.append_as_leader(records, p.leader_epoch, verify, coordinator)
        except (OdradekError, OSError) as exc:
            code, message = self.failures.failed_at(exc, "append to", (topic, partition))
            bad = exc.record_errors if isinstance(exc, RecordValidationError) else ()
            return AppendOutcome(code, error_message=message, record_errors=bad)
        if not info.duplicate:  # a retry of a stored batch appended nothing
            self.traffic.produced(topic, len(records), info.last_offset - info.base_offset + 1)
            self.timeline.appended(p.append_ends, info.last_offset + 1)
            p.notify_replica_waiters()
            p.update_high_watermark()
            self.purgatory.complete_woken()  # answer the fetches it satisfied, now
        durable = None
        if p.log.config.flush_messages == 1:
            durable = self._wait_durable(p, info.last_offset)
        return AppendOutcome(NONE, info.base_offset, p.log.log_start_offset, None, durable,
                             info.last_offset + 1, append_time)  # fmt: skip

    async def _wait_durable(self, p: Partition, offset: int) -> None:
        """Group commit; a failed flush takes the directory offline and raises
        LogDirOfflineError (the produce is answered with it, never acknowledged)."""
        try:
            await self.flusher.wait_durable(p.log, offset)
        except (OdradekError, OSError) as exc:
            code, message = self.failures.failed_at(exc, "flush of", (p.topic, p.index))
            raise for_code(code)(message) from None

    def replication_done(self, topic: str, partition: int, required_offset: int) -> int | None:
        """acks=all: the answer now, or None when the HW has not reached the batch yet."""
        p = self.partitions.get((topic, partition))
        if p is None or not p.is_leader:
            return NotLeaderForPartitionError.code
        return produce_outcome(p.high_watermark, required_offset, len(p.isr), p.min_insync_replicas)

    async def await_replication(
        self, pending: list[tuple[str, int, int]], timeout_ms: int
    ) -> dict[tuple[str, int], int]:
        """acks=all: wait until each (topic, partition, required offset) is replicated."""
        return await self.replication_deferred(pending, timeout_ms)

    def replication_deferred(
        self, pending: list[tuple[str, int, int]], timeout_ms: int
    ) -> Deferred[dict[tuple[str, int], int]]:
        """`await_replication` as a Deferred, resolved inside the HW move that completes it."""
        op = DelayedProduce()
        for topic, index, _ in pending:  # all first: no answer before every partition is in
            op.expect((topic, index))
        for topic, index, required in pending:
            p = self.partitions.get((topic, index))
            if p is None or not p.is_leader:
                op.complete((topic, index), NotLeaderForPartitionError.code)
            else:
                p.produce_waiters.add(required, op)
                # the HW may have moved since the append was answered by the caller
                p.produce_waiters.on_high_watermark(
                    p.high_watermark, len(p.isr), p.min_insync_replicas
                )
        return op.start(timeout_ms)

    # ----- fetch ----------------------------------------------------------------------------

    @property
    def delayed_fetches(self) -> int:
        return self.purgatory.parked

    def park_fetch(
        self, request: FetchRequest, context: FetchContext | None = None
    ) -> Deferred[list[PartitionRead]] | None:
        """Long-poll a fetch whose first read came back short (broker/delayed_fetch.py): the
        reads once min_bytes is there or max_wait_ms ends; None when too many are parked
        (the caller answers with what it read). `context`: the partitions its session reads."""
        if self.purgatory.parked >= self.max_delayed_fetches:
            return None
        replica = request.replica_id >= 0
        if context is None:
            keys = [(topic, fp.partition) for topic, fp in request_parts(request)]
        else:
            keys = context.keys()

        def park(waiter: Any) -> None:
            for key in keys:
                p = self.partitions.get(key)
                if p is not None:
                    p.add_waiter(waiter, replica=replica)

        fetch: DelayedFetch[list[PartitionRead]] = DelayedFetch(
            self.purgatory,
            lambda: self.read_all(request, context),
            lambda reads: fetch_satisfied(reads, request.min_bytes),
            park,
        )
        return self.purgatory.add(fetch, request.max_wait_ms)

    async def fetch(self, request: FetchRequest) -> list[PartitionRead]:
        """Read, and long-poll if fewer than min_bytes came back."""
        reads = self.read_all(request)
        if request.max_wait_ms <= 0 or fetch_satisfied(reads, request.min_bytes):
            return reads
        parked = self.park_fetch(request)
        return reads if parked is None else await parked

    def fetch_context(self, request: FetchRequest) -> FetchContext:
        """The request through its fetch session (broker/fetch_session.py); raises the
        session's errors (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH)."""
        return self.sessions.context(request, self.clock.monotonic_ms())

    def read_all(
        self, request: FetchRequest, context: FetchContext | None = None
    ) -> list[PartitionRead]:
        """Read the request's partitions (or its session's: `context`), in order. An
        incremental session's read leaves out the quiet partitions (`_quiet`)."""
        if context is None:
            parts: Sequence[tuple[str, FetchPartition]] = request_parts(request)
        elif context.incremental and request.replica_id >= 0:
            now, named, replica = self.clock.monotonic_ms(), context.named, request.replica_id
            parts = []
            for topic, fp in context.parts:
                key = (topic, fp.partition)
                if key in named or not self._quiet(key, fp, replica, context, now):
                    parts.append((topic, fp))
        else:
            parts = context.parts
        reads = self._read_all(request.replica_id, request.max_bytes, parts,
                               request.isolation_level)  # fmt: skip
        self.purgatory.complete_woken()  # a follower's fetch may have moved the HW
        return reads

    def _quiet(
        self, key: Key, fp: FetchPartition, replica_id: int, context: FetchContext, now_ms: int
    ) -> bool:
        """A session partition the request did not name, whose follower is in the ISR at the
        log end and was told its HW and log start: nothing to read or answer. Its fetch is
        noted (the follower stays caught up, as a full read would note); a False answer
        leaves the partition to the full read."""
        p = self.partitions.get(key)
        if p is None or not p.is_leader or p.storage_failed or replica_id not in p.isr:
            return False
        if not leader_epoch_matches(p, fp.current_leader_epoch):
            return False
        end = p.log.log_end_offset
        state = p.followers.get(replica_id)
        if fp.fetch_offset != end or state is None or state.log_end_offset != end:
            return False
        record_fetch(state, end, end, now_ms)
        return context.told(key) == (p.high_watermark, p.log.log_start_offset)

    def _read_all(
        self,
        replica_id: int,
        max_bytes: int,
        parts: Iterable[tuple[str, FetchPartition]],
        isolation_level: int = READ_UNCOMMITTED,
    ) -> list[PartitionRead]:
        reads: list[PartitionRead] = []
        remaining = min(max_bytes, self.fetch_max_bytes)
        total = 0
        for topic, fp in parts:
            limit, min_one = read_limit(
                min(fp.partition_max_bytes, self.fetch_max_bytes), remaining, total
            )
            r = self._read_one(
                replica_id, topic, fp.partition, fp.fetch_offset,
                fp.current_leader_epoch, limit, min_one, fp.log_start_offset, isolation_level,
            )  # fmt: skip
            total += r.size_bytes
            remaining -= r.size_bytes
            reads.append(r)
        return reads

    def _read_one(
        self,
        replica_id: int,
        topic: str,
        partition: int,
        offset: int,
        leader_epoch: int,
        limit: int,
        min_one: bool,
        replica_log_start: int = -1,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> PartitionRead:
        """One partition's read. Consumers read below the HW, or below the last stable offset
        with read_committed (then with the aborted transactions of what is returned, from
        `upper` = the offset after the last batch, as Kafka); followers to the log end."""
        try:
            p = self.leader(topic, partition, leader_epoch)
        except OdradekError as exc:
            return PartitionRead(topic, partition, exc.code)
        log = p.log
        max_offset: int | None = None
        committed = replica_id < 0 and isolation_level == READ_COMMITTED
        lso = p.last_stable_offset
        if replica_id < 0:  # a consumer (CONSUMER_REPLICA_ID or another non-replica id)
            max_offset = lso if committed else p.high_watermark
        elif replica_id not in p.replicas or replica_id == self.broker_id:
            return PartitionRead(topic, partition, ReplicaNotAvailableError.code)
        elif offset <= log.log_end_offset:
            known = p.followers.get(replica_id)
            self.timeline.fetched(
                p.append_ends, -1 if known is None else known.log_end_offset, offset
            )
            self.isr.follower_fetched(p, replica_id, offset)  # may move the HW: before `out`
            p.record_follower_log_start(replica_id, replica_log_start)  # for DeleteRecords
        out = PartitionRead(
            topic, partition, NONE, p.high_watermark, log.log_start_offset, log.log_end_offset,
            last_stable_offset=lso,
        )  # fmt: skip
        end = log.log_end_offset
        if offset == end or (max_offset is not None and max_offset <= offset < end):
            return out  # nothing (committed) past this offset yet: an empty answer
        if limit <= 0 and not min_one:
            return out  # the response's byte budget is spent
        try:
            result = log.read(offset, limit, max_offset=max_offset, min_one_batch=min_one)
            records: bytes | FileSlice | None = result.slice
            if result.slice is not None and 0 < result.size_bytes <= SMALL_READ_BYTES:
                records = read_slice(result.slice)
        except (OdradekError, OSError) as exc:
            out.error_code = self.failures.failed_at(exc, "read of", (topic, partition))[0]
            return out
        if records is not None and result.size_bytes > 0:
            out.records = records
            out.size_bytes = result.size_bytes
            out.record_count = result.next_offset - result.first_offset
            if committed:
                out.aborted = log.collect_aborted_transactions(offset, result.next_offset)
        return out

    # ----- list offsets ---------------------------------------------------------------------

    def list_offset(
        self,
        replica_id: int,
        topic: str,
        partition: int,
        timestamp: int,
        leader_epoch: int,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> tuple[int, int, int, int]:
        """(error_code, timestamp, offset, leader_epoch) for one partition; LATEST is the log
        end for a replica, the HW for a consumer, the LSO with read_committed."""
        try:
            p = self.leader(topic, partition, leader_epoch)
        except OdradekError as exc:
            return exc.code, -1, -1, -1
        return offset_for_timestamp(p, replica_id, timestamp, isolation_level)

    # ----- OffsetForLeaderEpoch -----------------------------------------------------------

    def end_offset_for_epoch(
        self, topic: str, partition: int, current_leader_epoch: int, leader_epoch: int
    ) -> tuple[int, int, int]:
        """(error_code, epoch, end offset): where `leader_epoch` ends in the leader's log."""
        try:
            p = self.leader(topic, partition, current_leader_epoch)
        except OdradekError as exc:
            return exc.code, -1, -1
        epoch, end = p.log.end_offset_for_epoch(leader_epoch)
        return NONE, epoch, end

    # ----- the coordinators' log (CoordinatorLog) ----------------------------------------

    def led_partitions(self, topic: str) -> dict[int, int]:
        parts = self.partitions.items()
        return {i: p.leader_epoch for (t, i), p in parts if t == topic and p.is_leader}

    def leads(self, topic: str, partition: int, leader_epoch: int) -> bool:
        p = self.partitions.get((topic, partition))
        return p is not None and p.is_leader and p.leader_epoch == leader_epoch

    def log_range(self, topic: str, partition: int) -> tuple[int, int] | None:
        p = self.partitions.get((topic, partition))
        return None if p is None else (p.log.log_start_offset, p.log.log_end_offset)

    def read_records(
        self, topic: str, partition: int, offset: int, max_bytes: int, max_offset: int
    ) -> tuple[bytes, int] | None:
        p = self.partitions.get((topic, partition))
        if p is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{partition} is not hosted here")
        read = p.log.read(offset, max_bytes, max_offset=max_offset)
        if read.slice is None:
            return None
        return os.pread(read.slice.fd, read.slice.length, read.slice.position), read.next_offset

    async def append_replicated(
        self, topic: str, partition: int, records: bytes, timeout_ms: int
    ) -> int:
        out = self.append(topic, partition, records, acks=ACKS_ALL, coordinator=True)
        if out.error_code != NONE:
            return out.error_code
        return await self._replicated(topic, partition, out.required_offset, out.durable,
                                      timeout_ms)  # fmt: skip

    async def _replicated(
        self, topic: str, partition: int, required: int, durable: Awaitable[None] | None,
        timeout_ms: int,
    ) -> int:  # fmt: skip
        """acks=all after an append: NONE once the HW passed `required`, else the error."""
        if durable is not None:
            await durable
        done = self.replication_done(topic, partition, required)
        if done is None:
            codes = await self.await_replication([(topic, partition, required)], timeout_ms)
            done = codes.get((topic, partition), RequestTimedOutError.code)
        return done

    # ----- KIP-890: verifying a transactional batch's partition ---------------------------

    def start_txn_verification(
        self, topic: str, partition: int, producer_id: int, producer_epoch: int
    ) -> TxnCheck:
        """Before a transactional batch: nothing to ask when the producer's transaction is
        open here; else a token the append must still find once the coordinator said yes."""
        producers = self.leader(topic, partition).log.producers
        if producers.in_transaction(producer_id, producer_epoch):
            return TxnCheck(None, needed=False)
        return TxnCheck(producers.start_verification(producer_id), needed=True)

    # ----- transaction markers (WriteTxnMarkers) --------------------------------------------

    async def append_marker(
        self, topic: str, partition: int, producer_id: int, producer_epoch: int,
        coordinator_epoch: int, commit: bool, timeout_ms: int,
    ) -> int:  # fmt: skip
        """Write a transaction's COMMIT or ABORT marker as leader and wait for the ISR to
        have it (the coordinator writes Complete* only after every marker is replicated)."""
        try:
            p = self.leader(topic, partition)
            info = p.log.append_control(producer_id, producer_epoch, coordinator_epoch, commit,
                                        p.leader_epoch)  # fmt: skip
        except (OdradekError, OSError) as exc:
            return self.failures.failed_at(exc, "marker to", (topic, partition))[0]
        p.notify_replica_waiters()
        p.update_high_watermark()
        self.purgatory.complete_woken()
        durable = None
        if p.log.config.flush_messages == 1:
            durable = self._wait_durable(p, info.last_offset)
        return await self._replicated(topic, partition, info.last_offset + 1, durable, timeout_ms)


def leader_epoch_matches(p: Partition, leader_epoch: int) -> bool:
    """-1 matches any epoch (no check asked)."""
    return leader_epoch < 0 or leader_epoch == p.leader_epoch


def check_leader_epoch(p: Partition, leader_epoch: int) -> None:
    """-1 skips the check; an older epoch is fenced, a newer one is not known here yet."""
    if leader_epoch_matches(p, leader_epoch):
        return
    if leader_epoch < p.leader_epoch:
        raise FencedLeaderEpochError(
            f"{p.topic}-{p.index}: leader epoch {leader_epoch} < {p.leader_epoch}"
        )
    raise UnknownLeaderEpochError(
        f"{p.topic}-{p.index}: leader epoch {leader_epoch} > {p.leader_epoch}"
    )
