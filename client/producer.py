"""AsyncProducer: the public API of the producer, wiring its parts.

`send()` picks the partition (client/partitioner.py), waits for buffer memory if the producer
is over `buffer_memory` (back-pressure), appends the record to its partition's open batch
(client/accumulator.py) and returns a future of `RecordMetadata`. `send_batch()` is the bulk
path: it encodes many values into a few large batches at once. `flush()` waits until every
batch is acknowledged or failed; `waiting()` says why records of a partition still wait.

The parts: client/accumulator.py (the batches per partition, buffer memory, sequence numbers);
client/sender.py (`Sender`: one task drains the accumulator, sends one ProduceRequest per leader
node, retries within `delivery_timeout_ms`, fails a batch with the cause); client/producer_ids.py
(`ProducerIds`: the id and epoch of an idempotent or transactional producer, KIP-360's bumps);
client/transactions.py (`TransactionManager`: a transaction's states and coordinator requests);
client/producer_config.py (which settings go together).

Idempotence (`enable_idempotence`, on by default as in Kafka since 3.0, effective only with
acks=all): the leader stores a retried batch only once and answers its first copy's offset
(broker/producer_state.py), so each acknowledged record is stored exactly once and in order,
with up to 5 batches in flight per partition.

Transactions (`transactional_id`, KIP-98): the producer is idempotent with acks=all, gets its
id from `init_transactions()`, and sends only between `begin_transaction()` and
`commit_transaction()` / `abort_transaction()`. A batch failing for good makes the transaction
abortable only; a fenced producer (a newer one took the id) fails for good. With `enable_2pc`
(KIP-939) `prepare_transaction()` flushes and leaves the transaction open for another process
to complete (`init_transactions(keep_prepared_txn=True)`, then `complete_transaction`).

Without idempotence (acks 0 or 1, or switched off) delivery is at least once: a batch whose
answer was lost (connection dropped, request timed out) is sent again and may be stored twice,
and with `max_in_flight_per_partition` above 1 a retried batch may land after a later one.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import time
from collections.abc import Iterable, Sequence
from typing import Any

from client._lifecycle import ClusterClient
from client.accumulator import (
    RECORD_OVERHEAD_BYTES,
    ProducerBatch,
    RecordAccumulator,
    estimate_size,
)
from client.cluster import Cluster
from client.explain import waiting_reasons
from client.partitioner import StickyPartitioner, partition_for_key
from client.producer_config import ACKS_ALL as ACKS_ALL
from client.producer_config import MAX_IDEMPOTENT_IN_FLIGHT as MAX_IDEMPOTENT_IN_FLIGHT
from client.producer_config import check_settings
from client.producer_config import parse_acks as parse_acks
from client.producer_ids import ProducerIds
from client.record_future import RecordFuture
from client.sender import Sender
from client.transactions import (
    PreparedTxnState,
    TransactionAbortedError,
    TransactionManager,
    TxnState,
)
from client.types import BatchMetadata, TopicPartition
from protocol.batch import CODECS, HEADER_BYTES, NO_PRODUCER_ID, build_batch_from_values
from protocol.clock import Clock, SystemClock
from protocol.errors import (
    MessageTooLargeError,
    OdradekError,
    RequestTimedOutError,
    UnknownServerError,
    UsageError,
)
from transport.security import SecurityConfig

BULK_BATCH_BYTES = 256 * 1024


class AsyncProducer(ClusterClient):
    """`async with` comes from ClusterClient; `start()` here also starts the sender."""

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        client_id: str | None = None,
        acks: int | str | None = None,  # 1, or "all" for a transactional producer
        linger_ms: int = 0,
        batch_size: int = 16384,
        max_request_size: int = 1024 * 1024,
        buffer_memory: int = 32 * 1024 * 1024,
        retries: int = 2**31 - 1,
        retry_backoff_ms: int = 100,
        delivery_timeout_ms: int = 120_000,
        request_timeout_ms: int = 30_000,
        max_block_ms: int = 60_000,
        max_in_flight_per_partition: int = 5,
        compression_type: str | None = None,
        enable_idempotence: bool | None = None,  # True (as Kafka since 3.0; with acks=all)
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
        enable_2pc: bool = False,  # Kafka's transaction.two.phase.commit.enable (KIP-939)
        clock: Clock | None = None,
        **security: Any,  # TLS/SASL, kafka-python's names (transport/security.py)
    ) -> None:
        self.acks, self.idempotent = check_settings(
            acks=acks,
            batch_size=batch_size,
            max_request_size=max_request_size,
            buffer_memory=buffer_memory,
            max_in_flight_per_partition=max_in_flight_per_partition,
            compression_type=compression_type,
            enable_idempotence=enable_idempotence,
            transactional_id=transactional_id,
            enable_2pc=enable_2pc,
        )  # fmt: skip
        self.client_id = client_id
        self.max_request_size = max_request_size
        self.retries = retries
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.max_block_ms = max_block_ms
        self.codec = CODECS[compression_type or "none"]
        self._clock = clock or SystemClock()
        self._cluster = Cluster(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms, security=SecurityConfig.from_options(security),
        )  # fmt: skip
        self._acc = RecordAccumulator(
            batch_size=batch_size, buffer_memory=buffer_memory, linger_ms=linger_ms,
            delivery_timeout_ms=delivery_timeout_ms, codec=self.codec,
            max_in_flight_per_partition=max_in_flight_per_partition,
            producer_id=NO_PRODUCER_ID,  # idempotent: set from InitProducerId by the sender
        )  # fmt: skip
        self._bulk_bytes = min(max(batch_size, BULK_BATCH_BYTES), max_request_size - 4096)
        self._partitioner = StickyPartitioner()
        self._sticky = self._partitioner.current  # topic -> sticky partition (read-only here)
        # the system clock read without a Python call, on the per-record path
        self._wall_ns = time.time_ns if isinstance(self._clock, SystemClock) else None
        self._max_record_bytes = max_request_size - HEADER_BYTES
        self._tps: dict[str, list[TopicPartition]] = {}  # per topic, indexed by partition
        # per topic, the open batch of its sticky partition, where the next keyless record
        # without a partition goes (`append_value`); closed batches are skipped, then replaced
        self._sticky_batch: dict[str, ProducerBatch] = {}
        self._usable = False  # started, not closed, sender alive: send() skips its checks
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by start
        self._bulk_rr = itertools.count()
        self.threaded = False  # set by the sync Producer: appends come from other threads
        self._started = False
        self._closed = False
        self._txn: TransactionManager | None = None
        if transactional_id is not None:
            self._txn = TransactionManager(
                self._cluster, transactional_id, transaction_timeout_ms, self._clock,
                max_block_ms, request_timeout_ms, retry_backoff_ms, enable_2pc=enable_2pc,
            )  # fmt: skip
        self._ids = ProducerIds(
            self._acc, self._cluster, self._clock, idempotent=self.idempotent, txn=self._txn,
            request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
        )  # fmt: skip
        self._sender = Sender(
            self._acc, self._cluster, self._clock, self._ids, self._txn, acks=self.acks,
            codec=self.codec, max_request_size=max_request_size,
            request_timeout_ms=request_timeout_ms, retries=retries,
            retry_backoff_ms=retry_backoff_ms, on_unusable=self._unusable,
        )  # fmt: skip
        self._wake = self._sender.wake_event
        self._progress = self._sender.progress  # set whenever a batch completes (memory, flush)
        self._waker = self._wake.set  # how append_record wakes the sender (see start)

    # ----- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the bootstrap servers and start the sender."""
        if self._started:
            return
        if self._closed:
            raise UsageError("the producer is closed")
        self._loop = self._sender.loop = asyncio.get_running_loop()
        if self.threaded:  # SendFutures: callbacks run where the batch completes
            self._waker = self._sender.wake_threadsafe
        else:
            self._acc.loop = self._loop
        await self._cluster.request_update()  # NetworkError when no bootstrap server answers
        self._started = True
        self._sender.start()
        self._usable = self._txn is None  # transactional: only inside a transaction

    async def flush(self, timeout_ms: float | None = None) -> None:
        """Send everything buffered and wait until every batch is acknowledged or failed."""
        self._acc.flushing += 1
        try:
            async with asyncio.timeout(None if timeout_ms is None else timeout_ms / 1000):
                while self._acc.incomplete > 0:
                    self._check_sender()
                    self._progress.clear()
                    self._wake.set()
                    await self._progress.wait()
        except TimeoutError:
            raise RequestTimedOutError(f"flush did not finish within {timeout_ms} ms") from None
        finally:
            self._acc.flushing -= 1

    def waiting(self) -> dict[TopicPartition, str]:
        """Why the records of a partition are not acknowledged yet, for each partition with
        batches queued or in flight that has no leader or whose last attempt failed (retried
        until `delivery_timeout_ms`): the cause from the metadata, else that error."""
        with self._acc.lock:
            unfinished = self._acc.unfinished()
        return waiting_reasons(self._cluster.metadata, sorted(unfinished), self._sender.failing)

    async def close(self, timeout_ms: float | None = None) -> None:
        """Flush (within `timeout_ms`), then stop; batches still queued fail."""
        if self._closed:
            return
        self._closed = True
        self._usable = False
        try:
            if self._sender.running:
                await self.flush(timeout_ms)
        except OdradekError:
            pass
        finally:
            await self._shutdown()

    async def _shutdown(self) -> None:
        await self._sender.shutdown()
        await self._cluster.close()

    def _unusable(self) -> None:
        """The sender died, or the transaction left InTransaction: sends check again."""
        self._usable = False

    # ----- sending ----------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: list[tuple[str, bytes | None]] | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordFuture:
        """Queue one record; returns (once it is buffered) a future of where it landed.

        As aiokafka's: `fut = await producer.send(...)`, then `await fut` (or gather many).
        The future is a RecordFuture (client/record_future.py): asyncio-compatible, resolved
        with its whole batch. Cancelling it does not take the record back.
        """
        if not self._usable:
            self._check_usable()
        acc = self._acc
        closed = acc.closed_batches
        future = None
        if key is None and partition is None and headers is None and timestamp_ms is None:
            future = self.append_value(topic, value)
        if future is None:
            future = self.append_record(topic, value, key, partition, headers, timestamp_ms)
        if future is None:
            future = await self._append_waiting(topic, value, key, partition, headers, timestamp_ms)
        if acc.closed_batches != closed:
            # A batch filled: let the sender ship it now, so the broker works while
            # the caller keeps producing (a caller that never yields would otherwise fill the
            # buffer before anything is sent).
            await asyncio.sleep(0)
        return future

    def append_value(self, topic: str, value: bytes | None, fut_cls: type = RecordFuture) -> Any:
        """The fast path of both send()s for a record with only a value (no key, partition,
        headers or timestamp: the sticky partitioner's case), callable from any thread: join
        the sticky partition's open batch when it has room for the record without filling.
        None: take `append_record` (no open batch, the batch would fill, memory is short).
        """
        batch = self._sticky_batch.get(topic)
        wall_ns = self._wall_ns
        if batch is None or wall_ns is None:
            return None
        size = RECORD_OVERHEAD_BYTES + (len(value) if value else 0)
        ts = wall_ns() // 1_000_000
        acc = self._acc
        with acc.lock:
            if (
                batch.closed
                or batch.size_bytes + size >= acc.batch_size
                or acc.used_bytes + size > acc.buffer_memory
                or size > self._max_record_bytes
            ):
                return None
            return acc.join(batch, None, value, None, ts, size, fut_cls)

    def append_record(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: list[tuple[str, bytes | None]] | None = None,
        timestamp_ms: int | None = None,
        fut_cls: type = RecordFuture,
    ) -> Any:
        """The per-record path of both send()s, callable from any thread: pick the partition,
        append under the accumulator's lock, wake the sender only when a batch opened or filled.

        Returns the record's future (`fut_cls`), or None when the topic's metadata or buffer
        memory must be waited for first (each caller waits its own way, then calls again).
        It avoids calls it does not need: one clock read for the timestamp, cached
        TopicPartition keys, the accumulator's open-batch fast path.
        """
        meta = self._cluster.metadata
        parts = meta.partitions.get(topic)
        if parts is None:
            return None
        num = len(parts)
        size = RECORD_OVERHEAD_BYTES + (len(value) if value else 0) + (len(key) if key else 0)
        if headers:
            size = estimate_size(key, value, headers)
        if size > self._max_record_bytes:
            raise MessageTooLargeError(f"a {size}-byte record is above max_request_size")
        if timestamp_ms is not None:
            ts = timestamp_ms
        elif self._wall_ns is not None:
            ts = self._wall_ns() // 1_000_000
        else:
            ts = self._clock.time_ms()
        acc = self._acc
        sticky = key is None and partition is None
        with acc.lock:
            if acc.used_bytes + size > acc.buffer_memory and acc.used_bytes:
                return None
            if partition is None:
                if key is None:
                    partition = self._sticky.get(topic)
                    if partition is None or partition >= num:
                        partition = self._partitioner.sticky(topic, num, meta)
                else:
                    partition = partition_for_key(key, num)
            elif not 0 <= partition < num:
                raise UsageError(f"partition {partition} out of range: {topic!r} has {num}")
            tps = self._tps.get(topic)
            if tps is None or partition >= len(tps):
                tps = self._tps[topic] = [TopicPartition(topic, p) for p in range(num)]
            tp = tps[partition]
            future = acc.append(tp, key, value, headers, ts, size, fut_cls)
            if future is not None and not future.batch.closed:
                return future  # joined the open batch: nothing for the sender to re-plan
            if future is None:
                full = acc.close_open(tp)
                now_ms = self._clock.monotonic_ms()
                future = acc.append_new(tp, key, value, headers, ts, size, now_ms, fut_cls)
                full = full or future.batch.closed
            else:
                full = True
            if full and key is None:
                self._partitioner.on_new_batch(topic, num, meta.available_partitions(topic))
            if sticky and not future.batch.closed and self._sticky.get(topic) == partition:
                self._sticky_batch[topic] = future.batch  # where append_value sends the next
        self._waker()
        return future

    async def _append_waiting(
        self, topic: str, value: bytes | None, key: bytes | None, partition: int | None,
        headers: list[tuple[str, bytes | None]] | None, timestamp_ms: int | None,
    ) -> RecordFuture:  # fmt: skip
        """send()'s slow path: wait for the topic's metadata or buffer memory, then append."""
        while True:
            if topic not in self._cluster.metadata.partitions:
                await self._wait_for_topic(topic)
            else:
                await self._wait_for_memory(estimate_size(key, value, headers))
            future = self.append_record(topic, value, key, partition, headers, timestamp_ms)
            if future is not None:
                return future

    async def send_batch(
        self, topic: str, values: Sequence[bytes], partition: int | None = None
    ) -> asyncio.Future[list[BatchMetadata]]:
        """Bulk path: key-less values encoded into large batches at once.

        Returns a future of one BatchMetadata per batch built. With `partition` None, batches go
        round robin over the partitions that have a leader.
        """
        self._check_usable()
        num = self._cluster.metadata.num_partitions(topic)
        if num is None:
            num = await self._wait_for_topic(topic)
        if partition is not None and not 0 <= partition < num:
            raise UsageError(f"partition {partition} out of range: {topic!r} has {num}")
        futures = []
        for chunk in self._chunks(values):
            futures.append(await self._send_chunk(topic, chunk, partition, num))
        return asyncio.gather(*futures)

    def _chunks(self, values: Sequence[bytes]) -> Iterable[Sequence[bytes]]:
        """`values` cut into runs of at most `_bulk_bytes` (each value's length plus
        RECORD_OVERHEAD_BYTES; a longer value alone). The running sums are of the lengths alone,
        taken in C (`map(len)`: a generator adding the overhead per value cost 0.19 s per
        million values, 8% of a bulk producer's CPU at 1 KiB); the overhead of the values
        before index i is added where the search looks (i * RECORD_OVERHEAD_BYTES)."""
        sums = list(itertools.accumulate(map(len, values)))

        def end_of(i: int) -> int:  # the bytes of values[: i + 1], overhead included
            return sums[i] + (i + 1) * RECORD_OVERHEAD_BYTES

        start, base, n = 0, 0, len(values)
        while start < n:
            stop = bisect.bisect_right(range(n), base + self._bulk_bytes, lo=start + 1, key=end_of)
            stop = max(stop, start + 1)
            yield values[start:stop]
            base = end_of(stop - 1)
            start = stop

    async def _send_chunk(
        self, topic: str, chunk: Sequence[bytes], partition: int | None, num: int
    ) -> asyncio.Future[BatchMetadata]:
        if partition is None:
            available = self._cluster.metadata.available_partitions(topic) or list(range(num))
            partition = available[next(self._bulk_rr) % len(available)]
        ts = self._clock.time_ms()
        payload = build_batch_from_values(chunk, ts, self.codec)
        return await self.send_built(topic, partition, payload, len(chunk), ts)

    async def send_built(
        self, topic: str, partition: int, payload: bytes, count: int, timestamp_ms: int
    ) -> asyncio.Future[BatchMetadata]:
        """Queue a record batch the caller built (protocol/batch.py, without producer fields:
        the accumulator stamps the producer id, epoch, sequence and transactional bit when it
        sends it): the Spark sink's Arrow path. A future of its BatchMetadata."""
        self._check_usable()
        if len(payload) > self.max_request_size:
            raise MessageTooLargeError(f"a {len(payload)}-byte batch is above max_request_size")
        if not self._acc.has_room(len(payload)):
            await self._wait_for_memory(len(payload))
        future: asyncio.Future[BatchMetadata] = asyncio.get_running_loop().create_future()
        tp = TopicPartition(topic, partition)
        with self._acc.lock:
            self._acc.append_built(tp, payload, count, timestamp_ms, future,
                                   self._clock.monotonic_ms())  # fmt: skip
        self._wake.set()
        return future

    async def partitions_for(self, topic: str) -> list[int]:
        if self._txn is None or self._usable:
            self._check_usable()
        else:  # a transactional producer between transactions may still ask
            self._txn_manager_unchecked()
        num = self._cluster.metadata.num_partitions(topic)
        if num is None:
            num = await self._wait_for_topic(topic)
        return list(range(num))

    def _check_usable(self) -> None:
        if self._closed:
            raise UsageError("the producer is closed")
        if not self._started:
            raise UsageError("call `await producer.start()` (or use `async with`) first")
        self._check_sender()
        if self._txn is not None:
            self._txn.check("send")

    def _check_sender(self) -> None:
        if self._sender.fatal is not None:
            raise UnknownServerError(f"the producer's sender died: {self._sender.fatal!r}")

    async def _wait_for_topic(self, topic: str) -> int:
        """Metadata for a topic not yet known, retried until max_block_ms (client/cluster.py)."""
        return await self._cluster.wait_for_topic(topic, self.max_block_ms, self._clock)

    async def _wait_for_memory(self, size: int) -> None:
        with self._acc.lock:
            self._acc.memory_waiters += 1
        self._wake.set()
        try:
            async with asyncio.timeout(self.max_block_ms / 1000):
                while not self._acc.has_room(size):
                    self._check_sender()
                    self._progress.clear()
                    await self._progress.wait()
        except TimeoutError:
            raise RequestTimedOutError(
                f"no buffer memory for a {size}-byte record within {self.max_block_ms} ms"
            ) from None
        finally:
            with self._acc.lock:
                self._acc.memory_waiters -= 1

    # ----- transactions (client/transactions.py) -----------------------------------------------

    async def init_transactions(self, keep_prepared_txn: bool = False) -> None:
        """Get the transactional id's producer id at a new epoch from its coordinator: older
        producers of the id are fenced, and their open transaction aborted. KIP-939, with
        `enable_2pc`: `keep_prepared_txn=True` keeps an open (prepared) transaction instead,
        which this producer then holds (`ongoing_transaction`) to complete, commit or abort."""
        txn = self._txn_manager("init_transactions")
        txn.move(TxnState.INITIALIZING)
        await self._ids.init_transactional(keep_prepared_txn)

    @property
    def ongoing_transaction(self) -> PreparedTxnState | None:
        """KIP-939: the prepared transaction `init_transactions(keep_prepared_txn=True)` kept
        (its producer id and epoch), until it is completed; None when there was none."""
        return None if self._txn is None else self._txn.ongoing

    async def prepare_transaction(self) -> PreparedTxnState:
        """KIP-939's first phase: flush the transaction's records and leave it open, neither
        committed nor aborted; it outlives this producer (enable_2pc: no timeout). Returns what
        names it, for the deciding system to keep and hand to `complete_transaction`. A batch
        that failed for good raises here (the transaction can then only be aborted)."""
        txn = self._txn_manager("prepare_transaction")
        if not txn.enable_2pc:
            raise UsageError("prepare_transaction() needs a producer made with enable_2pc=True")
        self._usable = False
        await self.flush(self.max_block_ms)
        txn.check("prepare_transaction")  # a batch failed meanwhile: its error
        txn.move(TxnState.PREPARED_TRANSACTION)
        return PreparedTxnState(txn.producer_id, txn.producer_epoch)

    async def complete_transaction(self, prepared: PreparedTxnState) -> bool:
        """KIP-939's second phase, after `init_transactions(keep_prepared_txn=True)`: commit
        the kept transaction when it is the one `prepared` names, else abort it (it is another
        attempt's). True when it was committed."""
        txn = self._txn_manager("complete_transaction")
        if txn.ongoing == prepared:
            await self.commit_transaction()
            return True
        await self.abort_transaction()
        return False

    def begin_transaction(self) -> None:
        """Open a transaction: sends are allowed until commit or abort."""
        self._txn_manager("begin_transaction").begin()
        self._usable = True

    async def send_offsets_to_transaction(
        self, offsets: dict[TopicPartition, int], group: Any
    ) -> None:
        """Commit a consumer group's offsets (the next offset to read, per partition) inside the
        transaction: they count only if it commits. `group`: a group id, or the group's
        metadata (with `group_id`, `generation_id` and `member_id`, KIP-447's fencing)."""
        txn = self._txn_manager("send_offsets_to_transaction")
        group_id = group if isinstance(group, str) else group.group_id
        generation = -1 if isinstance(group, str) else getattr(group, "generation_id", -1)
        member = "" if isinstance(group, str) else getattr(group, "member_id", "")
        try:
            await txn.add_offsets(dict(offsets), group_id, generation, member)
        except RequestTimedOutError:
            raise
        except OdradekError as exc:
            raise txn.fail(exc) from None

    async def commit_transaction(self) -> None:
        """Flush the transaction's records, then commit it (EndTxn). A batch that failed for
        good raises here, and the transaction can then only be aborted."""
        txn = self._txn_manager("commit_transaction")
        if txn.state in (TxnState.IN_TRANSACTION, TxnState.PREPARED_TRANSACTION):
            txn.move(TxnState.COMMITTING)
        self._usable = False
        await self.flush(self.max_block_ms)
        txn.check("commit_transaction")  # a batch failed meanwhile: its error
        try:
            await txn.end_txn(commit=True)
        except RequestTimedOutError:
            raise  # still Committing: call commit_transaction() again
        except OdradekError as exc:
            raise txn.fail(exc) from None
        txn.move(TxnState.READY)

    async def abort_transaction(self) -> None:
        """Drop the records not sent yet, wait for those on their way, then abort (EndTxn)."""
        txn = self._txn_manager("abort_transaction")
        if txn.state is not TxnState.ABORTING:
            txn.move(TxnState.ABORTING)
        self._usable = False
        self._sender.fail_queued(TransactionAbortedError(
            f"transactional id {txn.transactional_id!r}: the transaction was aborted"))  # fmt: skip
        if self._sender.add_task is not None:
            await asyncio.gather(self._sender.add_task, return_exceptions=True)
        await self.flush(self.max_block_ms)
        try:
            await txn.end_txn(commit=False)
        except RequestTimedOutError:
            raise
        except OdradekError as exc:
            raise txn.fail(exc) from None
        if self._ids.epoch_bump_due():  # a lost sequence: the next epoch starts every partition
            txn.move(TxnState.INITIALIZING)  # afresh (KIP-360)
            await self._ids.init_transactional()
        else:
            txn.move(TxnState.READY)

    def _txn_manager(self, call: str) -> TransactionManager:
        txn = self._txn_manager_unchecked(call)
        txn.check(call)
        return txn

    def _txn_manager_unchecked(self, call: str = "partitions_for") -> TransactionManager:
        if self._txn is None:
            raise UsageError(f"{call}() needs a producer with a transactional_id")
        if self._closed:
            raise UsageError("the producer is closed")
        if not self._started:
            raise UsageError("call `await producer.start()` (or use `async with`) first")
        self._check_sender()
        return self._txn
