"""Synchronous Producer: the AsyncProducer on a private loop thread (client/sync.py).

`send()` does not cross threads per record (a thread round trip costs hundreds of
microseconds): it queues the record for the loop and returns a `SendFuture` (a
`concurrent.futures.Future` with kafka-python's `get()`), resolved once the broker acknowledges
the record or with its error; it blocks only when the queue is full.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from client.producer import AsyncProducer
from client.sync import _SyncClient
from client.types import BatchMetadata, RecordMetadata
from protocol.errors import UsageError

T = TypeVar("T")


class SendFuture(concurrent.futures.Future[T]):
    """A concurrent future with kafka-python's `get(timeout)` spelling of `result`."""

    def get(self, timeout: float | None = None) -> T:
        return self.result(timeout)


_Item = tuple[str, Any, Any, Any, Any, Any, SendFuture[RecordMetadata]]
MAX_PENDING_RECORDS = 50_000
MOVER_IDLE_ROUNDS = 3
MOVER_IDLE_WAIT_S = 0.005


class Producer(_SyncClient):
    """Synchronous twin of AsyncProducer (same arguments).

    `send` does not cross threads per record (a round trip costs hundreds of microseconds):
    it appends the record to a hand-off queue and returns a `SendFuture`; one task on the
    private loop moves queued records into the async producer. The queue holds at most
    MAX_PENDING_RECORDS; past that `send` blocks until the loop catches up (back-pressure,
    together with the async producer's own buffer_memory).
    """

    _name = "odradek-producer"

    def __init__(self, bootstrap_servers: str | Iterable[str], **config: Any) -> None:
        super().__init__(lambda: AsyncProducer(bootstrap_servers, **config))
        self._queue: deque[_Item] = deque()
        self._cond = threading.Condition()
        self._draining = False
        self._in_hand = False  # the mover is handing a taken slice of the queue over
        self._mover: asyncio.Task[None] | None = None

    def __enter__(self) -> Producer:
        return self

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: list[tuple[str, bytes | None]] | None = None,
        timestamp_ms: int | None = None,
    ) -> SendFuture[RecordMetadata]:
        if self._client is None:
            self._run(_started)
        future: SendFuture[RecordMetadata] = SendFuture()
        with self._cond:
            while len(self._queue) >= MAX_PENDING_RECORDS and not self._thread.stopped:
                if self._thread.is_current():
                    raise UsageError("send queue full inside a producer callback: would deadlock")
                self._cond.wait(1.0)
            if self._thread.stopped:
                raise UsageError("the producer is closed")
            self._queue.append((topic, value, key, partition, headers, timestamp_ms, future))
            start = not self._draining
            self._draining = True
        if start:
            self._thread.call_soon(self._start_mover)
        return future

    def _start_mover(self) -> None:
        self._mover = asyncio.ensure_future(self._move())

    async def _move(self) -> None:
        """Loop side: hand queued records to the async producer, in order."""
        producer: AsyncProducer = self._client
        idle_rounds = 0
        while True:
            with self._cond:
                if not self._queue:
                    idle_rounds += 1
                    if idle_rounds > MOVER_IDLE_ROUNDS:
                        self._draining = False
                        return
                else:
                    idle_rounds = 0
            if idle_rounds:
                # Linger a little before going idle: a caller sending in a loop keeps adding,
                # and waking this loop thread per record would cost a thread switch each.
                await asyncio.sleep(MOVER_IDLE_WAIT_S)
                continue
            with self._cond:
                items = list(self._queue)
                self._queue.clear()
                self._cond.notify_all()
                self._in_hand = True
            try:
                for topic, value, key, partition, headers, ts, future in items:
                    try:
                        sent = await producer.send(topic, value, key, partition, headers, ts)
                    except Exception as exc:
                        future.set_exception(exc)
                        continue
                    sent.add_done_callback(_copier(future))
            finally:
                self._in_hand = False

    async def _moved(self) -> None:
        """Until every record queued so far is in the async producer (polled: flush is rare)."""
        while True:
            with self._cond:
                pending = bool(self._queue) or self._in_hand
            if not pending:
                return
            await asyncio.sleep(0.001)

    async def _stop_mover(self) -> None:
        await self._moved()
        mover = self._mover
        if mover is not None and not mover.done():
            mover.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await mover

    def send_batch(
        self, topic: str, values: Sequence[bytes], partition: int | None = None
    ) -> concurrent.futures.Future[list[BatchMetadata]]:
        async def go(p: AsyncProducer) -> concurrent.futures.Future[list[BatchMetadata]]:
            await self._moved()  # keep the order of earlier sends
            return _chain(await p.send_batch(topic, values, partition))

        return self._run(go)

    def flush(self, timeout_ms: float | None = None) -> None:
        async def go(p: AsyncProducer) -> None:
            await self._moved()
            await p.flush(timeout_ms)

        self._run(go)

    def close(self) -> None:
        if self._client is not None and not self._thread.stopped:
            self._run(lambda _p: self._stop_mover())
        super().close()
        with self._cond:
            self._cond.notify_all()

    def partitions_for(self, topic: str) -> list[int]:
        return self._run(lambda p: p.partitions_for(topic))


async def _started(_client: Any) -> None:
    """Nothing: running it starts the client."""


def _copier(target: SendFuture[T]) -> Callable[[asyncio.Future[T]], None]:
    def copy(f: asyncio.Future[T]) -> None:
        if f.cancelled():
            target.cancel()
        elif (exc := f.exception()) is not None:
            target.set_exception(exc)
        else:
            target.set_result(f.result())

    return copy


def _chain(future: asyncio.Future[T]) -> SendFuture[T]:
    """A concurrent future that follows an asyncio future (callbacks run on the loop)."""
    out: SendFuture[T] = SendFuture()
    future.add_done_callback(_copier(out))
    return out
