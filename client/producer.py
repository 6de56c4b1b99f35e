"""AsyncProducer: partition, batch, send per leader node, retry within the delivery timeout.

`send()` picks the partition (client/partitioner.py), waits for buffer memory if the producer
is over `buffer_memory` (back-pressure), appends the record to its partition's open batch
(client/accumulator.py) and returns a future of `RecordMetadata`. `send_batch()` is the bulk
path: it encodes many values into a few large batches at once.

One sender task loops: expire batches past `delivery_timeout_ms`, ask the accumulator which
leader nodes are ready, drain one batch per partition for each, and send one ProduceRequest per
node as its own task (requests to a node are pipelined on one connection). Per partition:
- no error: every record's future gets its offset (base offset + index);
- a retriable error (NOT_LEADER_FOR_PARTITION, a lost connection, a timeout, ...): the batch
  goes back to the front of its queue after `retry_backoff_ms`, and an `invalid_metadata` error
  refreshes the metadata first, so the retry goes to the new leader;
- anything else, or `retries` used up, or `delivery_timeout_ms` passed: the futures fail.
With acks=0 the request gets no answer and offsets are -1.

Idempotence (`enable_idempotence`, on by default as in Kafka since 3.0, effective only with
acks=all): before its first batch goes out the sender asks any broker for a producer id
(InitProducerId: a fresh id at epoch 0, from the block of ids that broker claimed in ZooKeeper;
coordinator/cluster/producer_ids.py), and numbers each partition's batches (client/accumulator.py).
The leader stores a retried batch only once and answers its first copy's offset
(broker/producer_state.py), so each acknowledged record is stored exactly once and in order,
with up to 5 batches in flight per partition. A batch that fails for good (expired, or
refused) leaves a gap in its partition's sequence: the partition sends nothing new until its
other batches of that epoch have settled, then the producer asks for its id at the next epoch
(InitProducerId with its id and epoch, KIP-360; a fresh id when the epoch is used up), and
each partition starts again from sequence 0 once its older batches have settled (the rules are
in client/accumulator.py). Nothing new is drained while an id is awaited (retries are); a
failed InitProducerId is retried after `retry_backoff_ms` (a non-retriable refusal also fails
the batches waiting for it).

An expired batch's futures fail with RequestTimedOutError "delivery timed out after N ms:
<why>": the cause, not only a code (client/explain.py). A partition without a leader says why
from the metadata ("partition chaos-0 has no leader: its replicas 1,2 are down"), followed by
the last error its attempts met; else the last error (with the broker it came from, and the
broker's own message: "acks=all refused: chaos-0: ISR [3] is below min.insync.replicas 2");
else, never sent, what held it back (no producer id, earlier batches settling).

Transactions (`transactional_id`, KIP-98; client/transactions.py holds the state machine and
the coordinator requests): the producer is idempotent with acks=all (an explicit conflicting
setting is refused), gets its id from `init_transactions()`, and sends only between
`begin_transaction()` and `commit_transaction()` / `abort_transaction()`. Its batches carry
the TRANSACTIONAL_BIT; a partition's first batch in a transaction waits in the accumulator
until the sender has added the partition (AddPartitionsToTxn). A batch failing for good makes
the transaction abortable only; a fenced producer (a newer one took the id) fails for good.
With `enable_2pc` (KIP-939) `prepare_transaction()` flushes and leaves the transaction open for
another process to complete (`init_transactions(keep_prepared_txn=True)`, then
`complete_transaction`): client/transactions.py's docstring has the protocol.

Without idempotence (acks 0 or 1, or switched off) delivery is at least once: a batch whose
answer was lost (connection dropped, request timed out) is sent again and may be stored twice,
and with `max_in_flight_per_partition` above 1 a retried batch may land after a later one.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
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
from client.cluster import Cluster, ClusterMetadata
from client.explain import leaderless_reason, produce_refusal, waiting_reasons
from client.partitioner import StickyPartitioner, partition_for_key
from client.record_future import RecordFuture
from client.transactions import (
    PreparedTxnState,
    TransactionAbortedError,
    TransactionManager,
    TxnState,
)
from client.types import BatchMetadata, TopicPartition
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceResponse, ProduceTopic
from protocol.api.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.batch import CODECS, HEADER_BYTES, NO_PRODUCER_ID, build_batch_from_values
from protocol.clock import Clock, SystemClock
from protocol.errors import (
    MessageTooLargeError,
    NetworkError,
    OdradekError,
    OutOfOrderSequenceNumberError,
    RequestTimedOutError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UsageError,
    for_code,
)
from protocol.schema import Records
from transport.connection import BrokerConnection
from transport.security import SecurityConfig

BULK_BATCH_BYTES = 256 * 1024
ACKS_ALL = -1
_ACKS = {0: 0, 1: 1, -1: -1, "all": -1, "0": 0, "1": 1, "-1": -1}


MAX_IDEMPOTENT_IN_FLIGHT = 5  # the batches per producer a broker remembers per partition


def parse_acks(acks: int | str) -> int:
    if acks not in _ACKS:
        raise UsageError(f"acks must be 0, 1, -1 or 'all', not {acks!r}")
    return _ACKS[acks]


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
        if batch_size < 1 or max_request_size < 1024 or buffer_memory < max_request_size:
            raise UsageError(
                "need batch_size >= 1, max_request_size >= 1024, buffer_memory >= max_request_size"
            )
        if compression_type not in (None, *CODECS):
            raise UsageError(f"compression_type must be None or one of {sorted(CODECS)}")
        if enable_2pc and transactional_id is None:
            raise UsageError("enable_2pc (two-phase commit) needs a transactional_id")
        if transactional_id is not None:  # Kafka's transactional producer: idempotent, acks=all
            if acks is not None and parse_acks(acks) != ACKS_ALL:
                raise UsageError(f"a transactional producer needs acks='all', not {acks!r}")
            if enable_idempotence is False:
                raise UsageError("a transactional producer is idempotent: enable_idempotence=False "
                                 "cannot go with a transactional_id")  # fmt: skip
            acks = ACKS_ALL
        self.acks = parse_acks(1 if acks is None else acks)
        self.idempotent = enable_idempotence is not False and self.acks == ACKS_ALL
        if self.idempotent and not 1 <= max_in_flight_per_partition <= MAX_IDEMPOTENT_IN_FLIGHT:
            raise UsageError(
                f"an idempotent producer keeps 1 to {MAX_IDEMPOTENT_IN_FLIGHT} batches in flight "
                "per partition"
            )
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
        self._wake = asyncio.Event()
        self._waker = self._wake.set  # how append_record wakes the sender (see start)
        self._wake_scheduled = False  # a threadsafe wake is on its way to the loop
        self.threaded = False  # set by the sync Producer: appends come from other threads
        self._progress = asyncio.Event()  # set whenever a batch completes (memory, flush)
        self._sender: asyncio.Task[None] | None = None
        self._requests: set[asyncio.Task[None]] = set()
        # per node, resolved once its latest produce request is written (or given up)
        self._written: dict[int, asyncio.Future[None]] = {}
        self._started = False
        self._closed = False
        self._fatal: BaseException | None = None
        # idempotence: an InitProducerId is due (first id, or an epoch bump): nothing new drains
        self._acc.awaiting_producer_id = self.idempotent
        self._pid_task: asyncio.Task[None] | None = None
        self._pid_retry_at_ms = 0
        self._pid_error: str | None = None  # why the last InitProducerId failed
        self._failing: dict[TopicPartition, str] = {}  # the last error of a partition's retries
        self._txn: TransactionManager | None = None
        self._add_task: asyncio.Task[None] | None = None  # AddPartitionsToTxn under way
        if transactional_id is not None:
            self._txn = TransactionManager(
                self._cluster, transactional_id, transaction_timeout_ms, self._clock,
                max_block_ms, request_timeout_ms, retry_backoff_ms, enable_2pc=enable_2pc,
            )  # fmt: skip
            self._acc.txn_partitions = self._txn.added

    # ----- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the bootstrap servers and start the sender."""
        if self._started:
            return
        if self._closed:
            raise UsageError("the producer is closed")
        self._loop = asyncio.get_running_loop()
        if self.threaded:  # SendFutures: callbacks run where the batch completes
            self._waker = self._wake_threadsafe
        else:
            self._acc.loop = self._loop
        await self._cluster.request_update()  # NetworkError when no bootstrap server answers
        self._started = True
        self._sender = asyncio.create_task(self._run_sender(), name="odradek-producer-sender")
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
        return waiting_reasons(self._cluster.metadata, sorted(unfinished), self._failing)

    async def close(self, timeout_ms: float | None = None) -> None:
        """Flush (within `timeout_ms`), then stop; batches still queued fail."""
        if self._closed:
            return
        self._closed = True
        self._usable = False
        try:
            if self._sender is not None and not self._sender.done():
                await self.flush(timeout_ms)
        except OdradekError:
            pass
        finally:
            await self._shutdown()

    async def _shutdown(self) -> None:
        with self._acc.lock:
            aborted = self._acc.abort_all()
        for batch in aborted:
            batch.fail(RequestTimedOutError("the producer closed before the batch was sent"))
        if self._sender is not None:
            self._sender.cancel()
        for task in self._requests:
            task.cancel()  # only those a flush timeout left behind
        for task in [*self._requests, *([self._sender] if self._sender else [])]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._cluster.close()

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

    def _wake_threadsafe(self) -> None:
        """Wake the sender from another thread: one call_soon_threadsafe at a time."""
        if not self._wake_scheduled:
            self._wake_scheduled = True
            self._loop.call_soon_threadsafe(self._wake_now)

    def _wake_now(self) -> None:
        self._wake_scheduled = False
        self._wake.set()

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
        ends = list(itertools.accumulate(len(v) + RECORD_OVERHEAD_BYTES for v in values))
        start, base = 0, 0
        while start < len(values):
            stop = bisect.bisect_right(ends, base + self._bulk_bytes, lo=start + 1)
            stop = max(stop, start + 1)
            yield values[start:stop]
            base = ends[stop - 1]
            start = stop

    async def _send_chunk(
        self, topic: str, chunk: Sequence[bytes], partition: int | None, num: int
    ) -> asyncio.Future[BatchMetadata]:
        if partition is None:
            available = self._cluster.metadata.available_partitions(topic) or list(range(num))
            partition = available[next(self._bulk_rr) % len(available)]
        ts = self._clock.time_ms()
        payload = build_batch_from_values(chunk, ts, self.codec)
        if len(payload) > self.max_request_size:
            raise MessageTooLargeError(f"a {len(payload)}-byte batch is above max_request_size")
        if not self._acc.has_room(len(payload)):
            await self._wait_for_memory(len(payload))
        future: asyncio.Future[BatchMetadata] = asyncio.get_running_loop().create_future()
        tp = TopicPartition(topic, partition)
        with self._acc.lock:
            self._acc.append_built(tp, payload, len(chunk), ts, future, self._clock.monotonic_ms())
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
        if self._fatal is not None:
            raise UnknownServerError(f"the producer's sender died: {self._fatal!r}")

    async def _wait_for_topic(self, topic: str) -> int:
        """Metadata for a topic not yet known, retried until max_block_ms."""
        self._cluster.add_topics([topic])
        deadline = self._clock.monotonic_ms() + self.max_block_ms
        last: OdradekError | None = None
        while self._clock.monotonic_ms() < deadline:
            try:
                meta = await self._cluster.request_update()
            except OdradekError as exc:
                last = exc
                continue
            num = meta.num_partitions(topic)
            if num:
                return num
            code = meta.topic_errors.get(topic)
            last = for_code(code)(f"topic {topic!r}") if code else None
            if last is not None and not last.retriable:
                raise last
        raise last or UnknownTopicOrPartitionError(
            f"topic {topic!r} not in the metadata after {self.max_block_ms} ms"
        )

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
        await self._init_transactional_id(txn, keep_prepared_txn)

    async def _init_transactional_id(
        self, txn: TransactionManager, keep_prepared_txn: bool = False
    ) -> None:
        try:
            producer_id, epoch = await txn.init_producer_id(keep_prepared_txn)
        except RequestTimedOutError:
            txn.move(TxnState.UNINITIALIZED)  # init_transactions() may be called again
            raise
        except OdradekError as exc:
            raise txn.fail(exc) from None
        with self._acc.lock:
            self._acc.reset_producer(producer_id, epoch)
            self._acc.awaiting_producer_id = False
        txn.move(TxnState.READY if txn.ongoing is None else TxnState.PREPARED_TRANSACTION)

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
        self._fail_queued(TransactionAbortedError(
            f"transactional id {txn.transactional_id!r}: the transaction was aborted"))  # fmt: skip
        if self._add_task is not None:
            await asyncio.gather(self._add_task, return_exceptions=True)
        await self.flush(self.max_block_ms)
        try:
            await txn.end_txn(commit=False)
        except RequestTimedOutError:
            raise
        except OdradekError as exc:
            raise txn.fail(exc) from None
        with self._acc.lock:
            bump = self._acc.epoch_bump_due()
        if bump:  # a lost sequence: the next epoch starts every partition afresh (KIP-360)
            txn.move(TxnState.INITIALIZING)
            await self._init_transactional_id(txn)
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

    def _txn_failed(self, error: OdradekError) -> OdradekError:
        """The transaction met `error`: its state moves (client/transactions.py), and sends
        are refused at once unless it is still open."""
        assert self._txn is not None
        error = self._txn.fail(error)
        if self._txn.state is not TxnState.IN_TRANSACTION:
            self._usable = False
        return error

    def _add_partitions(self, tps: set[TopicPartition]) -> None:
        """The sender's pass found queued partitions new in the transaction: add them
        (AddPartitionsToTxn), one request at a time; their batches drain once added."""
        txn = self._txn
        if txn is None or self._add_task is not None:
            return
        if txn.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            return
        self._add_task = asyncio.create_task(self._run_add_partitions(txn, set(tps)))
        self._requests.add(self._add_task)
        self._add_task.add_done_callback(self._requests.discard)

    async def _run_add_partitions(self, txn: TransactionManager, tps: set[TopicPartition]) -> None:
        try:
            await txn.add_partitions(tps)
        except OdradekError as exc:  # nothing of the transaction can be sent: it must abort
            self._fail_queued(self._txn_failed(exc))
        finally:
            self._add_task = None
            self._wake.set()

    # ----- the sender -------------------------------------------------------------------------

    async def _run_sender(self) -> None:
        try:
            while True:
                self._wake.clear()
                delay_ms = self._send_ready()
                if delay_ms is None:
                    await self._wake.wait()
                elif delay_ms > 0:
                    try:
                        async with asyncio.timeout(delay_ms / 1000):
                            await self._wake.wait()
                    except TimeoutError:
                        pass
                else:
                    await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a bug: make it visible to every caller
            self._fatal = exc
            self._usable = False
            self._progress.set()
            raise

    def _send_ready(self) -> int | None:
        """One pass: expire, ask for an id if due, drain, send. Returns ms until the next pass
        is needed."""
        now_ms = self._clock.monotonic_ms()
        acc = self._acc
        with acc.lock:  # the sync Producer appends from its callers' threads
            expired = acc.expire(now_ms)
            for batch in expired:
                acc.sequence_lost(batch)
            failures = [RequestTimedOutError(self._expiry_message(b)) for b in expired]
        for batch, failure in zip(expired, failures, strict=True):
            batch.fail(failure)
            self._progress.set()
            if self._txn is not None:
                self._txn_failed(failure)
        pid_delay = None
        meta = self._cluster.metadata
        leader_of = self._leader_of(meta)
        with acc.lock:
            if (
                self.idempotent
                and self._txn is None  # (a transactional producer's id: init_transactions)
                and (acc.awaiting_producer_id or acc.epoch_bump_due())
            ):
                acc.awaiting_producer_id = True
                pid_delay = self._await_producer_id(now_ms)
            ready = acc.ready(leader_of, now_ms)
            drained = acc.drain(ready.nodes, leader_of, self.max_request_size, now_ms)
        if ready.txn_new:
            self._add_partitions(ready.txn_new)
        delay = _sooner(ready.next_check_ms, pid_delay)
        if ready.unknown_leaders or self._cluster.metadata_is_stale():
            self._refresh_metadata()
            delay = _sooner(delay, self.retry_backoff_ms)
        for node, batches in drained.items():
            before, written = self._written.get(node), self._loop.create_future()
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
        why = leaderless_reason(self._cluster.metadata, tp.topic, tp.partition)
        last = batch.last_error or self._failing.get(tp)
        if why is not None:
            why += f" (last error: {last})" if last else ""
        elif batch.last_error is not None:
            why = batch.last_error
        else:
            why = self._held_back(batch)
        return f"delivery timed out after {self._acc.delivery_timeout_ms} ms: {why}"

    def _held_back(self, batch: ProducerBatch) -> str:
        """Why a batch that was never sent, to a partition with a leader, stayed queued."""
        tp = batch.tp
        if self._acc.awaiting_producer_id:
            why = f"no producer id yet (InitProducerId: {self._pid_error or 'under way'})"
        elif batch.base_sequence < 0 and self._acc.holds_new(tp):
            why = f"{_name(tp)}'s earlier batches were settling before an epoch bump"
        else:
            why = f"not sent, behind {_name(tp)}'s earlier batches"
        if tp in self._failing:
            why += f" (whose last error: {self._failing[tp]})"
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
        task = asyncio.ensure_future(self._cluster.request_update())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        task.add_done_callback(lambda _t: self._wake.set())

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
        conn = self._cluster.open_connection(node)
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
                conn = await self._cluster.connection(node)
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
                with self._acc.lock:
                    self._acc.done_in_flight(batch)
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
                error = for_code(answer.error_code)(text)
                self._on_error(batch, error, f"{error} (broker {node})")
            else:
                self._finish(batch, answer.base_offset, answer.log_append_time_ms)

    def _build_request(self, batches: list[ProducerBatch]) -> ProduceRequest:
        by_topic: dict[str, list[ProducePartition]] = {}
        for batch in batches:
            payload = batch.payload(self.codec, self._txn is not None)
            part = ProducePartition(batch.tp.partition, Records(payload))
            by_topic.setdefault(batch.tp.topic, []).append(part)
        topics = [ProduceTopic(name, parts) for name, parts in by_topic.items()]
        # a transactional producer names its id: the leader checks with the coordinator that
        # each partition is in the ongoing transaction (KIP-890)
        tid = self._txn.transactional_id if self._txn is not None else None
        return ProduceRequest(self.acks, self.request_timeout_ms, topics, tid)

    def _finish(self, batch: ProducerBatch, base_offset: int, append_time_ms: int) -> None:
        self._failing.pop(batch.tp, None)
        with self._acc.lock:
            self._acc.done_in_flight(batch)
            wake = self._acc.may_send_after(batch.tp)
        batch.complete(base_offset, append_time_ms)
        self._progress.set()
        if wake:
            self._wake.set()

    def _on_error(self, batch: ProducerBatch, error: OdradekError, why: str) -> None:
        """A failed attempt (`why`: the error, and where it came from): retry or fail."""
        with self._acc.lock:
            final = self._retry_or_settle(batch, error, why)
            if final is None:
                return
        batch.fail(final)
        if self._txn is not None:
            self._txn_failed(final)  # the transaction can only be aborted (or is fenced)
        self._progress.set()
        self._wake.set()

    def _retry_or_settle(
        self, batch: ProducerBatch, error: OdradekError, why: str
    ) -> OdradekError | None:
        """Under the accumulator's lock: requeue a retriable failure (None), else settle the
        batch and return the error to fail it with."""
        acc = self._acc
        batch.last_error = self._failing[batch.tp] = why
        now_ms = self._clock.monotonic_ms()
        retry_at = now_ms + self.retry_backoff_ms
        lost = acc.gap_before(batch) if isinstance(error, OutOfOrderSequenceNumberError) else None
        if lost is not None:  # no retry can fill the gap before it
            error = OutOfOrderSequenceNumberError(
                f"{_name(batch.tp)}: the batch at sequence {lost} before this one (sequence "
                f"{batch.base_sequence}, epoch {batch.producer_epoch}) was lost"
            )
        elif (
            error.retriable
            and not self._closed_hard()
            and batch.attempts <= self.retries
            and retry_at < batch.deadline_ms
        ):
            if error.invalid_metadata:
                self._refresh_metadata()
            acc.requeue(batch, retry_at)
            self._wake.set()
            return None
        elif error.retriable and retry_at >= batch.deadline_ms:
            error = RequestTimedOutError(self._expiry_message(batch))
        acc.done_in_flight(batch)
        acc.sequence_lost(batch)
        return error

    # ----- producer id (InitProducerId) -------------------------------------------------------

    def _await_producer_id(self, now_ms: int) -> int:
        """The sender's pass while an id is due: start InitProducerId unless one is under way
        or backing off; ms until the next pass (batches may expire meanwhile; the request
        wakes the sender when it ends). Retries of numbered batches still go meanwhile."""
        if self._pid_task is None:
            if now_ms < self._pid_retry_at_ms:
                return self._pid_retry_at_ms - now_ms
            self._pid_task = asyncio.create_task(self._init_producer_id())
            self._requests.add(self._pid_task)
            self._pid_task.add_done_callback(self._requests.discard)
        return self.retry_backoff_ms

    async def _init_producer_id(self) -> None:
        """Ask any broker for an id: a fresh one the first time, else the next epoch of ours."""
        acc = self._acc
        request = InitProducerIdRequest(None, self.request_timeout_ms)
        if acc.producer_id >= 0:
            request = InitProducerIdRequest(
                None, self.request_timeout_ms, acc.producer_id, acc.producer_epoch
            )
        try:
            resp: InitProducerIdResponse = await self._cluster.send_to_any(request)
            if resp.error_code != 0:
                raise for_code(resp.error_code)(resp.error_message or "InitProducerId refused")
        except OdradekError as exc:
            self._pid_retry_at_ms = self._clock.monotonic_ms() + self.retry_backoff_ms
            self._pid_error = str(exc)
            if not exc.retriable:
                self._fail_queued(type(exc)(f"no producer id: {exc.message}"))
        else:
            with acc.lock:
                acc.reset_producer(resp.producer_id, resp.producer_epoch)
                acc.awaiting_producer_id = False
            self._pid_error = None
        finally:
            self._pid_task = None
            self._wake.set()

    def _fail_queued(self, error: OdradekError) -> None:
        with self._acc.lock:
            aborted = self._acc.abort_all()
        for batch in aborted:
            batch.fail(error)
        self._progress.set()

    def _closed_hard(self) -> bool:
        return self._sender is None or self._sender.done()


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _sooner(a: int | None, b: int | None) -> int | None:
    """The earlier of two waits in ms; None is no wait at all."""
    return b if a is None else a if b is None else min(a, b)
