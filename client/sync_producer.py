"""Synchronous Producer: the AsyncProducer on a private loop thread (client/sync.py).

`send()` appends the record into the async producer's accumulator from the caller's own thread,
under the accumulator's lock (AsyncProducer.append_record): no thread hop per record. It wakes
the sender on the loop thread (`call_soon_threadsafe`) only when a batch opened or filled, so a
loop of sends costs the loop thread one wake per batch, and a lone send with linger_ms=0 goes
to the socket at once. It returns a `SendFuture` (client/record_future.py): two slots referring
to the record's batch, resolved with the whole batch when the broker answers, with
`concurrent.futures.Future`'s surface and kafka-python's `get(timeout)`.

Back-pressure: past `buffer_memory` the caller blocks (on the accumulator's condition, notified
as batches complete) up to `max_block_ms`, then gets RequestTimedOutError. Records sent from one
thread keep their order (appended in call order under one lock); several threads may send.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from client.accumulator import estimate_size, failed_batch
from client.producer import AsyncProducer
from client.record_future import SendFuture
from client.sync import _SyncClient
from client.transactions import PreparedTxnState
from client.types import BatchMetadata, RecordMetadata, TopicPartition
from protocol.errors import OdradekError, RequestTimedOutError, UsageError

__all__ = ["Producer", "SendFuture"]

T = TypeVar("T")
BLOCKED_CHECK_S = 1.0  # a caller blocked for memory re-checks the producer's health this often


class BatchFuture(concurrent.futures.Future[T]):
    """A concurrent future with kafka-python's `get(timeout)`: what `send_batch` returns."""

    def get(self, timeout: float | None = None) -> T:
        return self.result(timeout)


class Producer(_SyncClient):
    """Synchronous twin of AsyncProducer (same arguments); see the module docstring."""

    _name = "odradek-producer"

    def __init__(self, bootstrap_servers: str | Iterable[str], **config: Any) -> None:
        def make() -> AsyncProducer:
            producer = AsyncProducer(bootstrap_servers, **config)
            producer.threaded = True  # appends come from the callers' threads
            return producer

        super().__init__(make)

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
        """Buffer one record; the future settles when the broker acknowledges its batch.

        A refused record (too large, a bad partition, an unknown topic) gets a failed future;
        a closed producer raises UsageError.
        """
        p: AsyncProducer = self._client
        if p is None or not p._usable:
            p = self._usable_client()
        try:
            future = None
            if key is None and partition is None and headers is None and timestamp_ms is None:
                future = p.append_value(topic, value, SendFuture)
            if future is None:
                future = p.append_record(topic, value, key, partition, headers, timestamp_ms,
                                         SendFuture)  # fmt: skip
            if future is None:
                future = self._append_blocking(p, topic, value, key, partition, headers,
                                               timestamp_ms)  # fmt: skip
        except OdradekError as exc:
            if not p._usable:
                raise
            tp = TopicPartition(topic, -1 if partition is None else partition)
            return SendFuture(failed_batch(tp, exc), 0)
        return future

    def _usable_client(self) -> AsyncProducer:
        if self._thread.stopped:
            raise UsageError("the producer is closed")
        if self._client is None:
            self._run(_started)
        p: AsyncProducer = self._client
        p._check_usable()
        return p

    def _append_blocking(
        self, p: AsyncProducer, topic: str, value: bytes | None, key: bytes | None,
        partition: int | None, headers: list[tuple[str, bytes | None]] | None,
        timestamp_ms: int | None,
    ) -> SendFuture[RecordMetadata]:  # fmt: skip
        """The slow path: wait for the topic's metadata (on the loop) or for buffer memory."""
        deadline_ms = p._clock.monotonic_ms() + p.max_block_ms
        while True:
            if topic not in p._cluster.metadata.partitions:
                self._run(lambda c: c._wait_for_topic(topic))
            else:
                self._wait_for_room(p, estimate_size(key, value, headers), deadline_ms)
            future = p.append_record(topic, value, key, partition, headers, timestamp_ms,
                                     SendFuture)  # fmt: skip
            if future is not None:
                return future

    def _wait_for_room(self, p: AsyncProducer, size: int, deadline_ms: int) -> None:
        """Block until `size` bytes fit in buffer_memory (the sender hurries meanwhile)."""
        if self._thread.is_current():
            raise UsageError("buffer_memory full inside a producer callback: would deadlock")
        acc = p._acc
        with acc.room:
            acc.blocked_appenders += 1
            acc.memory_waiters += 1
            try:
                p._waker()
                while not acc.has_room(size):
                    left_ms = deadline_ms - p._clock.monotonic_ms()
                    if left_ms <= 0:
                        raise RequestTimedOutError(
                            f"no buffer memory for a {size}-byte record within {p.max_block_ms} ms"
                        )
                    if not p._usable:
                        p._check_usable()
                    acc.room.wait(min(left_ms / 1000, BLOCKED_CHECK_S))
            finally:
                acc.blocked_appenders -= 1
                acc.memory_waiters -= 1

    def send_batch(
        self, topic: str, values: Sequence[bytes], partition: int | None = None
    ) -> concurrent.futures.Future[list[BatchMetadata]]:
        async def go(p: AsyncProducer) -> concurrent.futures.Future[list[BatchMetadata]]:
            # Records sent before are in the accumulator already: the order is kept.
            out: BatchFuture[list[BatchMetadata]] = BatchFuture()
            (await p.send_batch(topic, values, partition)).add_done_callback(_copier(out))
            return out

        return self._run(go)

    def flush(self, timeout_ms: float | None = None) -> None:
        self._run(lambda p: p.flush(timeout_ms))

    def waiting(self) -> dict[TopicPartition, str]:
        """Why records wait, per partition (AsyncProducer.waiting): {} when nothing does."""
        return self._run(_waiting)

    def close(self) -> None:
        super().close()
        p: AsyncProducer | None = self._client
        if p is not None:
            with p._acc.room:  # callers blocked for memory see the producer closed
                p._acc.room.notify_all()

    def partitions_for(self, topic: str) -> list[int]:
        return self._run(lambda p: p.partitions_for(topic))

    # transactions: the async producer's, run on its loop (client/transactions.py)

    def init_transactions(self, keep_prepared_txn: bool = False) -> None:
        self._run(lambda p: p.init_transactions(keep_prepared_txn))

    @property
    def ongoing_transaction(self) -> PreparedTxnState | None:
        return self._run(_ongoing)

    def prepare_transaction(self) -> PreparedTxnState:
        return self._run(lambda p: p.prepare_transaction())

    def complete_transaction(self, prepared: PreparedTxnState) -> bool:
        return self._run(lambda p: p.complete_transaction(prepared))

    def begin_transaction(self) -> None:
        async def go(p: AsyncProducer) -> None:
            p.begin_transaction()

        self._run(go)

    def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group: Any) -> None:
        wanted = dict(offsets)
        self._run(lambda p: p.send_offsets_to_transaction(wanted, group))

    def commit_transaction(self) -> None:
        self._run(lambda p: p.commit_transaction())

    def abort_transaction(self) -> None:
        self._run(lambda p: p.abort_transaction())


async def _ongoing(p: AsyncProducer) -> PreparedTxnState | None:
    return p.ongoing_transaction


async def _waiting(p: AsyncProducer) -> dict[TopicPartition, str]:
    return p.waiting()


async def _started(_client: Any) -> None:
    """Nothing: running it starts the client."""


def _copier(target: BatchFuture[T]) -> Any:
    def copy(f: Any) -> None:
        if f.cancelled():
            target.cancel()
        elif (exc := f.exception()) is not None:
            target.set_exception(exc)
        else:
            target.set_result(f.result())

    return copy
