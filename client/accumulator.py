"""The producer's record accumulator: per-partition queues of batches, drained per leader node.

Pure bookkeeping, no I/O and no clock of its own (callers pass `now_ms`), so tests drive it
directly. The producer appends records; its sender loop asks `ready()` which leader nodes have a
batch worth sending and `drain()` takes, for each ready node, at most one batch per partition led
by it, up to `max_request_bytes` per node: one ProduceRequest per node.

A partition's head batch is sendable when it is full (another batch queued behind it, or its
bytes reached `batch_size`), its `linger_ms` has passed, a flush or close is under way, or memory
is exhausted (someone waits for buffer space). A partition with `max_in_flight_per_partition`
batches on the wire, or whose head batch is backing off after a retriable error, is skipped.
A retried batch goes back to the front of its queue, so records of a partition keep their order
when `max_in_flight_per_partition` is 1.

Records are appended from the caller's thread (the sync Producer) as well as the loop's: the
accumulator is not thread-safe itself; its users hold `lock` around every call. `append` and
`append_new` create the record's future (`fut_cls(batch, index)`, client/record_future.py): it
refers to its batch, which settles all its records at once (`complete` / `fail`).

Memory: every record's estimated size is counted in `used_bytes` from `append` until its batch
completes (acknowledged, failed or expired); the producer refuses to append past `buffer_memory`
and waits instead (back-pressure). Bulk batches (`append_built`) are counted by their bytes.

Idempotence (`producer_id` >= 0, KIP-98 without transactions): a batch gets its partition's
next sequence number when it is first drained (base_sequence; the counter moves on by its record
count) and keeps it, its epoch and its bytes on every retry; a retried batch goes back into its
queue in sequence order (before the batches not sent yet), so retries reach the broker in order
even with up to 5 batches in flight. The producer gets its id and epoch from a broker
(InitProducerId) before its first batch is drained; nothing new is drained while
`awaiting_producer_id`. Sequence order is compared without wrap-around (2**31 records).

A partition numbers its batches under one (id, epoch) at a time (KIP-360, as the Java client's
TransactionManager): a numbered batch is *unsettled* from its first drain until it is
acknowledged or fails for good, and all of a partition's unsettled batches share one epoch.
- A numbered batch of the partition's epoch failed for good (`sequence_lost`: expired, or
  refused): the broker will refuse the sequences after its gap, so the partition drains nothing
  new; its unsettled batches still go (retried at their own epoch and sequence: the lost batch
  may have been stored after all, its answer lost) until they settle too.
- `epoch_bump_due` once such a partition has no unsettled batch left: the producer asks for the
  next epoch and calls `reset_producer`. Asking earlier would let the new epoch overtake the old
  one's retries (the broker would fence them, or with a fresh id store them after later values).
- After a bump each partition goes on at the new epoch from sequence 0, but only once it has no
  unsettled batch of the older epoch: until then its new batches wait, its retries go.
- `gap_before(batch)`: an OUT_OF_ORDER_SEQUENCE_NUMBER answer is final when a lost batch comes
  before this one and nothing before it is still unsettled (no retry can fill the gap).

Transactions (client/transactions.py): `txn_partitions` is the set of partitions added to the
open transaction; `ready` reports the queued partitions outside it (`txn_new`) and neither
`ready` nor `drain` sends them, until the producer has added them (AddPartitionsToTxn) and
they join the set, as Kafka's `isSendToPartitionAllowed`.

Batch life: open (taking records) -> closed (full or drained) -> in flight -> done, or back to
the queue's front on a retriable error, until `delivery_timeout_ms` after its creation.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from client.record_future import FAILED, SUCCEEDED, BatchState, RecordFuture
from client.types import BatchMetadata, TopicPartition
from protocol.batch import CODEC_NONE, NO_PRODUCER_ID, build_columns, with_producer
from protocol.errors import OdradekError

SEQUENCE_MODULUS = 2**31  # sequences are int32 counters that wrap to 0
RECORD_OVERHEAD_BYTES = 12  # a v2 record's length, attributes, deltas, varint lengths
NO_LEADER = -1
_new = object.__new__


def estimate_size(
    key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]] | None
) -> int:
    size = RECORD_OVERHEAD_BYTES + (len(key) if key else 0) + (len(value) if value else 0)
    if headers:
        for name, hv in headers:
            size += len(name) + (len(hv) if hv else 0) + 4
    return size


def _add_headers(batch: ProducerBatch, headers: list[tuple[str, bytes | None]] | None) -> None:
    """The next record's headers (call before its timestamp is appended)."""
    if batch.headers is None:
        batch.headers = [None] * len(batch.stamps)
    batch.headers.append(headers)


class ProducerBatch(BatchState):
    """Records bound for one partition, sent as one record batch."""

    __slots__ = (
        "attempts",
        "base_sequence",
        "built",
        "bulk_future",
        "closed",
        "created_ms",
        "deadline_ms",
        "headers",
        "keys",
        "last_error",
        "producer_epoch",
        "producer_id",
        "record_count",
        "retry_at_ms",
        "size_bytes",
        "stamps",
        "timestamp_ms",
        "tp",
        "values",
    )

    def __init__(
        self, tp: TopicPartition, now_ms: int, delivery_timeout_ms: int,
        loop: asyncio.AbstractEventLoop | None = None, lock: Any = None,
    ) -> None:  # fmt: skip
        self.init_state(loop, lock if lock is not None else threading.Lock())
        self.tp = tp
        # The records, as columns: appending to four lists keeps no per-record tuple alive
        # (fewer objects for the cyclic GC to track and walk); `payload` hands the columns to
        # the batch builder as they are.
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        # None until a record of the batch has headers (most never do: one append less each)
        self.headers: list[list[tuple[str, bytes | None]] | None] | None = None
        self.stamps: list[int] = []  # timestamps, ms (kept after the build: for metadata)
        self.built: bytes | None = None
        self.bulk_future: Any = None  # a future of BatchMetadata, for append_built batches
        self.record_count = 0
        self.size_bytes = 0
        self.timestamp_ms = 0
        self.created_ms = now_ms
        self.deadline_ms = now_ms + delivery_timeout_ms
        self.retry_at_ms = 0
        self.attempts = 0
        self.last_error: str | None = None  # why the last attempt failed (the expiry message)
        self.closed = False
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1
        self.base_sequence = -1

    def payload(self, codec: int, transactional: bool = False) -> bytes:
        """The record batch bytes; built once and reused on every retry."""
        if self.built is None:
            self.built = build_columns(
                self.keys, self.values, self.headers, self.stamps, codec=codec,
                producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                base_sequence=self.base_sequence, transactional=transactional,
            )  # fmt: skip
            self.keys, self.values, self.headers = [], [], None  # in `built` now
        return self.built

    def complete(self, base_offset: int, log_append_time_ms: int) -> None:
        """Acknowledged: every record's future settles at once (see client/record_future.py)."""
        if self.bulk_future is not None:
            if not self.bulk_future.done():
                topic, partition = self.tp
                ts = log_append_time_ms if log_append_time_ms >= 0 else self.timestamp_ms
                done = BatchMetadata(topic, partition, base_offset, self.record_count, ts)
                self.bulk_future.set_result(done)
            return
        self.resolve(SUCCEEDED, base_offset, log_append_time_ms, None)

    def fail(self, error: OdradekError) -> None:
        if self.bulk_future is not None:
            if not self.bulk_future.done():
                self.bulk_future.set_exception(copy.copy(error))  # its record_errors too
            return
        self.resolve(FAILED, -1, -1, error)


def failed_batch(tp: TopicPartition, error: OdradekError, loop: Any = None) -> ProducerBatch:
    """A batch that never held a record, failed: for a future of a send refused up front."""
    batch = ProducerBatch(tp, 0, 0, loop)
    batch.stamps.append(-1)
    batch.fail(error)
    return batch


@dataclass(slots=True)
class ReadyResult:
    nodes: set[int] = field(default_factory=set)
    next_check_ms: int | None = None  # ms until some batch may become ready; None: no batches
    unknown_leaders: set[TopicPartition] = field(default_factory=set)
    txn_new: set[TopicPartition] = field(default_factory=set)  # not yet in the transaction


LeaderOf = Callable[[TopicPartition], int]


class RecordAccumulator:
    def __init__(
        self,
        *,
        batch_size: int = 16384,
        buffer_memory: int = 32 * 1024 * 1024,
        linger_ms: int = 0,
        delivery_timeout_ms: int = 120_000,
        max_in_flight_per_partition: int = 5,
        codec: int = CODEC_NONE,
        producer_id: int = NO_PRODUCER_ID,
    ) -> None:
        self.batch_size = batch_size
        self.buffer_memory = buffer_memory
        self.linger_ms = linger_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.max_in_flight_per_partition = max_in_flight_per_partition
        self.codec = codec
        self.used_bytes = 0
        self.incomplete = 0  # batches appended and not yet done
        self.flushing = 0
        self.closing = False
        self.memory_waiters = 0
        self.closed_batches = 0  # batches closed so far (a caller sees whether one just was)
        self.left_behind = False  # the last drain left batches that may be ready at once
        self.lock = threading.Lock()  # held by the accumulator's users around every call
        self.room = threading.Condition(self.lock)  # notified when memory frees up
        self.blocked_appenders = 0  # threads waiting on `room` (the sync Producer's callers)
        self.loop: asyncio.AbstractEventLoop | None = None  # for the batches' RecordFutures
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._open: dict[TopicPartition, ProducerBatch] = {}  # the batch taking records
        self._in_flight: dict[TopicPartition, int] = {}
        self.producer_id = producer_id  # >= 0: idempotent (see the module docstring)
        self.producer_epoch = 0
        self.awaiting_producer_id = False  # set by the producer: drain no unnumbered batch
        self._next_sequence: dict[TopicPartition, int] = {}
        self._numbered_by: dict[TopicPartition, tuple[int, int]] = {}  # (id, epoch) per partition
        self._unsettled: dict[TopicPartition, list[ProducerBatch]] = {}  # in sequence order
        self._lost: dict[TopicPartition, int] = {}  # first sequence lost at _numbered_by[tp]
        # transactional: the partitions added to the open transaction (the producer's
        # TransactionManager.added); a partition not in it drains nothing (None: not
        # transactional)
        self.txn_partitions: set[TopicPartition] | None = None

    # ----- appending --------------------------------------------------------------------------

    def has_room(self, size: int) -> bool:
        return self.used_bytes + size <= self.buffer_memory or self.used_bytes == 0

    def append(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | None,
        timestamp_ms: int,
        size: int,
        fut_cls: type = RecordFuture,
    ) -> Any:
        """Add one record (of `estimate_size` bytes) to its partition's open batch.

        Returns the record's future (`fut_cls`); `future.batch.closed` when that batch is now
        full (time to send it, and to move the sticky partition). None: nothing was added,
        call `append_new`. The split keeps the common case free of clock reads.
        """
        batch = self._open.get(tp)
        if batch is None or batch.size_bytes + size > self.batch_size:
            return None
        future = self.join(batch, key, value, headers, timestamp_ms, size, fut_cls)
        if batch.size_bytes >= self.batch_size:
            self.close_open(tp)
        return future

    def join(
        self,
        batch: ProducerBatch,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | None,
        timestamp_ms: int,
        size: int,
        fut_cls: type,
    ) -> Any:
        """Add the record to `batch` (open, with room: the caller checked); its future."""
        stamps = batch.stamps
        future: Any = _new(fut_cls)
        future.batch = batch
        future.index = len(stamps)
        batch.keys.append(key)
        batch.values.append(value)
        if headers is not None or batch.headers is not None:
            _add_headers(batch, headers)
        stamps.append(timestamp_ms)
        batch.size_bytes += size
        self.used_bytes += size
        return future

    def append_new(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | None,
        timestamp_ms: int,
        size: int,
        now_ms: int,
        fut_cls: type = RecordFuture,
    ) -> Any:
        """Close the open batch of `tp` (if any), open a new one and add the record to it.

        Returns the record's future; the sender should re-plan its wait (a new batch).
        """
        self.close_open(tp)
        batch = ProducerBatch(tp, now_ms, self.delivery_timeout_ms, self.loop, self.lock)
        batch.timestamp_ms = timestamp_ms
        self._queue(tp).append(batch)
        self._open[tp] = batch
        self.incomplete += 1
        future: Any = self.append(tp, key, value, headers, timestamp_ms, size, fut_cls)
        if future is None:  # a record as big as a batch: alone in it
            future = _new(fut_cls)
            future.batch, future.index = batch, 0
            batch.keys.append(key)
            batch.values.append(value)
            if headers is not None:
                _add_headers(batch, headers)
            batch.stamps.append(timestamp_ms)
            batch.size_bytes += size
            self.used_bytes += size
            self.close_open(tp)
        return future

    def close_open(self, tp: TopicPartition) -> bool:
        batch = self._open.pop(tp, None)
        if batch is None:
            return False
        batch.closed = True
        self.closed_batches += 1
        return True

    def _queue(self, tp: TopicPartition) -> deque[ProducerBatch]:
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        return queue

    def append_built(
        self, tp: TopicPartition, payload: bytes, count: int, timestamp_ms: int, future: Any,
        now_ms: int,
    ) -> None:  # fmt: skip
        """Queue a batch built by the caller (the bulk path); it is sent as it is."""
        batch = ProducerBatch(tp, now_ms, self.delivery_timeout_ms, self.loop, self.lock)
        batch.built = payload
        batch.bulk_future = future
        batch.record_count = count
        batch.size_bytes = len(payload)
        batch.timestamp_ms = timestamp_ms
        batch.closed = True
        self.close_open(tp)
        self._queue(tp).append(batch)
        self.incomplete += 1
        self.used_bytes += batch.size_bytes

    # ----- sending ----------------------------------------------------------------------------

    def ready(self, leader_of: LeaderOf, now_ms: int) -> ReadyResult:
        result = ReadyResult()
        hurry = self.flushing > 0 or self.closing or self.memory_waiters > 0
        txn = self.txn_partitions
        for tp, queue in self._queues.items():
            if not queue or self._in_flight.get(tp, 0) >= self.max_in_flight_per_partition:
                continue
            if txn is not None and tp not in txn:
                result.txn_new.add(tp)  # AddPartitionsToTxn first (the sender's)
                continue
            head = queue[0]
            leader = leader_of(tp)
            if leader == NO_LEADER:
                result.unknown_leaders.add(tp)
                continue
            if head.base_sequence < 0 and self.holds_new(tp):
                wait = max(1, head.deadline_ms - now_ms)  # to expire it on time
            elif head.retry_at_ms > now_ms:
                wait = head.retry_at_ms - now_ms
            elif hurry or head.closed or len(queue) > 1:
                wait = 0
            else:
                wait = max(0, head.created_ms + self.linger_ms - now_ms)
            if wait == 0:
                result.nodes.add(leader)
            elif result.next_check_ms is None or wait < result.next_check_ms:
                result.next_check_ms = wait
        return result

    def drain(
        self, nodes: set[int], leader_of: LeaderOf, max_request_bytes: int, now_ms: int
    ) -> dict[int, list[ProducerBatch]]:
        """Take, per ready node, one batch from each partition it leads (within the limits).
        `left_behind` says whether it left batches that may be sendable at once: a partition's
        next batch, or one that did not fit its request (else nothing is, until an append, an
        answer or a timer: the sender need not look again)."""
        out: dict[int, list[ProducerBatch]] = {}
        request_bytes: dict[int, int] = {}
        self.left_behind = False
        txn = self.txn_partitions
        for tp, queue in self._queues.items():
            if not queue or self._in_flight.get(tp, 0) >= self.max_in_flight_per_partition:
                continue
            if txn is not None and tp not in txn:
                continue
            leader = leader_of(tp)
            head = queue[0]
            if leader not in nodes or head.retry_at_ms > now_ms:
                continue
            if head.base_sequence < 0 and self.holds_new(tp):
                continue
            size = head.size_bytes
            used = request_bytes.get(leader, 0)
            if used and used + size > max_request_bytes:
                self.left_behind = True
                continue
            batch = queue.popleft()
            if not batch.closed:
                self.close_open(tp)
            batch.attempts += 1
            if self.producer_id >= 0 and batch.base_sequence < 0:
                self._assign_sequence(batch)
            in_flight = self._in_flight[tp] = self._in_flight.get(tp, 0) + 1
            if queue and in_flight < self.max_in_flight_per_partition:
                self.left_behind = True  # (at the bound, its answer wakes the sender)
            request_bytes[leader] = used + size
            out.setdefault(leader, []).append(batch)
        return out

    def holds_new(self, tp: TopicPartition) -> bool:
        """Whether an unnumbered batch of `tp` must wait: no id yet, or (idempotent) the
        partition lost a sequence at its epoch, or it still has batches of an older epoch."""
        if self.awaiting_producer_id:
            return True
        if self.producer_id < 0:
            return False  # not idempotent
        if self._numbered_by.get(tp) == (self.producer_id, self.producer_epoch):
            return tp in self._lost
        return tp in self._unsettled

    def _assign_sequence(self, batch: ProducerBatch) -> None:
        tp = batch.tp
        current = (self.producer_id, self.producer_epoch)
        if self._numbered_by.get(tp) != current:  # the partition's first batch at this epoch
            assert tp not in self._unsettled, "a partition numbers under one epoch at a time"
            self._numbered_by[tp] = current
            self._next_sequence[tp] = 0
            self._lost.pop(tp, None)
        seq = self._next_sequence[tp]
        count = batch.record_count if batch.bulk_future is not None else len(batch.stamps)
        self._next_sequence[tp] = (seq + count) % SEQUENCE_MODULUS
        batch.producer_id, batch.producer_epoch = current
        batch.base_sequence = seq
        self._unsettled.setdefault(tp, []).append(batch)
        if batch.built is not None:  # a bulk batch, built without the producer fields
            batch.built = with_producer(batch.built, self.producer_id, self.producer_epoch, seq,
                                        self.txn_partitions is not None)  # fmt: skip

    def reset_producer(self, producer_id: int, producer_epoch: int = 0) -> None:
        """Continue under this id and epoch (from InitProducerId). Each partition moves to it,
        from sequence 0, with its next new batch once its older batches have settled; batches
        that already have a sequence keep their id, epoch and sequence."""
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch

    def sequence_lost(self, batch: ProducerBatch) -> None:
        """A numbered batch failed for good (after `done_in_flight`, or expired): if it was of
        its partition's epoch, the partition has a gap there (see the module docstring)."""
        tp = batch.tp
        if batch.base_sequence < 0 or self._numbered_by.get(tp) != (
            batch.producer_id, batch.producer_epoch,
        ):  # fmt: skip
            return
        lost = self._lost.get(tp)
        if lost is None or batch.base_sequence < lost:
            self._lost[tp] = batch.base_sequence

    def epoch_bump_due(self) -> bool:
        """A partition lost a sequence at the current epoch and has no unsettled batch left."""
        current = (self.producer_id, self.producer_epoch)
        return any(
            self._numbered_by.get(tp) == current and tp not in self._unsettled for tp in self._lost
        )

    def gap_before(self, batch: ProducerBatch) -> int | None:
        """The lost sequence that keeps `batch` (refused as out of order) out for good: one
        before it at its epoch, with no unsettled batch before it left to fill the gap."""
        tp, seq = batch.tp, batch.base_sequence
        lost = self._lost.get(tp)
        if lost is None or lost >= seq:
            return None
        if self._numbered_by.get(tp) != (batch.producer_id, batch.producer_epoch):
            return None
        if any(b.base_sequence < seq for b in self._unsettled.get(tp, ()) if b is not batch):
            return None
        return lost

    def _settle(self, batch: ProducerBatch) -> None:
        unsettled = self._unsettled.get(batch.tp)
        if unsettled is None or batch.base_sequence < 0:
            return
        for i, b in enumerate(unsettled):
            if b is batch:
                del unsettled[i]
                break
        if not unsettled:
            del self._unsettled[batch.tp]

    # ----- outcomes ---------------------------------------------------------------------------

    def requeue(self, batch: ProducerBatch, retry_at_ms: int) -> None:
        """A retriable failure: back to the front of its queue, sent again after the backoff.

        A batch with a sequence goes before the first queued batch with a later sequence or
        none, so an idempotent producer's retries go out in sequence order (the numbered
        batches of a queue share one epoch: see the module docstring)."""
        self._release_slot(batch.tp)
        batch.retry_at_ms = retry_at_ms
        queue = self._queues.get(batch.tp)
        if queue is None:
            queue = self._queues[batch.tp] = deque()
        at = 0
        if batch.base_sequence >= 0:
            for at, queued in enumerate(queue):  # noqa: B007 - `at` is used after the loop
                if queued.base_sequence < 0 or queued.base_sequence > batch.base_sequence:
                    break
                assert (queued.producer_id, queued.producer_epoch) == (
                    batch.producer_id, batch.producer_epoch,
                ), "a queue's numbered batches share one epoch"  # fmt: skip
            else:
                at = len(queue)
        queue.insert(at, batch)

    def done_in_flight(self, batch: ProducerBatch) -> None:
        """An in-flight batch finished for good (acknowledged or failed): it has settled."""
        self._release_slot(batch.tp)
        self._settle(batch)
        self._forget(batch)

    def expire(self, now_ms: int) -> list[ProducerBatch]:
        """Remove and return queued (not in-flight) batches past their delivery deadline."""
        expired: list[ProducerBatch] = []
        for tp, queue in self._queues.items():
            while queue and queue[0].deadline_ms <= now_ms:
                expired.append(queue.popleft())
                if not expired[-1].closed:
                    self.close_open(tp)
        for batch in expired:
            self._settle(batch)
            self._forget(batch)
        return expired

    def abort_all(self) -> list[ProducerBatch]:
        """Remove and return every queued batch (closing without waiting)."""
        batches = [b for q in self._queues.values() for b in q]
        self._queues.clear()
        for batch in self._open.values():
            batch.closed = True  # nothing joins it any more (the producer's append_value looks)
        self._open.clear()
        for batch in batches:
            self._settle(batch)
            self._forget(batch)
        return batches

    def may_send_after(self, tp: TopicPartition) -> bool:
        """Whether `tp`'s batch settling may let the sender send something: `tp` has batches
        queued (behind its in-flight limit, or held until it settles), or an epoch bump may be
        due. Else the sender need not look until the next append."""
        return bool(self._queues.get(tp)) or bool(self._lost) or self.awaiting_producer_id

    def queued_batches(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def unfinished(self) -> set[TopicPartition]:
        """The partitions with batches queued or in flight (not yet acknowledged or failed)."""
        return {tp for tp, q in self._queues.items() if q} | set(self._in_flight)

    def _release_slot(self, tp: TopicPartition) -> None:
        n = self._in_flight.get(tp, 0) - 1
        if n > 0:
            self._in_flight[tp] = n
        else:
            self._in_flight.pop(tp, None)

    def _forget(self, batch: ProducerBatch) -> None:
        self.used_bytes -= batch.size_bytes
        self.incomplete -= 1
        assert self.used_bytes >= 0 and self.incomplete >= 0
        if self.blocked_appenders:
            self.room.notify_all()
