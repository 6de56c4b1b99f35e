"""The producer's sender: one task that drains the accumulator and sends Produce requests.

It loops: expire batches past `delivery_timeout_ms`, get a producer id if one is due
(client/producer_ids.py), ask the accumulator (client/accumulator.py) which leader nodes are
ready, drain one batch per partition for each, and send one ProduceRequest per node as its own
task (requests to a node are pipelined on one connection, written in drain order). It sleeps
until `wake()` (an append opened or filled a batch, an answer freed a partition) or until the
accumulator's next deadline. Per partition:
- no error: every record's future gets its offset (base offset + index);
- a retriable error (NOT_LEADER_FOR_PARTITION, a lost connection, a timeout, ...): the batch
  goes back to the front of its queue after `retry_backoff_ms`, and an `invalid_metadata` error
  refreshes the metadata first, so the retry goes to the new leader;
- anything else, or `retries` used up, or `delivery_timeout_ms` passed: the futures fail (a
  batch refused for some of its records: each record named by its future's `index` with its
  own error, the others with InvalidDifferentRecordError, client/record_failures.py).
With acks=0 the request gets no answer and offsets are -1. The accumulator's `max_in_flight_
per_partition` bounds the batches in flight per partition (at most 5 when idempotent: the
leader stores a retried batch only once and answers its first copy's offset,
broker/producer_state.py). Nothing new is drained while a producer id is awaited (retries are).

An expired batch's futures fail with RequestTimedOutError "delivery timed out after N ms:
<why>": the cause, not only a code (client/explain.py). A partition without a leader says why
from the metadata ("partition chaos-0 has no leader: its replicas 1,2 are down"), followed by
the last error its attempts met; else the last error (with the broker it came from, and the
broker's own message: "acks=all refused: chaos-0: ISR [3] is below min.insync.replicas 2");
else, never sent, what held it back (no producer id, earlier batches settling). `failing`
keeps each partition's last error for `AsyncProducer.waiting()`.

Transactions (client/transactions.py): a partition's first batch in a transaction waits in the
accumulator until the sender has added the partition (AddPartitionsToTxn, one request at a
time); batches carry the TRANSACTIONAL_BIT and requests name the transactional id (KIP-890). A
batch failing for good moves the transaction (abortable, or fenced) and `on_unusable` tells the
producer to refuse sends at once unless the transaction is still open.

The sender knows its collaborators only: the accumulator, the cluster, the clock, the producer
ids, the transaction manager and the settings it uses; `progress` is set whenever a batch
completes (the producer's flush and memory waits watch it). A bug in the loop is kept in
`fatal` and `on_unusable` is called: every later call of the producer reports it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from client.accumulator import ProducerBatch, RecordAccumulator
from client.cluster import Cluster, ClusterMetadata
from client.explain import leaderless_reason, produce_refusal
from client.producer_ids import ProducerIds
from client.transactions import TransactionManager, TxnState
from client.types import TopicPartition
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceResponse, ProduceTopic
from protocol.clock import Clock
from protocol.errors import (
    NetworkError,
    OdradekError,
    OutOfOrderSequenceNumberError,
    RequestTimedOutError,
    UnknownServerError,
)
from protocol.record_errors import produce_error
from protocol.schema import Records
from transport.connection import BrokerConnection


class Sender:
    """The sender loop of one producer and its requests (see the module docstring)."""

    def __init__(
        self, acc: RecordAccumulator, cluster: Cluster, clock: Clock, ids: ProducerIds,
        txn: TransactionManager | None, *, acks: int, codec: int, max_request_size: int,
        request_timeout_ms: int, retries: int, retry_backoff_ms: int,
        on_unusable: Callable[[], None],
    ) -> None:  # fmt: skip
        self.acc = acc
        self.cluster = cluster
        self.clock = clock
        self.ids = ids
        self.txn = txn
        self.acks = acks
        self.codec = codec
        self.max_request_size = max_request_size
        self.request_timeout_ms = request_timeout_ms
        self.retries = retries
        self.retry_backoff_ms = retry_backoff_ms
        self.on_unusable = on_unusable  # sends must check the producer's state again
        self.wake_event = asyncio.Event()
        self.progress = asyncio.Event()  # set whenever a batch completes (memory, flush)
        self.failing: dict[TopicPartition, str] = {}  # the last error of a partition's retries
        self.fatal: BaseException | None = None
        self.task: asyncio.Task[None] | None = None
        self.add_task: asyncio.Task[None] | None = None  # AddPartitionsToTxn under way
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # the producer's
        self._wake_scheduled = False  # a threadsafe wake is on its way to the loop
        self._requests: set[asyncio.Task[None]] = set()
        # per node, resolved once its latest produce request is written (or given up)
        self._written: dict[int, asyncio.Future[None]] = {}

    # ----- life cycle and the hooks of the producer and its ids -------------------------------

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name="odradek-producer-sender")

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def wake(self) -> None:
        self.wake_event.set()

    def wake_threadsafe(self) -> None:
        """Wake the sender from another thread: one call_soon_threadsafe at a time."""
        if not self._wake_scheduled:
            self._wake_scheduled = True
            self.loop.call_soon_threadsafe(self._wake_now)

    def _wake_now(self) -> None:
        self._wake_scheduled = False
        self.wake_event.set()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(coro)
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)
        return task

    def fail_queued(self, error: OdradekError) -> None:
        with self.acc.lock:
            aborted = self.acc.abort_all()
        for batch in aborted:
            batch.fail(error)
        self.progress.set()

    async def shutdown(self) -> None:
        """Fail what is queued, stop the loop and the requests a flush timeout left behind."""
        with self.acc.lock:
            aborted = self.acc.abort_all()
        for batch in aborted:
            batch.fail(RequestTimedOutError("the producer closed before the batch was sent"))
        if self.task is not None:
            self.task.cancel()
        for task in self._requests:
            task.cancel()  # only those a flush timeout left behind
        for task in [*self._requests, *([self.task] if self.task else [])]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # ----- the loop ---------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                self.wake_event.clear()
                delay_ms = self._send_ready()
                if delay_ms is None:
                    await self.wake_event.wait()
                elif delay_ms > 0:
                    try:
                        async with asyncio.timeout(delay_ms / 1000):
                            await self.wake_event.wait()
                    except TimeoutError:
                        pass
                else:
                    await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a bug: make it visible to every caller
            self.fatal = exc
            self.on_unusable()
            self.progress.set()
            raise

    def _send_ready(self) -> int | None:
        """One pass: expire, ask for an id if due, drain, send. Returns ms until the next pass
        is needed."""
        now_ms = self.clock.monotonic_ms()
        acc = self.acc
        with acc.lock:  # the sync Producer appends from its callers' threads
            expired = acc.expire(now_ms)
            for batch in expired:
                acc.sequence_lost(batch)
            failures = [RequestTimedOutError(self._expiry_message(b)) for b in expired]
        for batch, failure in zip(expired, failures, strict=True):
            batch.fail(failure)
            self.progress.set()
            if self.txn is not None:
                self._txn_failed(failure)
        pid_delay = None
        meta = self.cluster.metadata
        leader_of = self._leader_of(meta)
        with acc.lock:
            if self.ids.due():
                pid_delay = self.ids.request(now_ms, self)
            ready = acc.ready(leader_of, now_ms)
            drained = acc.drain(ready.nodes, leader_of, self.max_request_size, now_ms)
        if ready.txn_new:
            self._add_partitions(ready.txn_new)
        delay = _sooner(ready.next_check_ms, pid_delay)
        if ready.unknown_leaders or self.cluster.metadata_is_stale():
            self._refresh_metadata()
            delay = _sooner(delay, self.retry_backoff_ms)
        for node, batches in drained.items():
            before, written = self._written.get(node), self.loop.create_future()
            self._written[node] = written
            sent = self._write_now(node, batches, before)
            if sent is not None:
                written.set_result(None)
            task = asyncio.create_task(self._produce(node, batches, before, written, sent))
            self._requests.add(task)
            task.add_done_callback(self._requests.discard)
        return 0 if drained and acc.left_behind else delay  # 0: more is sendable right away

    def _expiry_message(self, batch: ProducerBatch) -> str:
        """Why a batch missed its delivery timeout: the partition has no leader (the cause, said
        from the metadata, with the last error met as the symptom), else its last error, else
        what held it back."""
        tp = batch.tp
        why = leaderless_reason(self.cluster.metadata, tp.topic, tp.partition)
        last = batch.last_error or self.failing.get(tp)
        if why is not None:
            why += f" (last error: {last})" if last else ""
        elif batch.last_error is not None:
            why = batch.last_error
        else:
            why = self._held_back(batch)
        return f"delivery timed out after {self.acc.delivery_timeout_ms} ms: {why}"

    def _held_back(self, batch: ProducerBatch) -> str:
        """Why a batch that was never sent, to a partition with a leader, stayed queued."""
        tp = batch.tp
        if self.acc.awaiting_producer_id:
            why = f"no producer id yet (InitProducerId: {self.ids.error or 'under way'})"
        elif batch.base_sequence < 0 and self.acc.holds_new(tp):
            why = f"{_name(tp)}'s earlier batches were settling before an epoch bump"
        else:
            why = f"not sent, behind {_name(tp)}'s earlier batches"
        if tp in self.failing:
            why += f" (whose last error: {self.failing[tp]})"
        return why

    @staticmethod
    def _leader_of(meta: ClusterMetadata) -> Any:
        parts = meta.partitions

        def leader_of(tp: TopicPartition) -> int:
            infos = parts.get(tp[0])
            if infos is None or tp[1] >= len(infos):
                return -1
            leader = infos[tp[1]].leader
            return leader if leader in meta.brokers else -1

        return leader_of

    def _refresh_metadata(self) -> None:
        task = asyncio.ensure_future(self.cluster.request_update())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        task.add_done_callback(lambda _t: self.wake_event.set())

    # ----- produce requests -------------------------------------------------------------------

    def _write_now(
        self, node: int, batches: list[ProducerBatch], before: asyncio.Future[None] | None
    ) -> tuple[BrokerConnection, asyncio.Future[Any]] | None:
        """Write a drained request in the sender's pass when it is alone on its way (nothing
        in flight on the connection, which is open, and the request drained before it is
        written): the connection and its answer's future, else None and `_produce` sends it.
        This saves the produce task's first loop turn and its awaits on the way to the socket,
        ~20 us of a lone record's latency with linger_ms=0. Behind other requests it would
        gain nothing, and a bulk `send()` loop measured 8% slower with it."""
        if self.acks == 0 or (before is not None and not before.done()):
            return None
        conn = self.cluster.open_connection(node)
        if conn is None or conn.in_flight:
            return None
        try:
            answer = conn.send_now(self._build_request(batches))
        except Exception:  # `_produce` builds and sends it again, and reports the failure
            return None
        return None if answer is None else (conn, answer)

    async def _produce(
        self,
        node: int,
        batches: list[ProducerBatch],
        before: asyncio.Future[None] | None,
        written: asyncio.Future[None],
        sent: tuple[BrokerConnection, asyncio.Future[Any]] | None = None,
    ) -> None:
        """Send one drained request to `node` (unless `_write_now` has: `sent`) and settle its
        batches by the answer.

        Requests to a node are written in drain order: this one waits until the one drained
        before it is written (`before`), then resolves `written`. Without that, a request
        drained while an earlier one still awaits the connection's opening could find the
        connection open and overtake it (a partition's records stored out of send order).
        """

        def wrote() -> None:
            if not written.done():
                written.set_result(None)

        try:
            if sent is not None:
                conn, answer = sent
                resp = await conn.wait_answer(answer, "Produce", self.request_timeout_ms)
            else:
                request = self._build_request(batches)
                if before is not None and not before.done():
                    await before
                conn = await self.cluster.connection(node)
                if self.acks == 0:
                    await conn.wait_writable()
                    conn.send_no_response(request)
                    wrote()
                    for batch in batches:
                        self._finish(batch, -1, -1)
                    return
                resp = await conn.send(request, self.request_timeout_ms, on_written=wrote)
        except OdradekError as exc:
            why = f"broker {node}, the partition's leader, " + (
                f"was unreachable: {exc}" if isinstance(exc, NetworkError)
                else f"did not answer in time: {exc}" if isinstance(exc, RequestTimedOutError)
                else f"failed the request: {exc}"
            )  # fmt: skip
            for batch in batches:
                self._on_error(batch, exc, why)
            return
        except asyncio.CancelledError:
            for batch in batches:
                with self.acc.lock:
                    self.acc.done_in_flight(batch)
                batch.fail(RequestTimedOutError("the producer closed while the batch was sent"))
            raise
        except Exception as exc:  # a bug must fail its batches, never leave them in flight
            bug = UnknownServerError(f"sending to broker {node} failed: {exc!r}")
            for batch in batches:
                self._on_error(batch, bug, str(bug))
            return
        finally:
            wrote()  # or given up: the next request to the node goes on
        self._settle(node, batches, resp)

    def _settle(self, node: int, batches: list[ProducerBatch], resp: ProduceResponse) -> None:
        """Each batch by its partition's answer: acknowledged, retried or failed."""
        answers = {(t.name, p.partition): p for t in resp.topics for p in t.partitions}
        for batch in batches:
            answer = answers.get(batch.tp)
            if answer is None:
                error: OdradekError = UnknownServerError(f"no answer for {_name(batch.tp)}")
                self._on_error(batch, error, f"{error} (broker {node})")
            elif answer.error_code != 0:
                text = produce_refusal(answer.error_code, answer.error_message, _name(batch.tp))
                error = produce_error(answer.error_code, text, answer.record_errors)
                self._on_error(batch, error, f"{error} (broker {node})")
            else:
                self._finish(batch, answer.base_offset, answer.log_append_time_ms)

    def _build_request(self, batches: list[ProducerBatch]) -> ProduceRequest:
        by_topic: dict[str, list[ProducePartition]] = {}
        for batch in batches:
            payload = batch.payload(self.codec, self.txn is not None)
            part = ProducePartition(batch.tp.partition, Records(payload))
            by_topic.setdefault(batch.tp.topic, []).append(part)
        topics = [ProduceTopic(name, parts) for name, parts in by_topic.items()]
        # a transactional producer names its id: the leader checks with the coordinator that
        # each partition is in the ongoing transaction (KIP-890)
        tid = self.txn.transactional_id if self.txn is not None else None
        return ProduceRequest(self.acks, self.request_timeout_ms, topics, tid)

    def _finish(self, batch: ProducerBatch, base_offset: int, append_time_ms: int) -> None:
        self.failing.pop(batch.tp, None)
        with self.acc.lock:
            self.acc.done_in_flight(batch)
            wake = self.acc.may_send_after(batch.tp)
        batch.complete(base_offset, append_time_ms)
        self.progress.set()
        if wake:
            self.wake_event.set()

    def _on_error(self, batch: ProducerBatch, error: OdradekError, why: str) -> None:
        """A failed attempt (`why`: the error, and where it came from): retry or fail."""
        with self.acc.lock:
            final = self._retry_or_settle(batch, error, why)
            if final is None:
                return
        batch.fail(final)
        if self.txn is not None:
            self._txn_failed(final)  # the transaction can only be aborted (or is fenced)
        self.progress.set()
        self.wake_event.set()

    def _retry_or_settle(
        self, batch: ProducerBatch, error: OdradekError, why: str
    ) -> OdradekError | None:
        """Under the accumulator's lock: requeue a retriable failure (None), else settle the
        batch and return the error to fail it with."""
        acc = self.acc
        batch.last_error = self.failing[batch.tp] = why
        now_ms = self.clock.monotonic_ms()
        retry_at = now_ms + self.retry_backoff_ms
        lost = acc.gap_before(batch) if isinstance(error, OutOfOrderSequenceNumberError) else None
        if lost is not None:  # no retry can fill the gap before it
            error = OutOfOrderSequenceNumberError(
                f"{_name(batch.tp)}: the batch at sequence {lost} before this one (sequence "
                f"{batch.base_sequence}, epoch {batch.producer_epoch}) was lost"
            )
        elif (
            error.retriable
            and self.running
            and batch.attempts <= self.retries
            and retry_at < batch.deadline_ms
        ):
            if error.invalid_metadata:
                self._refresh_metadata()
            acc.requeue(batch, retry_at)
            self.wake_event.set()
            return None
        elif error.retriable and retry_at >= batch.deadline_ms:
            error = RequestTimedOutError(self._expiry_message(batch))
        acc.done_in_flight(batch)
        acc.sequence_lost(batch)
        return error

    # ----- the transaction's side (client/transactions.py) -----------------------------------

    def _txn_failed(self, error: OdradekError) -> OdradekError:
        """The transaction met `error`: its state moves (client/transactions.py), and sends
        are refused at once unless it is still open."""
        assert self.txn is not None
        error = self.txn.fail(error)
        if self.txn.state is not TxnState.IN_TRANSACTION:
            self.on_unusable()
        return error

    def _add_partitions(self, tps: set[TopicPartition]) -> None:
        """The pass found queued partitions new in the transaction: add them
        (AddPartitionsToTxn), one request at a time; their batches drain once added."""
        txn = self.txn
        if txn is None or self.add_task is not None:
            return
        if txn.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            return
        self.add_task = self.spawn(self._run_add_partitions(txn, set(tps)))

    async def _run_add_partitions(self, txn: TransactionManager, tps: set[TopicPartition]) -> None:
        try:
            await txn.add_partitions(tps)
        except OdradekError as exc:  # nothing of the transaction can be sent: it must abort
            self.fail_queued(self._txn_failed(exc))
        finally:
            self.add_task = None
            self.wake_event.set()


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _sooner(a: int | None, b: int | None) -> int | None:
    """The earlier of two waits in ms; None is no wait at all."""
    return b if a is None else a if b is None else min(a, b)
