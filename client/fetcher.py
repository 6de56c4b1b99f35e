"""The consumer's fetch path (seed 001), in small steps.

1. `plan()` groups the fetchable partitions by leader node: assigned, not paused, with a
   position, not already in a fetch on the wire, and fewer than two responses buffered. A
   partition with one buffered response is fetched ahead from where it ends (prefetch, as
   Kafka's fetcher does), so the broker works while the client decodes and the user processes.
   At most one fetch is in flight per node.
2. `send_fetches()` sends one FetchRequest per node carrying all its planned partitions, each
   from its current position. On an open connection it is written at once and its answer is
   handled inside the connection's `buffer_updated` that brings it (an `InlineAnswer`: no task
   turn between the answer and the waiting `poll`); else a task opens the connection first.
   The partition order rotates between requests so a partition near the end of a full
   response is not starved.
3. On the answer each partition is handled alone (`_on_partition`): if the position moved
   meanwhile (a seek) or the partition was paused or unassigned, the data is dropped; records
   are decoded (those below the fetch offset inside the first batch skipped) and buffered as a
   `CompletedFetch`; OFFSET_OUT_OF_RANGE asks for a position reset; an error that means stale
   metadata (NOT_LEADER_FOR_PARTITION, ...) refreshes the metadata, so the next fetch goes to
   the new leader; other errors are raised from the next `poll`. When an answer brought data,
   the next fetch to that node is sent at once for the partitions it left behind their high
   watermark (more to read now), before anything is decoded; batches are CRC checked on
   arrival and their records decoded when first handed out. A caught-up partition's next fetch
   (a long poll) waits for the next `poll`: writing it costs a lone record's latency ~0.1 ms
   (a syscall that wakes the broker) before `poll` returns, and buys nothing, since the
   broker has nothing more to send yet. Fetches are written with `record_views`: a large
   answer's records are memoryviews of its frame (protocol/msgview.py), never copied out of
   it, and the frame's buffer is read into again once they are let go (protocol/framing.py).
4. `drain(max_records)` hands out buffered records, advancing positions as records are handed
   out (never as they arrive); what is left over stays buffered for the next poll. Records are
   made by the C record walker (protocol/columns.py), ConsumerRecord tuples built in C.

Compacted partitions need nothing of their own here. Offsets skip where the log cleaner took
records out of a batch; a batch may hold none (kept for its producer's state); whole batches
may be gone (a gap); a fetch from an offset that is gone answers with the next batch. Once its
records are handed out, a fetch moves the position to its last batch's end (base offset +
last_offset_delta + 1, whatever records are left in it), so empty batches and gaps are passed
and nothing is reported lost (as Kafka's consumer does).

The same engine reads offset ranges for Spark (spark_connector/fetch.py): `stop_at(tp, until)`
keeps fetches below the range's end, `drain_segments(tp, until)` hands over the buffered
batches as segments the C walker turns into Arrow columns (no record objects), and
`empty_answers` (with client/offset_lookup.py's `log_bounds`) lets the range reader tell a
truncated log from a slow one.
Retries, leader changes and OFFSET_OUT_OF_RANGE (raised with auto_offset_reset="none") are
handled here for both.

Offsets for partitions without a position, and a partition's log bounds, are looked up with
ListOffsets apart (client/offset_lookup.py). A response's bytes become records in
client/fetched.py (`scan_fetched` on arrival, `CompletedFetch.take` when handed out).

Isolation (KIP-98): fetches and ListOffsets carry the consumer's isolation level. With
read_committed the broker answers up to the last stable offset (LATEST is the LSO too) and
lists the aborted transactions of the range; their batches are dropped on arrival by header
(client/read_committed.py), the position moving past them. Control batches (transaction
markers) are never handed out, at either level (protocol/columns.py skips them).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from client.cluster import Cluster
from client.explain import client_principal, fetch_refusal
from client.fetched import CompletedFetch, scan_fetched
from client.read_committed import drop_aborted
from client.subscription import NONE, SubscriptionState
from client.types import ConsumerRecord, TopicPartition, partition_words
from protocol.api.fetch import (
    CONSUMER_REPLICA_ID,
    READ_UNCOMMITTED,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
)
from protocol.batch import InvalidBatchError
from protocol.columns import Segment, keep_freed_memory, segments
from protocol.errors import (
    NetworkError,
    OdradekError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    for_code,
)
from transport.connection import BrokerConnection, InlineAnswer


@dataclass(frozen=True, slots=True)
class FetchConfig:
    fetch_min_bytes: int = 1
    fetch_max_bytes: int = 50 * 1024 * 1024
    fetch_max_wait_ms: int = 500
    max_partition_fetch_bytes: int = 1024 * 1024
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    check_crcs: bool = True
    isolation_level: int = READ_UNCOMMITTED  # READ_COMMITTED: stop at the last stable offset

    @property
    def fetch_timeout_ms(self) -> int:
        """How long a fetch's answer may take: the request timeout on top of the long poll."""
        return self.request_timeout_ms + self.fetch_max_wait_ms


# a node's fetch: being sent (a task), written (its timeout timer and answer), or backing off
_InFlight = asyncio.Task[None] | asyncio.TimerHandle | tuple[asyncio.TimerHandle, InlineAnswer]


class Fetcher:
    def __init__(self, cluster: Cluster, subscription: SubscriptionState, config: FetchConfig):
        keep_freed_memory()  # process-wide, bounded: see protocol/columns.py
        self._cluster = cluster
        self._subs = subscription
        self._config = config
        self._buffer: dict[TopicPartition, CompletedFetch] = {}  # being handed out
        self._next: dict[TopicPartition, CompletedFetch] = {}  # prefetched, behind _buffer
        # per node: the task sending its fetch, the fetch written (its timer and its answer,
        # which close() settles), or the back-off timer
        self._in_flight: dict[int, _InFlight] = {}
        self._in_flight_tps: set[TopicPartition] = set()
        self._errors: list[Exception] = []
        self._waiters: list[asyncio.Future[None]] = []  # `wait`s, woken as a fetch finishes
        self._rotation = 0
        self._metadata_task: asyncio.Future[Any] | None = None
        self._closed = False
        self._stop: dict[TopicPartition, int] = {}  # range reads: never fetch from here on
        self._empty: dict[TopicPartition, tuple[int, int]] = {}  # (empty answers, log end)

    # ----- planning and sending ---------------------------------------------------------------

    def plan(self, ahead_only: bool = False) -> dict[int, list[tuple[TopicPartition, int]]]:
        """Per leader node with no fetch in flight: (partition, offset) to fetch.

        A partition with buffered data is fetched ahead from where that data ends (prefetch),
        unless a prefetched response is already waiting behind it: at most two responses per
        partition are held. `ahead_only`: only partitions whose last known high watermark is
        above that offset (records to read now, not a long poll).
        """
        hw = self._subs.high_watermark
        meta = self._cluster.metadata
        plan: dict[int, list[tuple[TopicPartition, int]]] = {}
        missing_leader = False
        for tp in self._subs.fetchable():
            if tp in self._next or tp in self._in_flight_tps:
                continue
            leader = meta.leader_for(tp.topic, tp.partition)
            if leader < 0 or leader not in meta.brokers:
                missing_leader = True
                continue
            if leader in self._in_flight:
                continue
            head = self._buffer.get(tp)
            position = head.next_offset if head is not None else self._subs.position(tp)
            assert position is not None  # fetchable() guarantees it
            if ahead_only and position >= hw(tp):
                continue
            if position < self._stop.get(tp, position + 1):
                plan.setdefault(leader, []).append((tp, position))
        if missing_leader:
            self.refresh_metadata()
        return plan

    def send_fetches(self, ahead_only: bool = False) -> None:
        """Send the planned fetches (see `plan`), one per node; none once closed. A fetch is
        written at once on an open connection, and its answer handled inside the
        `buffer_updated` that brings it (`InlineAnswer`: no task, no loop turn between the
        answer and `poll()`); without an open connection (or a free slot) a task sends it."""
        if self._closed:
            return
        for node, parts in self.plan(ahead_only).items():
            self._rotation += 1
            k = self._rotation % len(parts)
            parts = parts[k:] + parts[:k]
            self._in_flight_tps.update(tp for tp, _ in parts)
            conn = self._cluster.open_connection(node)
            try:
                written = conn is not None and self._write_fetch(node, parts, conn)
            except Exception:
                written = False  # the task meets the same failure and handles it
            if not written:
                self._in_flight[node] = asyncio.create_task(self._fetch(node, parts))

    def _write_fetch(
        self, node: int, parts: list[tuple[TopicPartition, int]], conn: BrokerConnection
    ) -> bool:
        """Write one fetch now; False when it would have to wait (no free slot)."""
        answer = conn.send_now(self.build_request(parts), InlineAnswer(), record_views=True)
        if answer is None:
            return False
        timer = asyncio.get_running_loop().call_later(
            self._config.fetch_timeout_ms / 1000, answer.set_exception,
            RequestTimedOutError(f"{conn.address}: no Fetch response in time"),
        )  # fmt: skip
        self._in_flight[node] = (timer, answer)
        answer.add_done_callback(lambda a: self._fetched(node, parts, a, timer))
        return True

    def build_request(self, parts: list[tuple[TopicPartition, int]]) -> FetchRequest:
        by_topic: dict[str, list[FetchPartition]] = {}
        cfg = self._config
        meta = self._cluster.metadata
        for tp, offset in parts:
            # The leader epoch we believe in: a broker with a newer one answers
            # FENCED_LEADER_EPOCH and we refresh metadata (KIP-320), never reading from a
            # deposed leader.
            epoch = meta.leader_epoch_for(tp.topic, tp.partition)
            by_topic.setdefault(tp.topic, []).append(
                FetchPartition(tp.partition, offset, cfg.max_partition_fetch_bytes, epoch)
            )
        topics = [FetchTopic(name, ps) for name, ps in by_topic.items()]
        return FetchRequest(
            CONSUMER_REPLICA_ID, cfg.fetch_max_wait_ms, cfg.fetch_min_bytes, cfg.fetch_max_bytes,
            topics, isolation_level=cfg.isolation_level,
        )  # fmt: skip

    async def _fetch(self, node: int, parts: list[tuple[TopicPartition, int]]) -> None:
        """A fetch that waits to be written: for a connection being opened, or a free slot."""
        answer = InlineAnswer()
        try:
            conn = await self._cluster.connection(node)
            if self._write_fetch(node, parts, conn):
                return
            request = self.build_request(parts)
            answer.set_result(await conn.send(request, self._config.fetch_timeout_ms))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            answer.set_exception(exc)
        self._fetched(node, parts, answer, None)

    def _fetched(
        self, node: int, parts: list[tuple[TopicPartition, int]], answer: InlineAnswer,
        timer: asyncio.TimerHandle | None,
    ) -> None:  # fmt: skip
        """A fetch's answer (or failure). When it brought data, the next fetch to the node goes
        out at once for the partitions still behind their high watermark (prefetch). A
        caught-up partition, or an empty answer, leaves the next fetch to `poll`: no background
        polling. A failure keeps the node's fetches back for retry_backoff_ms. Once closed,
        nothing: close() failed the answer, or it came as close() waited for the tasks."""
        if timer is not None:
            timer.cancel()
        if self._closed:
            return
        try:
            got_data = self._on_response(parts, answer.result())
        except Exception as exc:
            if not isinstance(exc, OdradekError):
                self._errors.append(exc)  # a bug: hand it to the user's next poll, do not spin
            else:
                if not exc.retriable:
                    self._errors.append(exc)
                self.refresh_metadata()
            self._in_flight[node] = asyncio.get_running_loop().call_later(
                self._config.retry_backoff_ms / 1000, self._fetch_ended, node, parts, False
            )  # do not hammer a failing node
            return
        self._fetch_ended(node, parts, got_data)

    def _fetch_ended(
        self, node: int, parts: list[tuple[TopicPartition, int]], got_data: bool
    ) -> None:
        self._in_flight.pop(node, None)
        self._in_flight_tps.difference_update(tp for tp, _ in parts)
        self._wake()
        if got_data and not self._closed:
            self.send_fetches(ahead_only=True)

    def _on_response(self, parts: list[tuple[TopicPartition, int]], resp: FetchResponse) -> bool:
        """Handle each partition's answer; True when any buffered new data."""
        offsets = dict(parts)
        got_data = False
        for topic in resp.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition)
                fetch_offset = offsets.get(tp)
                if fetch_offset is not None:
                    got_data = self._on_partition(tp, fetch_offset, p) or got_data
        return got_data

    def _on_partition(
        self, tp: TopicPartition, fetch_offset: int, p: FetchPartitionResponse
    ) -> bool:
        """Buffer one partition's answer if it is still wanted; True when it held new data."""
        subs = self._subs
        head = self._buffer.get(tp)
        if not subs.is_fetchable(tp):  # checked first: position() raises for unassigned ones
            return False
        expected = head.next_offset if head is not None else subs.position(tp)
        if expected != fetch_offset:
            return False  # paused, unassigned or sought meanwhile: this data is stale
        if p.error_code != 0:
            if head is None:  # a prefetch's error waits: the fetch after the head meets it
                self._on_partition_error(tp, fetch_offset, for_code(p.error_code))
            return False
        subs.set_high_watermark(tp, p.high_watermark)
        if not p.records:
            if head is None:
                self._empty[tp] = (self._empty.get(tp, (0, 0))[0] + 1, p.log_end_offset)
            return False
        self._empty.pop(tp, None)
        try:
            batches, next_offset = scan_fetched(p.records, fetch_offset, self._config.check_crcs)
            if p.aborted_transactions:  # read_committed: drop them, the position moves past
                aborted = [(a.producer_id, a.first_offset) for a in p.aborted_transactions]
                batches = drop_aborted(p.records, batches, aborted)
        except OdradekError as exc:
            if head is None:
                self._errors.append(exc)
            return False
        if next_offset > fetch_offset:
            fetched = CompletedFetch(tp, p.records, batches, fetch_offset, next_offset)
            if head is None:
                self._buffer[tp] = fetched
            else:
                self._next[tp] = fetched
            return True
        return False

    def _on_partition_error(
        self, tp: TopicPartition, offset: int, error: type[OdradekError]
    ) -> None:
        if error is OffsetOutOfRangeError:
            if self._subs.auto_offset_reset == NONE:
                self._errors.append(
                    error(f"{partition_words(tp)}: offset {offset} is out of range")
                )
            else:
                self._subs.request_reset(tp)
        elif error.invalid_metadata:
            self.refresh_metadata()
        elif not error.retriable:
            who = client_principal(self._cluster.security)
            self._errors.append(error(fetch_refusal(error, who, tp, f"fetch at offset {offset}")))

    def refresh_metadata(self) -> None:
        if self._metadata_task is None or self._metadata_task.done():
            self._metadata_task = asyncio.ensure_future(self._cluster.request_update())
            self._metadata_task.add_done_callback(_retrieve_and_wake(self._wake))

    # ----- handing out ------------------------------------------------------------------------

    def drain(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Up to `max_records` buffered records; positions advance past what is returned."""
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        left = max_records
        for tp in list(self._buffer):
            if left <= 0:
                break
            fetch: CompletedFetch | None = self._buffer.pop(tp)
            while fetch is not None and left > 0:
                if not self._subs.is_fetchable(tp) or self._subs.position(tp) != fetch.position:
                    self._next.pop(tp, None)  # paused, unassigned or sought since: drop it
                    break
                try:
                    chunk = fetch.take(left)
                except OdradekError as exc:  # records that do not decode: the next poll raises
                    self._errors.append(exc)
                    self._next.pop(tp, None)
                    break
                if chunk:
                    out[tp] = out[tp] + chunk if tp in out else chunk
                    left -= len(chunk)
                if not fetch.exhausted:
                    self._subs.advance(tp, fetch.position)
                    self._buffer[tp] = fetch  # the rest waits at the back of the line
                    break
                self._subs.advance(tp, max(fetch.next_offset, fetch.position))
                fetch = self._next.pop(tp, None)  # the prefetched response moves up
                if fetch is not None and left <= 0:
                    self._buffer[tp] = fetch
        return out

    def drain_segments(self, tp: TopicPartition, until: int) -> tuple[list[Segment], int]:
        """The range reader's drain (Spark): the buffered records of `tp` with offsets below
        `until`, as segments for the C record walker (protocol/columns.py: Arrow columns, no
        record objects), and the position after them, where `tp`'s position moves. Nothing
        buffered (or stale data): ([], the position). Raises InvalidBatchError."""
        position = self._subs.position(tp)
        assert position is not None, "drain_segments needs a position"
        fetch = self._buffer.pop(tp, None)
        if fetch is None:
            return [], position
        if fetch.position != position or fetch.records is not None:
            self._next.pop(tp, None)  # sought meanwhile (or handed out as records): drop it
            return [], position
        try:
            segs, next_offset = segments(fetch.data, fetch.batches, position, until)
        except InvalidBatchError as exc:
            self._next.pop(tp, None)
            raise type(exc)(f"{partition_words(tp)}: {exc.message}") from None
        # read_committed: aborted batches (and the markers) were dropped on arrival, and may
        # end the answer; the position still moves past them
        next_offset = max(next_offset, min(fetch.next_offset, until))
        self._subs.advance(tp, next_offset)
        following = self._next.pop(tp, None)
        if following is not None and following.position == next_offset:
            self._buffer[tp] = following
        return segs, next_offset

    def stop_at(self, tp: TopicPartition, offset: int) -> None:
        """Never fetch `tp` at or past `offset` (a range read ends there)."""
        self._stop[tp] = offset

    def empty_answers(self, tp: TopicPartition) -> tuple[int, int]:
        """(answers without records in a row, the log end offset the last one gave)."""
        return self._empty.get(tp, (0, 0))

    def raise_errors(self) -> None:
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def buffered(self) -> set[TopicPartition]:
        """Partitions with fetched records not yet handed out."""
        return set(self._buffer) | set(self._next)

    def clear(self, tps: set[TopicPartition] | None = None) -> None:
        """Forget buffered data (of `tps`, or all)."""
        for buffer in (self._buffer, self._next, self._empty):
            for tp in list(buffer):
                if tps is None or tp in tps:
                    del buffer[tp]

    async def wait(self, timeout_s: float) -> None:
        """Until some fetch finishes or metadata arrives, at most `timeout_s`. (A future and a
        timer: asyncio.Event under asyncio.timeout took ~4 us more of a lone record's way.)"""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        timer = loop.call_later(timeout_s, _settle, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _settle(waiter)

    async def close(self) -> None:
        """Stop fetching and let go of everything: tasks and timers are cancelled, and a fetch
        written has its answer failed, so the connection (shared: it may outlive this fetcher,
        as the Spark worker's Cluster does its range readers) gets its in-flight slot back at
        once and drops the late answer, and nothing on it keeps this fetcher alive. Buffered
        data is dropped."""
        self._closed = True  # no prefetch from here on; `_fetched` ignores what comes
        waiting = list(self._in_flight.values())
        for handle in waiting:
            if isinstance(handle, tuple):
                timer, answer = handle
                timer.cancel()
                answer.set_exception(NetworkError("the fetcher closed; answer not waited for"))
            else:
                handle.cancel()
        if self._metadata_task is not None:
            self._metadata_task.cancel()
        tasks = [h for h in waiting if isinstance(h, asyncio.Task)]
        await asyncio.gather(*tasks, return_exceptions=True)
        self._in_flight.clear()
        self._in_flight_tps.clear()
        self.clear()


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _retrieve_and_wake(wake: Any) -> Any:
    def done(future: asyncio.Future[Any]) -> None:
        if not future.cancelled():
            future.exception()
        wake()

    return done
