"""Per-record futures resolved per batch: what `send()` returns, as light as the API allows.

A record's future is two slots, its batch and its index in it; every state lives in the batch
(`BatchState`, which client/accumulator.py's ProducerBatch extends), set once for all its
records when the broker answers: `complete` (base offset, optional LogAppendTime) or `fail`.
Nothing runs per record on completion; `result()` builds the record's RecordMetadata when asked
(offset = base offset + index, timestamp = the record's own or the broker's append time).
A batch refused for some of its records (KIP-467, client/record_failures.py) is the one case
where records of a batch fail differently: `error_of(index)` gives a named record its own
error and the others one error naming the bad ones, made once when the batch fails.

Two flavours over the same state:
- `RecordFuture` (AsyncProducer.send): an asyncio-compatible future (`await`, `asyncio.gather`,
  `wait_for`, `add_done_callback`). Callbacks registered before completion run in one
  `loop.call_soon` pass per batch, never inside the sender's task; so do those registered on
  an already settled batch (`run_soon`: one pass for all added before it runs, where an asyncio
  future makes a Handle each: `asyncio.gather` over a thousand futures acknowledged before it
  was called cost nearly twice as much per record that way). `cancel()` marks only the
  future cancelled (its waiters get CancelledError, its callbacks run): the record is already
  in its batch and is still sent, as with aiokafka's futures.
- `SendFuture` (Producer.send): `concurrent.futures.Future`'s surface plus kafka-python's
  `get(timeout)`. `result(timeout)` blocks the calling thread on an Event made on first need;
  callbacks run in the thread that completes the batch (the producer's loop thread), or at
  once when added to a done future. `cancel()` returns False: a record in a batch is already
  "running" (concurrent.futures' word) and cannot be taken back (kafka-python has no cancel).

`lock` (the accumulator's) guards callbacks, the Event and the outcome, because SendFutures are
read and given callbacks from other threads than the one completing the batch.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from client.record_failures import record_failures
from client.types import RecordMetadata, TopicPartition
from protocol.errors import OdradekError
from protocol.record_errors import RecordValidationError

T = TypeVar("T")
PENDING, SUCCEEDED, FAILED = 0, 1, 2
_new_tuple = tuple.__new__  # NamedTuple construction without its Python-level __new__


class BatchState:
    """The outcome shared by one batch's records (slots are declared by ProducerBatch)."""

    __slots__ = (
        "append_time_ms",
        "base_offset",
        "callbacks",
        "cancelled",
        "cf",
        "error",
        "event",
        "failures",
        "late",
        "lock",
        "loop",
        "state",
    )
    tp: TopicPartition
    stamps: list[int]
    state: int
    base_offset: int
    append_time_ms: int
    error: OdradekError | None
    # a batch refused for some records: (their own errors by index, the others' error)
    failures: tuple[dict[int, OdradekError], OdradekError] | None
    callbacks: list[tuple[Any, Callable[[Any], object]]] | None
    cancelled: set[int] | None  # indices of RecordFutures cancelled by their holders
    event: threading.Event | None  # made by the first SendFuture.result() that has to wait
    late: list[tuple[Any, Callable[[Any], object]]] | None  # added once settled, to run soon
    loop: asyncio.AbstractEventLoop | None  # RecordFuture callbacks run on it; None: at once
    lock: Any  # threading.Lock, the accumulator's
    # concurrent.futures.wait/as_completed's view of SendFutures, made on first use by them:
    # (their condition, {id(future): (future, its waiters)})
    cf: tuple[threading.RLock, dict[int, tuple[Any, list[Any]]]] | None

    def init_state(self, loop: asyncio.AbstractEventLoop | None, lock: Any) -> None:
        self.state = PENDING
        self.base_offset = -1
        self.append_time_ms = -1
        self.error = None
        self.failures = None
        self.callbacks = None
        self.cancelled = None
        self.event = None
        self.late = None
        self.cf = None
        self.loop = loop
        self.lock = lock

    def metadata(self, index: int) -> RecordMetadata:
        topic, partition = self.tp
        base = self.base_offset
        ts = self.append_time_ms if self.append_time_ms >= 0 else self.stamps[index]
        return _new_tuple(RecordMetadata, (topic, partition, base + index if base >= 0 else -1, ts))

    def resolve(self, state: int, base_offset: int, append_time_ms: int, error: Any) -> None:
        """Settle every record of the batch at once (no-op if already settled)."""
        with self.lock:
            if self.state != PENDING:
                return
            self.base_offset, self.append_time_ms, self.error = base_offset, append_time_ms, error
            if state == FAILED and isinstance(error, RecordValidationError) and error.record_errors:
                self.failures = record_failures(error)
            self.state = state
            callbacks, self.callbacks = self.callbacks, None
            event = self.event
        if event is not None:
            event.set()
        if self.cf is not None:
            self._notify_cf_waiters(self.cf)
        if not callbacks:
            return
        if self.loop is None:
            _run_callbacks(callbacks)
        else:
            self.loop.call_soon(_run_callbacks, callbacks)

    def error_of(self, index: int) -> OdradekError | None:
        """The error record `index` failed with (None if the batch has not failed)."""
        failures = self.failures
        if failures is None:
            return self.error
        own, others = failures
        return own.get(index, others)

    def run_soon(self, future: Any, fn: Callable[[Any], object]) -> None:
        """`fn(future)` in a later pass of the loop, for a callback added to a settled batch (on
        the loop's thread, as asyncio futures are used): all those added before that pass run
        in one `call_soon` of the loop, in the order they were added."""
        late = self.late
        if late is None:
            late = self.late = []
            self.loop.call_soon(self._run_late)  # type: ignore[union-attr]
        late.append((future, fn))

    def _run_late(self) -> None:
        late, self.late = self.late, None  # one added while these run gets a pass of its own
        if late:
            _run_callbacks(late)

    def cf_view(self) -> tuple[threading.RLock, dict[int, tuple[Any, list[Any]]]]:
        with self.lock:
            if self.cf is None:
                self.cf = (threading.RLock(), {})
            return self.cf

    def _notify_cf_waiters(
        self, cf: tuple[threading.RLock, dict[int, tuple[Any, list[Any]]]]
    ) -> None:
        """As concurrent.futures.Future.set_result does: under the condition, after the state
        is set (a waiter installed before sees the call; one installed after sees the state)."""
        condition, waiting = cf
        with condition:
            for future, waiters in waiting.values():
                for waiter in waiters:
                    if self.state == FAILED:
                        waiter.add_exception(future)
                    else:
                        waiter.add_result(future)

    def add_callback(self, future: Any, fn: Callable[[Any], object]) -> bool:
        """Register `fn(future)` for completion; False: already settled, call it yourself."""
        with self.lock:
            if self.state != PENDING:
                return False
            if self.callbacks is None:
                self.callbacks = []
            self.callbacks.append((future, fn))
            return True


def _run_callbacks(callbacks: list[tuple[Any, Callable[[Any], object]]]) -> None:
    for future, fn in callbacks:
        try:
            fn(future)
        except Exception as exc:  # a user's callback must not stop the others
            _report(future, exc)


def _report(future: Any, exc: Exception) -> None:
    loop = future.batch.loop
    if loop is not None:
        loop.call_exception_handler(
            {"message": f"exception in a callback of {future!r}", "exception": exc}
        )
    else:
        logging.getLogger(__name__).error("exception in a callback of %r", future, exc_info=exc)


class RecordFuture:
    """The asyncio-flavoured future of one record's RecordMetadata (see the module docstring)."""

    __slots__ = ("batch", "index")
    _asyncio_future_blocking = False  # tasks await it through a real future (see __await__)
    _cancel_message = None  # read by asyncio.gather for a cancelled child

    def __init__(self, batch: BatchState, index: int) -> None:
        self.batch, self.index = batch, index

    def get_loop(self) -> asyncio.AbstractEventLoop:
        loop = self.batch.loop
        if loop is None:
            raise RuntimeError("this future has no event loop")
        return loop

    def done(self) -> bool:
        return self.batch.state != PENDING or self.cancelled()

    def cancelled(self) -> bool:
        c = self.batch.cancelled
        return c is not None and self.index in c

    def result(self) -> RecordMetadata:
        batch = self.batch
        state = batch.state
        if state == SUCCEEDED and not batch.cancelled:
            return batch.metadata(self.index)
        if self.cancelled():
            raise self._make_cancelled_error()
        if state == FAILED:
            raise batch.error_of(self.index).with_traceback(None)  # type: ignore[union-attr]
        if state == PENDING:
            raise asyncio.InvalidStateError("Result is not set.")
        return batch.metadata(self.index)

    def exception(self) -> BaseException | None:
        batch = self.batch
        c = batch.cancelled  # `cancelled()` inline: gather asks each child twice
        if c is not None and self.index in c:
            raise self._make_cancelled_error()
        state = batch.state
        if state == PENDING:
            raise asyncio.InvalidStateError("Exception is not set.")
        return batch.error_of(self.index) if state == FAILED else None

    def _make_cancelled_error(self) -> asyncio.CancelledError:
        return asyncio.CancelledError()

    def add_done_callback(
        self, fn: Callable[[RecordFuture], object], *, context: Any = None
    ) -> None:
        batch = self.batch
        if batch.cancelled is None or not self.cancelled():
            if batch.state == PENDING:  # runs when the batch settles (in the loop's context)
                # No lock: a RecordFuture's batch is settled on its loop's thread, and its
                # callbacks are added there (asyncio futures are not thread-safe either).
                callbacks = batch.callbacks
                if callbacks is None:
                    callbacks = batch.callbacks = []
                callbacks.append((self, fn))
                return
            if context is None and batch.loop is not None:
                batch.run_soon(self, fn)  # settled: runs soon, with the others added meanwhile
                return
        self.get_loop().call_soon(fn, self, context=context)

    def remove_done_callback(self, fn: Callable[[RecordFuture], object]) -> int:
        batch = self.batch
        with batch.lock:
            callbacks = batch.callbacks or []
            kept = [(f, cb) for f, cb in callbacks if f is not self or cb != fn]
            if batch.callbacks is not None:
                batch.callbacks = kept
            return len(callbacks) - len(kept)

    def cancel(self, msg: Any = None) -> bool:
        """Cancel this future only: the record stays in its batch and is still sent."""
        batch = self.batch
        with batch.lock:
            if batch.state != PENDING or self.cancelled():
                return False
            if batch.cancelled is None:
                batch.cancelled = set()
            batch.cancelled.add(self.index)
            callbacks = batch.callbacks or []
            mine = [fn for f, fn in callbacks if f is self]
            if mine:  # they run now, not again when the batch completes
                batch.callbacks = [(f, fn) for f, fn in callbacks if f is not self]
        loop = self.get_loop()
        for fn in mine:
            loop.call_soon(fn, self)
        return True

    def __await__(self) -> Any:
        if not self.done():
            # Tasks wait on a real asyncio future that follows this one: the common paths
            # (gather, a callback) never get here, and this keeps the class two slots.
            waiter = self.get_loop().create_future()

            def wake(_f: RecordFuture) -> None:
                if not waiter.done():
                    waiter.set_result(None)

            self.add_done_callback(wake)
            try:
                yield from waiter
            except asyncio.CancelledError:
                self.cancel()
                raise
        return self.result()

    __iter__ = __await__

    def __repr__(self) -> str:
        state = (
            "cancelled" if self.cancelled() else ("pending", "finished", "failed")[self.batch.state]
        )
        return f"<RecordFuture {state} {self.batch.tp[0]}-{self.batch.tp[1]}#{self.index}>"


class SendFuture(concurrent.futures.Future[T]):
    """The concurrent-flavoured future of one record (see the module docstring).

    A `concurrent.futures.Future` by type (isinstance holds, as before), but none of the base
    class's state is made: every method is overridden over the batch's state. What
    `concurrent.futures.wait` / `as_completed` reach into (`_condition`, `_state`, `_waiters`)
    is served from the batch, made only when they are used.
    """

    __slots__ = ("batch", "index")

    def __init__(self, batch: BatchState, index: int) -> None:
        self.batch, self.index = batch, index

    def done(self) -> bool:
        return self.batch.state != PENDING

    def running(self) -> bool:
        return self.batch.state == PENDING

    def cancelled(self) -> bool:
        return False

    def cancel(self) -> bool:
        """False: the record is in its batch and will be sent (it cannot be taken back)."""
        return False

    def _wait(self, timeout: float | None) -> None:
        batch = self.batch
        if batch.state != PENDING:
            return
        with batch.lock:
            if batch.state != PENDING:
                return
            if batch.event is None:
                batch.event = threading.Event()
            event = batch.event
        if not event.wait(timeout):
            raise TimeoutError(f"the record was not acknowledged within {timeout} s")

    def result(self, timeout: float | None = None) -> T:
        batch = self.batch
        if batch.state == PENDING:
            self._wait(timeout)
        if batch.state == FAILED:
            raise batch.error_of(self.index).with_traceback(None)  # type: ignore[union-attr]
        return batch.metadata(self.index)  # type: ignore[return-value]

    def get(self, timeout: float | None = None) -> T:
        """kafka-python's spelling of `result`."""
        return self.result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._wait(timeout)
        return self.batch.error_of(self.index)

    def add_done_callback(self, fn: Callable[[SendFuture[T]], object]) -> None:
        if not self.batch.add_callback(self, fn):
            try:
                fn(self)
            except Exception as exc:
                _report(self, exc)

    @property
    def _condition(self) -> threading.RLock:  # type: ignore[override]
        return self.batch.cf_view()[0]

    @property
    def _state(self) -> str:  # type: ignore[override]
        return "RUNNING" if self.batch.state == PENDING else "FINISHED"

    @property
    def _waiters(self) -> list[Any]:  # type: ignore[override]
        _condition, waiting = self.batch.cf_view()
        entry = waiting.get(id(self))
        if entry is None:
            entry = waiting[id(self)] = (self, [])
        return entry[1]

    def set_result(self, result: Any) -> None:
        raise RuntimeError("a SendFuture is settled by its producer")

    def set_exception(self, exception: BaseException | None) -> None:
        raise RuntimeError("a SendFuture is settled by its producer")

    def set_running_or_notify_cancel(self) -> bool:
        raise RuntimeError("a SendFuture is settled by its producer")

    def __repr__(self) -> str:
        state = ("pending", "finished", "failed")[self.batch.state]
        return f"<SendFuture {state} {self.batch.tp[0]}-{self.batch.tp[1]}#{self.index}>"
