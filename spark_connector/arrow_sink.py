"""The sinks' write path on Arrow: a task's pyarrow RecordBatches into Kafka record batches.

Spark 4's `DataSourceArrowWriter` / `DataSourceStreamArrowWriter` hand a task the rows it
writes as Arrow record batches (the columns of spark_connector/writer.py: key, value, topic,
partition, headers). For each one, with no Python object per row:

1. each row's partition: the `partition` column where it is not null, else Kafka's default
   partitioner, `toPositive(murmur2(key)) % partitions` (C: protocol/_encoder.c
   `murmur2_arrow`, then pyarrow's compute kernels), and for a null key one partition picked
   for the whole Arrow batch (as the producer's sticky partitioner does for key-less records);
   with a `topic` column (and no `topic` option), per topic;
2. the row numbers grouped by partition, in row order within each (pyarrow's stable
   `sort_indices`, then `value_counts` of the sorted partitions: one Python step per
   partition, not per row);
3. each group encoded straight from the Arrow buffers (C: `encode_arrow`, offsets checked
   against their buffers) into record batches of at most `batch_size` bytes, every record
   with the batch's timestamp, and queued whole with `AsyncProducer.send_built`: the
   producer's accumulator stamps the producer id, sequence and transactional bit, so the
   exactly-once sink's transactions (spark_connector/exactly_once.py) hold them as any other.

`send_arrow` returns the number of rows once every batch is acknowledged, raising the first
delivery failure (writer.py's `settle`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from client import AsyncProducer
from protocol._encoder import encode_arrow, murmur2_arrow
from protocol.batch import build_batch_from_section
from protocol.errors import UsageError

MAX_PENDING_BATCHES = 1_000  # await acknowledgements before queueing more record batches
NULL_KEY = -1  # murmur2_arrow's hash of a null key
Settle = Callable[[list[Any]], Awaitable[None]]


def column_spec(arr: pa.Array) -> tuple[int, Any, Any, Any, int, int]:
    """A binary or string column as encode_arrow takes it (protocol/_encoder.c)."""
    if not (
        pa.types.is_binary(arr.type)
        or pa.types.is_string(arr.type)
        or pa.types.is_large_binary(arr.type)
        or pa.types.is_large_string(arr.type)
    ):
        raise UsageError(f"a binary or string column is needed, not {arr.type}")  # fmt: skip
    large = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
    validity, offsets, data = arr.buffers()[:3]
    return (len(arr), validity, offsets, data, arr.offset, int(large))


def headers_spec(arr: pa.Array) -> tuple[int, Any, Any, int, Any, Any]:
    """A list<struct<key string, value binary>> column as encode_arrow takes it."""
    validity, offsets = arr.buffers()[:2]
    keys, values = arr.values.flatten()  # the struct's own offset and nulls applied
    return (len(arr), validity, offsets, arr.offset, column_spec(keys), column_spec(values))


def _positive_hashes(key: pa.Array | None, n: int) -> pa.Array:
    """Kafka's toPositive(murmur2(key)) per row as int32 (NULL_KEY for a null key)."""
    if key is None:
        return pa.repeat(pa.scalar(NULL_KEY, pa.int32()), n)
    hashes = murmur2_arrow(column_spec(key))
    return pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(hashes)])


def partitions_of(hashes: pa.Array, given: pa.Array | None, count: int, pick: int) -> pa.Array:
    """Each row's partition (int32): `given` where not null, else hash % count, else (a null
    key) `pick`, the one partition of the batch's key-less rows. UsageError for a given one out
    of range."""
    by_key = pc.subtract(hashes, pc.multiply(pc.divide(hashes, count), count))
    if pc.any(pc.equal(hashes, NULL_KEY)).as_py():
        by_key = pc.if_else(pc.equal(hashes, NULL_KEY), pa.scalar(pick, pa.int32()), by_key)
    if given is None:
        return by_key
    given = given.cast(pa.int32())
    low, high = pc.min_max(given).values()
    if low.is_valid and (low.as_py() < 0 or high.as_py() >= count):
        raise UsageError(f"partition column: {low.as_py()}..{high.as_py()} is out of range for "
                         f"a topic of {count} partitions")  # fmt: skip
    return pc.if_else(pc.is_null(given), by_key, given)


def groups(parts: pa.Array, rows: pa.Array | None) -> Iterator[tuple[int, pa.Buffer]]:
    """(partition, int64 row numbers of its rows, in row order) for each partition present;
    `rows` maps positions in `parts` to row numbers (None: the same)."""
    order = pc.sort_indices(parts)  # stable: rows of one partition keep their order
    if rows is not None:
        order = rows.take(order)
    order = order.cast(pa.int64())
    sorted_parts = parts.take(pc.sort_indices(parts))
    counts = pc.value_counts(sorted_parts)  # in order of first appearance: ascending here
    buf, start = order.buffers()[1], order.offset
    for item in counts:
        part, count = item["values"].as_py(), item["counts"].as_py()
        yield part, buf.slice(8 * start, 8 * count)
        start += count


class ArrowSender:
    """One task's sends: the topic's partition counts asked once, the batches acknowledged
    as they go."""

    def __init__(
        self, producer: AsyncProducer, topic: str | None, layout: Any, batch_bytes: int,
        settle: Settle, now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:  # fmt: skip
        self.producer = producer
        self.topic = topic
        self.layout = layout  # writer.RowLayout: where each column is
        self.batch_bytes = batch_bytes
        self.settle = settle
        self.now_ms = now_ms
        self.counts: dict[str, int] = {}
        self.pending: list[Any] = []

    async def send_arrow(self, batches: Iterator[pa.RecordBatch]) -> int:
        rows = 0
        for batch in batches:
            if batch.num_rows:
                rows += await self._send_batch(batch)
            if len(self.pending) >= MAX_PENDING_BATCHES:
                await self.settle(self.pending)
        await self.producer.flush()
        await self.settle(self.pending)
        return rows

    async def _partition_count(self, topic: str) -> int:
        if topic not in self.counts:
            self.counts[topic] = len(await self.producer.partitions_for(topic))
        return self.counts[topic]

    async def _send_batch(self, batch: pa.RecordBatch) -> int:
        lay = self.layout
        col = batch.column
        key = None if lay.key is None else col(lay.key)
        specs = (None if key is None else column_spec(key), column_spec(col(lay.value)),
                 None if lay.headers is None else headers_spec(col(lay.headers)))  # fmt: skip
        hashes = _positive_hashes(key, batch.num_rows)
        given = None if lay.partition is None else col(lay.partition)
        for topic, rows in self._topics(batch):
            count = await self._partition_count(topic)
            sub_hashes = hashes if rows is None else hashes.take(rows)
            sub_given = given if given is None or rows is None else given.take(rows)
            pick = random.randrange(count)  # spreading key-less rows, not a secret
            parts = partitions_of(sub_hashes, sub_given, count, pick)
            for partition, indices in groups(parts, rows):
                await self._send_group(topic, partition, specs, indices)
        return int(batch.num_rows)

    def _topics(self, batch: pa.RecordBatch) -> Iterator[tuple[str, pa.Array | None]]:
        """(topic, its rows or None for all of them)."""
        if self.layout.topic is None:
            assert self.topic is not None  # check_write_schema: the option or the column
            yield self.topic, None
            return
        topics = batch.column(self.layout.topic)
        if topics.null_count:
            raise UsageError("a row has no topic (null topic column, no topic option)")
        for topic in pc.unique(topics).to_pylist():
            if not topic:
                raise UsageError("a row has an empty topic")
            yield topic, pc.indices_nonzero(pc.equal(topics, topic))

    async def _send_group(self, topic: str, partition: int, specs: Any, indices: pa.Buffer) -> None:
        start, total = 0, indices.size // 8
        while start < total:
            key, value, headers = specs
            section, stop = encode_arrow(key, value, headers, indices, start, self.batch_bytes)
            now = self.now_ms()
            payload = build_batch_from_section(section, stop - start, now)
            self.pending.append(
                await self.producer.send_built(topic, partition, payload, stop - start, now)
            )
            start = stop
