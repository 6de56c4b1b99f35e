"""Synchronous Producer, Consumer and Admin for scripts and Spark executors.

Each object owns one private event loop (uvloop) running in one background thread, started on
first use and stopped by `close()` (or the `with` block's end). Every method hands a coroutine
or a call to that loop and blocks for its result, so the async client is only ever touched from
its own thread. `Producer.send()` is the exception, because a thread round trip per record
would cost hundreds of microseconds: it queues the record for the loop and returns a
`SendFuture` (a `concurrent.futures.Future` with kafka-python's `get()`), resolved once the
broker acknowledges the record or with its error; it blocks only when the queue is full.

The sync wrappers never use the caller's event loop, so they also work inside programs that
run their own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import uvloop

from client.admin import AsyncAdmin, PartitionReassignment
from client.cluster import ClusterMetadata
from client.consumer import AsyncConsumer
from client.producer import AsyncProducer
from client.types import (
    BatchMetadata,
    ConsumerRecord,
    NewTopic,
    OffsetAndTimestamp,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)
from protocol.api.admin import ConfigEntry
from protocol.errors import OdradekError, UsageError

T = TypeVar("T")


class _LoopThread:
    """One event loop in one daemon thread, started lazily."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.stopped = False

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self.stopped:
                raise UsageError(f"{self._name} is closed")
            if self._loop is None:
                loop = uvloop.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        try:
            loop = self._ensure()
            if _running_loop() is loop:
                raise UsageError("a sync client cannot be called from its own event loop")
        except BaseException:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout_s)

    def is_current(self) -> bool:
        """Whether the caller runs on this loop's thread (a future's callback, say)."""
        return self._thread is not None and threading.current_thread() is self._thread

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the loop, without waiting."""
        self._ensure().call_soon_threadsafe(fn)

    def stop(self) -> None:
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _chain(future: asyncio.Future[T]) -> SendFuture[T]:
    """A concurrent future that follows an asyncio future (callbacks run on the loop)."""
    out: SendFuture[T] = SendFuture()
    future.add_done_callback(_copier(out))
    return out


class _SyncClient:
    """Owns the loop thread and the async twin, built inside that loop on first use."""

    _name = "odradek-client"

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._thread = _LoopThread(self._name)
        self._client: Any = None
        self._starting: asyncio.Future[Any] | None = None  # on the loop: the client's start

    def _run(self, make_coro: Callable[[Any], Awaitable[T]], timeout_s: float | None = None) -> T:
        async def go() -> T:
            if self._client is None:
                await self._start_once()
            return await make_coro(self._client)

        return self._thread.run(go(), timeout_s)

    async def _start_once(self) -> None:
        """Build and start the async client; callers from several threads share one start."""
        if self._starting is None or (
            self._starting.done() and self._starting.exception() is not None
        ):
            client = self._factory()
            self._starting = asyncio.ensure_future(client.start())
            self._starting.add_done_callback(lambda f: f.cancelled() or f.exception())
            await asyncio.shield(self._starting)
            self._client = client
        else:
            await asyncio.shield(self._starting)

    def close(self) -> None:
        if self._thread.stopped:
            return
        try:
            if self._client is not None:
                self._thread.run(self._client.close())
        finally:
            self._thread.stop()

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


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


class Consumer(_SyncClient):
    """Synchronous twin of AsyncConsumer (same arguments)."""

    _name = "odradek-consumer"

    def __init__(self, bootstrap_servers: str | Iterable[str], **config: Any) -> None:
        super().__init__(lambda: AsyncConsumer(bootstrap_servers, **config))

    def __enter__(self) -> Consumer:
        return self

    def _do(self, fn: Callable[[AsyncConsumer], T]) -> T:
        async def go(c: AsyncConsumer) -> T:
            return fn(c)

        return self._run(go)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        tps = list(partitions)
        self._do(lambda c: c.assign(tps))

    def assignment(self) -> set[TopicPartition]:
        return self._do(lambda c: c.assignment())

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._do(lambda c: c.seek(tp, offset))

    def seek_to_beginning(self, *tps: TopicPartition) -> None:
        self._do(lambda c: c.seek_to_beginning(*tps))

    def seek_to_end(self, *tps: TopicPartition) -> None:
        self._do(lambda c: c.seek_to_end(*tps))

    def position(self, tp: TopicPartition) -> int:
        return self._run(lambda c: c.position(tp))

    def pause(self, *tps: TopicPartition) -> None:
        self._do(lambda c: c.pause(*tps))

    def resume(self, *tps: TopicPartition) -> None:
        self._do(lambda c: c.resume(*tps))

    def paused(self) -> set[TopicPartition]:
        return self._do(lambda c: c.paused())

    def highwater(self, tp: TopicPartition) -> int:
        return self._do(lambda c: c.highwater(tp))

    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(tps)
        return self._run(lambda c: c.beginning_offsets(wanted))

    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(tps)
        return self._run(lambda c: c.end_offsets(wanted))

    def poll(
        self, timeout_ms: float = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        return self._run(lambda c: c.poll(timeout_ms, max_records))

    # consumer groups: the listener's callbacks run on the consumer's loop thread

    def subscribe(
        self, topics: Iterable[str] = (), pattern: str | None = None, listener: Any = None
    ) -> None:
        wanted = [topics] if isinstance(topics, str) else list(topics)
        self._do(lambda c: c.subscribe(wanted, pattern, listener))

    def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        self._run(lambda c: c.commit(offsets))

    def commit_async(
        self, offsets: dict[TopicPartition, int] | None = None, callback: Any = None
    ) -> None:
        self._do(lambda c: c.commit_async(offsets, callback))

    def committed(self, tp: TopicPartition) -> int | None:
        return self._run(lambda c: c.committed(tp))


class Admin(_SyncClient):
    """Synchronous twin of AsyncAdmin (same arguments)."""

    _name = "odradek-admin"

    def __init__(self, bootstrap_servers: str | Iterable[str], **config: Any) -> None:
        super().__init__(lambda: AsyncAdmin(bootstrap_servers, **config))

    def __enter__(self) -> Admin:
        return self

    def create_topics(
        self, new_topics: Iterable[NewTopic], timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:  # fmt: skip
        topics = list(new_topics)
        self._run(lambda a: a.create_topics(topics, timeout_ms, validate_only))

    def delete_topics(self, names: Iterable[str], timeout_ms: int | None = None) -> None:
        wanted = list(names)
        self._run(lambda a: a.delete_topics(wanted, timeout_ms))

    def list_topics(self, include_internal: bool = False) -> list[str]:
        return self._run(lambda a: a.list_topics(include_internal))

    def describe_topics(self, names: Iterable[str] | None = None) -> list[TopicDescription]:
        wanted = None if names is None else list(names)
        return self._run(lambda a: a.describe_topics(wanted))

    def describe_cluster(self) -> ClusterMetadata:
        return self._run(lambda a: a.describe_cluster())

    def elect_leaders(
        self, topic: str | None = None, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OdradekError | None]:
        return self._run(lambda a: a.elect_leaders(topic, timeout_ms))

    def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Iterable[int]], timeout_ms: int | None = None
    ) -> None:
        wanted = {tp: list(r) for tp, r in targets.items()}
        self._run(lambda a: a.alter_partition_reassignments(wanted, timeout_ms))

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        wanted = None if partitions is None else list(partitions)
        return self._run(lambda a: a.list_partition_reassignments(wanted))

    def describe_configs(
        self, topics: Iterable[str], config_names: list[str] | None = None
    ) -> dict[str, dict[str, ConfigEntry]]:
        wanted = list(topics)
        return self._run(lambda a: a.describe_configs(wanted, config_names))

    def alter_configs(
        self,
        topic: str,
        set_configs: Mapping[str, str] | None = None,
        delete: Iterable[str] = (),
        validate_only: bool = False,
    ) -> None:
        sets, deletes = dict(set_configs or {}), list(delete)
        self._run(lambda a: a.alter_configs(topic, sets, deletes, validate_only))

    def create_partitions(
        self,
        new_counts: Mapping[str, int],
        assignments: Mapping[str, list[list[int]]] | None = None,
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        counts = dict(new_counts)
        given = None if assignments is None else dict(assignments)
        self._run(lambda a: a.create_partitions(counts, given, timeout_ms, validate_only))

    def list_offsets(
        self, query: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        q = dict(query)
        return self._run(lambda a: a.list_offsets(q))

    def delete_records(
        self, before: Mapping[TopicPartition, int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        wanted = dict(before)
        return self._run(lambda a: a.delete_records(wanted, timeout_ms))
