"""Executor side: read one offset range of one partition into Arrow record batches.

A Spark task gets a `RangePartition` (picklable: plain values, no sockets) and calls
`read_range`. The task's worker process keeps one event loop and one `client.cluster.Cluster`
(metadata plus a connection per broker) per bootstrap string in module state, so tasks that
Spark runs one after another in the same Python worker reuse their connections.

Fetching is the consumer's engine (client/fetcher.py `Fetcher`): the range's partition is
assigned to a `SubscriptionState` of its own at `from_offset`, and the fetcher sends, retries,
follows leader changes (a stale-metadata error or a lost connection refreshes the metadata) and
prefetches (the next fetch goes out when an answer arrives, before it is decoded), never past
`until_offset`. This module only drives it, step by step on the worker's loop:
- records: `Fetcher.drain_segments` hands over the answer's whole batches (CRC-checked) cut to
  [from, until), and the C record walker (protocol/columns.py) fills Arrow buffers straight
  from their bytes (views of the answer's frame: the records are not copied before that
  fill), one `pa.RecordBatch` per answer against the schema of
  spark_connector/schema.py, no Python object per record. The `topic` and `partition`
  columns, the same in every row of a range, are built once per range (`ConstantColumns`)
  and each answer's batch takes a zero-copy slice of them: built per answer, they cost about
  10 ns per record, 5-10% of a task's own CPU at 100 B. Control batches (transaction
  markers) are skipped, as Spark's Kafka source does. With `kafka.isolation.level`
  read_committed the fetches carry that level: the leader answers up to the last stable
  offset, and the batches of aborted transactions are dropped by their headers on arrival
  (client/read_committed.py), the range moving past them;
- OFFSET_OUT_OF_RANGE (the fetcher raises it: the subscription has no reset policy): ask the
  leader for its log start and high watermark (client/offset_lookup.py); offsets below the
  log start were deleted by retention, offsets at or above the end were truncated away.
  Either is data loss: an error with `failOnDataLoss=true`, else a warning and the rest is
  read;
- nothing new and the leader's log ends before the offset wanted, three answers in a row: the
  range was truncated (data loss, as above).
Compacted topics (Kafka's log cleaner): a range of offsets holds the records left in it, fewer
than its size, as with Spark's Kafka source. Offsets the cleaner took out of a batch, empty
batches and whole batches gone (gaps) are passed as the batches' ends say (protocol/columns.py
`segments`); a next batch that starts at or past the range's end ends the range; and when the
leader has nothing from the offset wanted up to its high watermark, three answers in a row,
those offsets were cleaned away: the range moves on to the high watermark. None of it is data
loss: the offsets are within the log, their records are gone by the topic's own policy.
Without progress for `poll_timeout_ms` the task fails with a message saying where it stuck.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import uvloop
from pyspark.sql.datasource import InputPartition

from client.cluster import Cluster
from client.fetcher import FetchConfig, Fetcher
from client.offset_lookup import OffsetLookup
from client.subscription import NONE, SubscriptionState
from client.types import ConsumerRecord, TopicPartition
from protocol.api.fetch import READ_UNCOMMITTED
from protocol.batch import InvalidBatchError, iter_batches
from protocol.columns import US_PER_MS, Segment, arrow_arrays, segments, to_buffers, to_records
from protocol.errors import OdradekError, OffsetOutOfRangeError, RequestTimedOutError
from spark_connector.ranges import DataLoss
from spark_connector.schema import ARROW_SCHEMA, ARROW_SCHEMA_WITH_HEADERS, ARROW_TIMESTAMP
from spark_connector.security import Props, security_config

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
        isolation_level: int = READ_UNCOMMITTED,  # READ_COMMITTED: aborted batches dropped
        security: Props = (),  # the kafka.* security properties (spark_connector/security.py)
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
        self.isolation_level = isolation_level
        self.security = security

    def __repr__(self) -> str:
        return (
            f"RangePartition({self.topic}/{self.partition} {self.from_offset}..{self.until_offset})"
        )


# ----- per-worker state -----------------------------------------------------------------------


class _WorkerState:
    """One event loop and one Cluster per bootstrap and security settings, for this process
    (re-made after a fork)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = uvloop.new_event_loop()
        self.clusters: dict[tuple[str, Props], Cluster] = {}

    def cluster(self, bootstrap: str, security: Props = ()) -> Cluster:
        cluster = self.clusters.get((bootstrap, security))
        if cluster is None:
            cluster = self.run(_make_cluster(bootstrap, security))
            self.clusters[(bootstrap, security)] = cluster
        return cluster

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)


async def _make_cluster(bootstrap: str, security: Props) -> Cluster:
    return Cluster(
        bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS, security=security_config(security)
    )


_STATE: _WorkerState | None = None


def worker_state() -> _WorkerState:
    global _STATE
    if _STATE is None or _STATE.pid != os.getpid():
        _STATE = _WorkerState()
    return _STATE


# ----- reading a range ---------------------------------------------------------------------


class _RangeReader:
    """Drives one Fetcher over [from_offset, until_offset) of one partition."""

    def __init__(self, part: RangePartition) -> None:
        self.part = part
        self.state = worker_state()
        cluster = self.state.cluster(part.bootstrap, part.security)
        cluster.add_topics([part.topic])
        self.tp = TopicPartition(part.topic, part.partition)
        self.subs = SubscriptionState(NONE)
        self.subs.assign([self.tp])
        self.subs.seek(self.tp, part.from_offset)
        config = FetchConfig(
            fetch_max_bytes=part.fetch_max_bytes, max_partition_fetch_bytes=part.fetch_max_bytes,
            fetch_max_wait_ms=FETCH_MAX_WAIT_MS, request_timeout_ms=REQUEST_TIMEOUT_MS,
            retry_backoff_ms=int(RETRY_BACKOFF_S * 1000), isolation_level=part.isolation_level,
        )  # fmt: skip
        self.fetcher = Fetcher(cluster, self.subs, config)
        self.fetcher.stop_at(self.tp, part.until_offset)
        self.lookup = OffsetLookup(
            cluster, self.subs, part.isolation_level, REQUEST_TIMEOUT_MS,
            self.fetcher.refresh_metadata,
        )  # fmt: skip
        self.offset = part.from_offset
        self.constants = ConstantColumns(part.topic, part.partition)
        self.last_progress_s = time.monotonic()
        self.last_error: str = "no answer yet"

    def batches(self) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._batches()
        finally:
            self.state.run(self.fetcher.close())

    def _batches(self) -> Iterator[pa.RecordBatch]:
        part = self.part
        while self.offset < part.until_offset:
            self._check_stuck()
            segs, next_offset = self.state.run(self._step())
            if next_offset > self.offset:
                self.offset = next_offset
                self.last_progress_s = time.monotonic()
            if segs:  # compaction may have left none of their records in the range
                batch = segments_to_arrow(segs, part.topic, part.partition, part.include_headers,
                                          self.constants)  # fmt: skip
                segs = []  # the answer's frame is free for the next (protocol/framing.py)
                if batch.num_rows:
                    yield batch

    async def _step(self) -> tuple[list[Segment], int]:
        """One turn: errors the last fetches left, buffered records, else the next fetch."""
        fetcher, tp = self.fetcher, self.tp
        try:
            fetcher.raise_errors()
        except OffsetOutOfRangeError:
            await self._on_out_of_range()
            return [], self.offset
        except InvalidBatchError:
            raise
        except (OdradekError, OSError) as exc:  # retried until poll_timeout_ms
            self.last_error = str(exc) or type(exc).__name__
            fetcher.refresh_metadata()
        got = fetcher.drain_segments(tp, self.part.until_offset)
        fetcher.send_fetches()
        if got[1] > self.offset:
            return got
        await fetcher.wait(FETCH_MAX_WAIT_MS * 2 / 1000)
        empty, log_end = fetcher.empty_answers(tp)
        high_watermark = self.subs.high_watermark(tp)
        if empty >= EMPTY_POLLS_BEFORE_TRUNCATION:
            if max(log_end, high_watermark) <= self.offset:
                self._on_missing_tail(log_end)
            elif self.offset < high_watermark:
                self._on_cleaned_away(high_watermark)
        return [], self.offset

    def _check_stuck(self) -> None:
        waited_s = time.monotonic() - self.last_progress_s
        if waited_s * 1000 > self.part.poll_timeout_ms:
            p = self.part
            raise RequestTimedOutError(
                f"{p.topic}/{p.partition}: no progress at offset {self.offset} (reading up to "
                f"{p.until_offset}) for {waited_s:.0f} s; last problem: {self.last_error}"
            )

    async def _on_out_of_range(self) -> None:
        p = self.part
        try:
            start, end = await self.lookup.log_bounds(self.tp)
        except OdradekError as exc:
            self.last_error = str(exc)
            self.fetcher.refresh_metadata()
            await asyncio.sleep(RETRY_BACKOFF_S)
            return
        if self.offset < start:
            until = min(start, p.until_offset)
            self._lost(DataLoss(p.topic, p.partition, self.offset, until, "deleted by retention"))
            self._move_to(until)
        elif self.offset >= end:
            self._on_missing_tail(end)

    def _on_missing_tail(self, log_end: int) -> None:
        p = self.part
        reason = f"the log now ends at {log_end}: truncated"
        self._lost(DataLoss(p.topic, p.partition, self.offset, p.until_offset, reason))
        self._move_to(p.until_offset)

    def _on_cleaned_away(self, high_watermark: int) -> None:
        """Answers without records, though the offset wanted is below the high watermark: the
        log holds no record from there up to it (the log cleaner removed the batches that ended
        the log). Spark's Kafka source skips offsets it cannot see below the end the same way."""
        p = self.part
        until = min(high_watermark, p.until_offset)
        log.debug("%s/%d: offsets %d..%d hold no record (compacted)", p.topic, p.partition,
                  self.offset, until - 1)  # fmt: skip
        self._move_to(until)
        self.last_progress_s = time.monotonic()

    def _move_to(self, offset: int) -> None:
        self.offset = offset
        self.fetcher.clear({self.tp})
        self.subs.seek(self.tp, offset)

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
    """The records of `data`'s whole batches (CRC-checked) with offsets in [from, until) as one
    RecordBatch (None when there are none), and the offset to fetch next."""
    batches = list(iter_batches(data, check_crc=True))
    segs, next_offset = segments(data, batches, from_offset, until_offset)
    if not segs:
        return None, next_offset
    batch = segments_to_arrow(segs, topic, partition, include_headers)
    return (batch if batch.num_rows else None), next_offset


class ConstantColumns:
    """A range's `topic` and `partition` columns: built once, at least as long as the longest
    batch asked for (grown by doubling), each batch's a zero-copy slice from row 0."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = pa.scalar(topic, pa.string())
        self.partition = pa.scalar(partition, pa.int32())
        self.rows = 0
        self.topics: pa.Array = pa.repeat(self.topic, 0)
        self.partitions: pa.Array = pa.repeat(self.partition, 0)

    def take(self, n: int) -> tuple[pa.Array, pa.Array]:
        if n > self.rows:
            self.rows = max(n, 2 * self.rows)
            self.topics = pa.repeat(self.topic, self.rows)
            self.partitions = pa.repeat(self.partition, self.rows)
        return self.topics.slice(0, n), self.partitions.slice(0, n)


def segments_to_arrow(
    segs: list[Segment], topic: str, partition: int, include_headers: bool,
    constants: ConstantColumns | None = None,
) -> pa.RecordBatch:  # fmt: skip
    """One RecordBatch of the segments' records: key, value, offset, timestamp (us) and
    timestampType over the buffers the C walker filled (not copied), topic and partition
    repeated (slices of `constants`, made for this call when None: a range's reader keeps
    one). Raises CorruptRecordError for records that do not hold up."""
    cols = arrow_arrays(to_buffers(segs, include_headers, US_PER_MS))
    n = len(cols["offset"])
    topics, partitions = (constants or ConstantColumns(topic, partition)).take(n)
    arrays = [
        cols["key"],
        cols["value"],
        topics,
        partitions,
        cols["offset"],
        cols["timestamp"].view(ARROW_TIMESTAMP),
        cols["timestampType"],
    ]
    if include_headers:
        arrays.append(cols["headers"])
    schema = ARROW_SCHEMA_WITH_HEADERS if include_headers else ARROW_SCHEMA
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# ----- timestamps -------------------------------------------------------------------------------


async def _first_at_or_after(
    cluster: Cluster, topic: str, partition: int, offset: int, target_ms: int, max_fetches: int
) -> int:
    tp = TopicPartition(topic, partition)
    cluster.add_topics([topic])
    subs = SubscriptionState(NONE)
    subs.assign([tp])
    subs.seek(tp, offset)
    config = FetchConfig(fetch_max_bytes=1 << 20, max_partition_fetch_bytes=1 << 20,
                         fetch_max_wait_ms=FETCH_MAX_WAIT_MS)  # fmt: skip
    fetcher = Fetcher(cluster, subs, config)
    try:
        for _ in range(max_fetches):
            segs, next_offset = await _next_answer(fetcher, tp)
            if next_offset <= offset:
                return offset
            for record in to_records(ConsumerRecord, topic, partition, segs):
                if record.timestamp >= target_ms:  # LogAppendTime: the batch's max timestamp
                    return int(record.offset)
            offset = next_offset
    finally:
        await fetcher.close()
    return offset


async def _next_answer(fetcher: Fetcher, tp: TopicPartition) -> tuple[list[Segment], int]:
    """The records of the next answer for `tp` ([] and the position when it brought none, or an
    error, or none came within the request timeout)."""
    position = fetcher.drain_segments(tp, 2**63 - 1)[1]
    empty_before = fetcher.empty_answers(tp)[0]
    deadline = time.monotonic() + (REQUEST_TIMEOUT_MS + FETCH_MAX_WAIT_MS) / 1000
    while time.monotonic() < deadline:
        try:
            fetcher.raise_errors()
        except OdradekError:
            break
        fetcher.send_fetches()
        await fetcher.wait(FETCH_MAX_WAIT_MS / 1000)
        got = fetcher.drain_segments(tp, 2**63 - 1)
        if got[1] > position or fetcher.empty_answers(tp)[0] > empty_before:
            return got
    return [], position


def first_offset_at_or_after(
    bootstrap: str,
    topic: str,
    partition: int,
    offset: int,
    target_ms: int,
    max_fetches: int = 4,
    security: Props = (),
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
                state.cluster(bootstrap, security),
                topic,
                partition,
                offset,
                target_ms,
                max_fetches,
            )
        )
    )
