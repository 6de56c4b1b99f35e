"""Executor side: read one offset range of one partition into Arrow record batches.

A Spark task gets a `RangePartition` (picklable: plain values, no sockets) and calls
`read_range`. The task's worker process keeps one event loop and one `client.cluster.Cluster`
(metadata plus a connection per broker) per bootstrap string in module state, so tasks that
Spark runs one after another in the same Python worker reuse their connections.

The loop, per Fetch request to the partition's leader (one partition, `fetch_max_bytes`):
- records: the whole batches in the answer are CRC-checked, decoded into columns by the
  compiled record decoder (protocol/batch.py `decode_columns`), cut to [from, until), and
  each column converted to Arrow in one call; the result is one `pa.RecordBatch` per answer
  against the explicit schema of spark_connector/schema.py. No per-row Python work. Control
  batches (transaction markers) are skipped, as Spark's Kafka source does. The next fetch is
  sent before the answer is decoded (from the batch headers alone), so the broker serves it
  meanwhile;
- a lost connection or a stale-metadata error (NOT_LEADER_FOR_PARTITION, a broker killed
  mid-read, ...): refresh the metadata and ask the new leader, after a short backoff;
- OFFSET_OUT_OF_RANGE: ask the leader for its log start and high watermark; offsets below the
  log start were deleted by retention, offsets at or above the end were truncated away. Either
  is data loss: an error with `failOnDataLoss=true`, else a warning and the rest is read;
- nothing new and the leader's log ends before the offset wanted, three times in a row: the
  range was truncated (data loss, as above).
Without progress for `poll_timeout_ms` the task fails with a message saying where it stuck.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import uvloop
from pyspark.sql.datasource import InputPartition

from client.cluster import Cluster
from client.fetcher import gc_paused
from protocol.api.fetch import (
    CONSUMER_REPLICA_ID,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchTopic,
)
from protocol.api.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.batch import (
    CONTROL_BIT,
    TIMESTAMP_TYPE_BIT,
    InvalidBatchError,
    RecordColumns,
    decode_columns,
    iter_batches,
)
from protocol.errors import (
    OdradekError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    for_code,
)
from spark_connector.ranges import DataLoss
from spark_connector.schema import (
    ARROW_HEADERS,
    ARROW_SCHEMA,
    ARROW_SCHEMA_WITH_HEADERS,
    ARROW_TIMESTAMP,
)

log = logging.getLogger("spark_connector")

FETCH_MAX_WAIT_MS = 500
RETRY_BACKOFF_S = 0.1
EMPTY_POLLS_BEFORE_TRUNCATION = 3
REQUEST_TIMEOUT_MS = 30_000


class DataLossError(OdradekError):
    """Records a query was asked to read are gone, and failOnDataLoss is true."""

    name = "DATA_LOSS"


class RangePartition(InputPartition):
    """What one Spark task reads: offsets [from_offset, until_offset) of one partition."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partition: int,
        from_offset: int,
        until_offset: int,
        fail_on_data_loss: bool = True,
        include_headers: bool = False,
        poll_timeout_ms: int = 120_000,
        fetch_max_bytes: int = 4 * 1024 * 1024,
    ) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partition = partition
        self.from_offset = from_offset
        self.until_offset = until_offset
        self.fail_on_data_loss = fail_on_data_loss
        self.include_headers = include_headers
        self.poll_timeout_ms = poll_timeout_ms
        self.fetch_max_bytes = fetch_max_bytes

    def __repr__(self) -> str:
        return (
            f"RangePartition({self.topic}/{self.partition} {self.from_offset}..{self.until_offset})"
        )


# ----- per-worker state -----------------------------------------------------------------------


class _WorkerState:
    """One event loop and one Cluster per bootstrap, for this process (re-made after a fork)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = uvloop.new_event_loop()
        self.clusters: dict[str, Cluster] = {}

    def cluster(self, bootstrap: str) -> Cluster:
        cluster = self.clusters.get(bootstrap)
        if cluster is None:
            cluster = self.run(_make_cluster(bootstrap))
            self.clusters[bootstrap] = cluster
        return cluster

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)


async def _make_cluster(bootstrap: str) -> Cluster:
    return Cluster(bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS)


_STATE: _WorkerState | None = None


def worker_state() -> _WorkerState:
    global _STATE
    if _STATE is None or _STATE.pid != os.getpid():
        _STATE = _WorkerState()
    return _STATE


# ----- fetching -------------------------------------------------------------------------------


async def _leader_connection(cluster: Cluster, topic: str, partition: int) -> Any:
    cluster.add_topics([topic])
    meta = cluster.metadata
    leader = meta.leader_for(topic, partition)
    if leader < 0 or leader not in meta.brokers:
        meta = await cluster.request_update()
        leader = meta.leader_for(topic, partition)
    if leader < 0 or leader not in meta.brokers:
        raise OdradekError(f"{topic}/{partition} has no leader")
    return await cluster.connection(leader)


async def _fetch(
    cluster: Cluster, part: RangePartition, offset: int
) -> FetchPartitionResponse | None:
    conn = await _leader_connection(cluster, part.topic, part.partition)
    request = FetchRequest(
        CONSUMER_REPLICA_ID, FETCH_MAX_WAIT_MS, 1, part.fetch_max_bytes,
        [FetchTopic(part.topic, [FetchPartition(part.partition, offset, part.fetch_max_bytes)])],
    )  # fmt: skip
    resp = await conn.send(request, REQUEST_TIMEOUT_MS + FETCH_MAX_WAIT_MS)
    for t in resp.topics:
        for p in t.partitions:
            if t.name == part.topic and p.partition == part.partition:
                return p
    return None


async def _log_bounds(cluster: Cluster, topic: str, partition: int) -> tuple[int, int]:
    """(log start, high watermark) from the leader."""
    conn = await _leader_connection(cluster, topic, partition)
    out = []
    for ts in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP):
        request = ListOffsetsRequest(
            CONSUMER_REPLICA_ID, [ListOffsetsTopic(topic, [ListOffsetsPartition(partition, ts)])]
        )
        resp: ListOffsetsResponse = await conn.send(request, REQUEST_TIMEOUT_MS)
        p = resp.topics[0].partitions[0]
        if p.error_code:
            raise for_code(p.error_code)(f"{topic}/{partition}: listing offsets failed")
        out.append(p.offset)
    return out[0], out[1]


def _retrieve(task: asyncio.Task[Any]) -> None:
    """A fetch sent ahead and then not used: its error (if any) counts as seen."""
    if not task.cancelled():
        task.exception()


async def _refresh(cluster: Cluster) -> None:
    # every broker unreachable for now: the caller backs off and tries again
    with contextlib.suppress(OdradekError):
        await cluster.request_update()
    await asyncio.sleep(RETRY_BACKOFF_S)


class _RangeReader:
    def __init__(self, part: RangePartition) -> None:
        self.part = part
        self.state = worker_state()
        self.cluster = self.state.cluster(part.bootstrap)
        self.offset = part.from_offset
        self.empty_polls = 0
        self.last_progress_s = time.monotonic()
        self.last_error: str = "no answer yet"
        self.ahead: tuple[int, asyncio.Task[FetchPartitionResponse | None]] | None = None

    def batches(self) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._batches()
        finally:
            self.close()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        part = self.part
        while self.offset < part.until_offset:
            self._check_stuck()
            answer = self._fetch_once()
            if answer is None:
                continue
            if answer.error_code == OffsetOutOfRangeError.code:
                self._on_out_of_range()
                continue
            if answer.error_code:
                self.last_error = for_code(answer.error_code).name
                self.state.run(_refresh(self.cluster))
                continue
            self._fetch_ahead(answer.records)
            batch, next_offset = records_to_arrow(
                answer.records, part.topic, part.partition, self.offset, part.until_offset,
                part.include_headers,
            )  # fmt: skip
            if next_offset > self.offset:
                self.offset, self.empty_polls = next_offset, 0
                self.last_progress_s = time.monotonic()
                if batch is not None:
                    yield batch
            elif answer.log_end_offset <= self.offset and answer.high_watermark <= self.offset:
                self._on_missing_tail(answer.log_end_offset)

    def _fetch_once(self) -> FetchPartitionResponse | None:
        ahead, self.ahead = self.ahead, None
        try:
            if ahead is not None and ahead[0] == self.offset:
                answer = self.state.run(ahead[1])
            else:
                if ahead is not None:
                    ahead[1].cancel()
                answer = self.state.run(_fetch(self.cluster, self.part, self.offset))
        except (OdradekError, OSError) as exc:
            if isinstance(exc, InvalidBatchError):
                raise
            self.last_error = str(exc)
            self.state.run(_refresh(self.cluster))
            return None
        if answer is None:
            self.last_error = "the leader did not answer for this partition"
        return answer

    def _fetch_ahead(self, data: bytes) -> None:
        """Send the next fetch now, so the broker serves it while this answer is decoded."""
        nxt = self.offset
        for _pos, h in iter_batches(data, check_crc=False):
            nxt = max(nxt, h.next_offset)
        if self.offset < nxt < self.part.until_offset:
            task = self.state.loop.create_task(_fetch(self.cluster, self.part, nxt))
            task.add_done_callback(_retrieve)
            self.state.run(asyncio.sleep(0))  # one loop turn: the request goes on the wire
            self.ahead = (nxt, task)

    def close(self) -> None:
        if self.ahead is not None:
            self.ahead[1].cancel()
            self.ahead = None

    def _check_stuck(self) -> None:
        waited_s = time.monotonic() - self.last_progress_s
        if waited_s * 1000 > self.part.poll_timeout_ms:
            p = self.part
            raise RequestTimedOutError(
                f"{p.topic}/{p.partition}: no progress at offset {self.offset} (reading up to "
                f"{p.until_offset}) for {waited_s:.0f} s; last problem: {self.last_error}"
            )

    def _on_out_of_range(self) -> None:
        p = self.part
        try:
            start, end = self.state.run(_log_bounds(self.cluster, p.topic, p.partition))
        except OdradekError as exc:
            self.last_error = str(exc)
            self.state.run(_refresh(self.cluster))
            return
        if self.offset < start:
            until = min(start, p.until_offset)
            self._lost(DataLoss(p.topic, p.partition, self.offset, until, "deleted by retention"))
            self.offset = until
        elif self.offset >= end:
            self._on_missing_tail(end, confirmed=True)

    def _on_missing_tail(self, log_end: int, confirmed: bool = False) -> None:
        self.empty_polls += 1
        if confirmed or self.empty_polls >= EMPTY_POLLS_BEFORE_TRUNCATION:
            p = self.part
            reason = f"the log now ends at {log_end}: truncated"
            self._lost(DataLoss(p.topic, p.partition, self.offset, p.until_offset, reason))
            self.offset = p.until_offset

    def _lost(self, loss: DataLoss) -> None:
        if self.part.fail_on_data_loss:
            raise DataLossError(
                f"{loss.message()}. Some data may have been lost; set failOnDataLoss=false to "
                "skip it with a warning instead"
            )
        log.warning("%s; skipped (failOnDataLoss=false)", loss.message())
        self.last_progress_s = time.monotonic()


def read_range(part: RangePartition) -> Iterator[pa.RecordBatch]:
    """Every record of `part`'s range, in offset order, as Arrow record batches."""
    if part.until_offset <= part.from_offset:
        return iter(())
    return _RangeReader(part).batches()


# ----- decoding into Arrow ----------------------------------------------------------------------


def records_to_arrow(
    data: bytes | memoryview,
    topic: str,
    partition: int,
    from_offset: int,
    until_offset: int,
    include_headers: bool,
) -> tuple[pa.RecordBatch | None, int]:
    """The records of `data`'s whole batches with offsets in [from, until) as one RecordBatch
    (None when there are none), and the offset to fetch next.

    The cyclic garbage collector is paused meanwhile (`client.fetcher.gc_paused`): decoding
    allocates objects per record, which would set it off many times per fetch, and none of
    them can form a cycle.
    """
    cols = _Columns()
    next_offset = from_offset
    with gc_paused():
        for pos, h in iter_batches(data, check_crc=True):
            if h.next_offset <= from_offset:
                continue
            if h.base_offset >= until_offset:
                break
            base = h.base_offset
            lo, hi = max(from_offset - base, 0), min(until_offset - base, h.record_count)
            next_offset = base + hi if hi < h.record_count else h.next_offset
            if h.attributes & CONTROL_BIT:
                continue  # transaction markers, never records (Spark's Kafka source skips them)
            cols.add(decode_columns(data, pos, h), lo, hi, bool(h.attributes & TIMESTAMP_TYPE_BIT))
        if not cols.count:
            return None, next_offset
        return cols.to_batch(topic, partition, include_headers), next_offset


_US_PER_MS = pa.scalar(1000, pa.int64())  # a typed scalar: plain ints cost ~0.2 ms per call


class _Columns:
    """Decoded columns gathered batch by batch, converted to Arrow in one call per column.
    Timestamps come decoded (a LogAppendTime batch's records carry its max timestamp)."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.stamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[Any] = []
        self.kinds: list[tuple[int, bool]] = []  # (records, LogAppendTime) per batch
        self.count = 0

    def add(self, columns: RecordColumns, lo: int, hi: int, log_append: bool) -> None:
        """Records [lo, hi) of one batch's columns."""
        if hi <= lo:
            return
        if lo or hi < len(columns.offsets):
            columns = columns.sliced(lo, hi)
        self.offsets += columns.offsets
        self.stamps += columns.timestamps
        self.keys += columns.keys
        self.values += columns.values
        self.headers += columns.headers
        self.kinds.append((hi - lo, log_append))
        self.count += hi - lo

    def to_batch(self, topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
        n = self.count
        try:
            stamps = pc.multiply(pa.array(self.stamps, pa.int64()), _US_PER_MS)
            arrays = [
                pa.array(self.keys, pa.binary()),
                pa.array(self.values, pa.binary()),
                pa.repeat(pa.scalar(topic, pa.string()), n),
                pa.repeat(pa.scalar(partition, pa.int32()), n),
                pa.array(self.offsets, pa.int64()),
                stamps.cast(ARROW_TIMESTAMP),
                _timestamp_types(self.kinds),
            ]
            if include_headers:
                arrays.append(pa.array(self.headers, ARROW_HEADERS))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise InvalidBatchError(f"records do not fit Spark's Kafka schema: {exc}") from None
        schema = ARROW_SCHEMA_WITH_HEADERS if include_headers else ARROW_SCHEMA
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _timestamp_types(kinds: list[tuple[int, bool]]) -> pa.Array:
    """0 (CreateTime) or 1 (LogAppendTime) per record, from each batch's attribute bit."""
    if len({k[1] for k in kinds}) == 1:
        return pa.repeat(pa.scalar(int(kinds[0][1]), pa.int32()), sum(k[0] for k in kinds))
    return pa.array([int(log_append) for n, log_append in kinds for _ in range(n)], pa.int32())


# ----- timestamps -------------------------------------------------------------------------------


async def _first_at_or_after(
    cluster: Cluster, topic: str, partition: int, offset: int, target_ms: int, max_fetches: int
) -> int:
    part = RangePartition("", topic, partition, offset, offset + 1, fetch_max_bytes=1024 * 1024)
    for _ in range(max_fetches):
        answer = await _fetch(cluster, part, offset)
        if answer is None or answer.error_code or not answer.records:
            return offset
        data = answer.records
        for pos, h in iter_batches(data, check_crc=True):
            if h.next_offset <= offset:
                continue
            if h.attributes & TIMESTAMP_TYPE_BIT:
                if h.max_timestamp >= target_ms:
                    return max(offset, h.base_offset)
                offset = h.next_offset
                continue
            if not h.attributes & CONTROL_BIT:
                columns = decode_columns(data, pos, h)
                for at, ts in zip(columns.offsets, columns.timestamps, strict=True):
                    if at >= offset and ts >= target_ms:
                        return at
            offset = h.next_offset
    return offset


def first_offset_at_or_after(
    bootstrap: str, topic: str, partition: int, offset: int, target_ms: int, max_fetches: int = 4
) -> int:
    """The first offset at or after `offset` whose record's timestamp is >= `target_ms`.

    ListOffsets by timestamp answers with the first *batch* whose largest timestamp reaches the
    target (the broker never decodes records); this walks that batch's records, as Kafka's
    broker does, to find the record itself. Runs on the driver with the worker's loop.
    """
    state = worker_state()
    return int(
        state.run(
            _first_at_or_after(
                state.cluster(bootstrap), topic, partition, offset, target_ms, max_fetches
            )
        )
    )
