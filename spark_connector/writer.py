"""Writes: `df.write.format("odradek")` and `writeStream`, as Spark's Kafka sink does them.

Columns: `value` (required, binary or string), optional `key` (binary or string), `topic`
(string; the `topic` option, when set, wins over it, as in Spark), `partition` (int; else the
producer's partitioner: murmur2 of the key, or spread when key-less) and `headers`
(array<struct<key string, value binary>>). Anything else is refused when the write is planned,
in one line.

Each Spark task gets its rows as Arrow record batches (Spark 4's `DataSourceArrowWriter` and
`DataSourceStreamArrowWriter`), encodes them into Kafka record batches from the Arrow buffers
with no Python object per row (spark_connector/arrow_sink.py), and produces them through one
`client.AsyncProducer` (acks=all unless the `acks` option says otherwise) on the worker's
event loop, waits for every acknowledgement and fails the task on the first batch that could
not be delivered. By default the sink is
at-least-once, as Spark's Kafka sink is: a retried task sends its rows again.

With `exactlyOnce=true` (and a `transactionalIdPrefix`) each task attempt writes its rows in a
Kafka transaction of its own that it prepares (flushed, left open), and the driver's `commit`
commits every task's transaction, once all have prepared; `abort` aborts them
(spark_connector/exactly_once.py has the ids, the two phases and what a restart does). Readers
with `read_committed` then see each row exactly once; `read_uncommitted` readers see aborted
attempts' rows too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
)

from client import AsyncProducer
from protocol.errors import OdradekError, UsageError
from spark_connector import exactly_once as eo
from spark_connector.arrow_sink import ArrowSender
from spark_connector.fetch import worker_state
from spark_connector.options import WriteOptions
from spark_connector.schema import HEADER_TYPE
from spark_connector.security import client_options

_COLUMNS = ("key", "value", "topic", "partition", "headers")


@dataclass
class WriteCommit(WriterCommitMessage):
    records: int


@dataclass(frozen=True, slots=True)
class RowLayout:
    """Where each known column sits in a row (None: absent) and whether it is a string."""

    value: int
    key: int | None
    topic: int | None
    partition: int | None
    headers: int | None
    value_is_str: bool
    key_is_str: bool


def check_write_schema(schema: StructType, topic_option: str | None) -> RowLayout:
    names = [f.name.lower() for f in schema.fields]
    extra = [f.name for f in schema.fields if f.name.lower() not in _COLUMNS]
    if extra:
        raise UsageError(f"cannot write column(s) {extra}: only {list(_COLUMNS)} are written")
    if "value" not in names:
        raise UsageError("a 'value' column (binary or string) is required to write")
    types = {f.name.lower(): f.dataType for f in schema.fields}
    for col in ("key", "value"):
        if col in types and not isinstance(types[col], BinaryType | StringType):
            raise UsageError(f"column '{col}' must be binary or string, not {types[col]}")
    if "topic" in types and not isinstance(types["topic"], StringType):
        raise UsageError(f"column 'topic' must be a string, not {types['topic']}")
    if "partition" in types and not isinstance(
        types["partition"], IntegerType | ShortType | LongType
    ):
        raise UsageError(f"column 'partition' must be an int, not {types['partition']}")
    if "headers" in types and types["headers"] != ArrayType(HEADER_TYPE):
        raise UsageError("column 'headers' must be array<struct<key string, value binary>>")
    if "topic" not in types and topic_option is None:
        raise UsageError("no topic: give the 'topic' option or a 'topic' column")
    index = {n: i for i, n in enumerate(names)}
    return RowLayout(
        index["value"], index.get("key"), None if topic_option else index.get("topic"),
        index.get("partition"), index.get("headers"), isinstance(types["value"], StringType),
        "key" in types and isinstance(types["key"], StringType),
    )  # fmt: skip


async def _produce(opts: WriteOptions, layout: RowLayout, batches: Iterator[pa.RecordBatch]) -> int:
    producer = AsyncProducer(
        opts.bootstrap, acks=opts.acks, linger_ms=opts.linger_ms, batch_size=opts.batch_size,
        **client_options(opts.security),
    )  # fmt: skip
    await producer.start()
    try:
        return await _send(producer, opts, layout, batches)
    finally:
        await producer.close()


async def _send(
    producer: AsyncProducer, opts: WriteOptions, layout: RowLayout,
    batches: Iterator[pa.RecordBatch],
) -> int:  # fmt: skip
    """Send every row and wait for every acknowledgement; raise the first delivery failure."""
    sender = ArrowSender(producer, opts.topic, layout, opts.batch_size, _settle)
    return await sender.send_arrow(batches)


async def _settle(pending: list[Any]) -> None:
    """Wait for every future; raise the first delivery failure."""
    for future in pending:
        exc = await _wait(future)
        if exc is not None:
            raise OdradekError(f"a record could not be written: {exc}") from exc
    pending.clear()


async def _wait(future: Any) -> BaseException | None:
    try:
        await future
    except OdradekError as exc:
        return exc
    return None


def write_batches(
    opts: WriteOptions, layout: RowLayout, batches: Iterator[pa.RecordBatch],
    write_id: str | None = None,
) -> WriterCommitMessage:  # fmt: skip
    """A task's write: at-least-once, or (exactlyOnce) prepared in a transaction whose id is
    the batch write's (`write_id`) or the micro-batch's (Spark's task-local properties)."""
    state = worker_state()
    if not opts.exactly_once:
        return WriteCommit(state.run(_produce(opts, layout, batches)))
    assert opts.transactional_id_prefix is not None
    context = TaskContext.get()
    if context is None:
        raise OdradekError("exactlyOnce: write() runs outside a Spark task")
    base = eo.task_base(opts.transactional_id_prefix, write_id, context.getLocalProperty)
    config = {"linger_ms": opts.linger_ms, "batch_size": opts.batch_size,
              **client_options(opts.security)}  # fmt: skip
    return state.run(eo.prepare_rows(
        opts.bootstrap, base, context.partitionId(), context.taskAttemptId(),
        lambda producer: _send(producer, opts, layout, batches),
        write_id is None, state.cluster(opts.bootstrap, opts.security), config,
    ))  # fmt: skip


def _commit(
    opts: WriteOptions, messages: list[WriterCommitMessage | None], what: str,
    query_id: str | None, batch_id: int | None,
) -> None:  # fmt: skip
    """The driver's commit of an exactly-once write: every prepared transaction, then the
    leftovers no message names are aborted."""
    assert opts.transactional_id_prefix is not None
    prepared = eo.to_commit(messages)
    state = worker_state()
    security = client_options(opts.security)
    state.run(eo.commit_prepared(opts.bootstrap, prepared, what, security))
    named = {m.transactional_id for m in messages if isinstance(m, eo.PreparedCommit)}
    state.run(eo.cleanup(opts.bootstrap, state.cluster(opts.bootstrap, opts.security),
                         opts.transactional_id_prefix, named, query_id, batch_id,
                         security))  # fmt: skip


def _abort(opts: WriteOptions, messages: list[WriterCommitMessage | None]) -> None:
    """The driver's abort: every transaction its tasks prepared (a failed task aborted its own;
    the next attempt or run aborts one a dead task left)."""
    tids = [m.transactional_id for m in eo.to_commit(messages)]
    worker_state().run(eo.abort_ids(opts.bootstrap, tids, client_options(opts.security)))


class OdradekWriter(DataSourceArrowWriter):
    def __init__(self, opts: WriteOptions, layout: RowLayout) -> None:
        self.opts = opts
        self.layout = layout
        # made on the driver once per write, pickled to its tasks and to its commit
        self.write_id = eo.new_write_id() if opts.exactly_once else None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_batches(self.opts, self.layout, iterator, self.write_id)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.opts.exactly_once:
            _commit(self.opts, messages, f"write {self.write_id}", None, None)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.opts.exactly_once:
            _abort(self.opts, messages)


class OdradekStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: WriteOptions, layout: RowLayout) -> None:
        self.opts = opts
        self.layout = layout

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return write_batches(self.opts, self.layout, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: every record was acknowledged by its task, nothing left to do.
        Exactly-once: commit the batch's prepared transactions."""
        if self.opts.exactly_once:
            assert self.opts.transactional_id_prefix is not None
            query_id = eo.query_id_of(messages, self.opts.transactional_id_prefix)
            _commit(self.opts, messages, f"batch {batchId}", query_id, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: records already acknowledged stay (as Spark's Kafka sink).
        Exactly-once: the batch's prepared transactions are aborted."""
        if self.opts.exactly_once:
            _abort(self.opts, messages)
