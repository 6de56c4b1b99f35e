"""Writes: `df.write.format("odradek")` and `writeStream`, as Spark's Kafka sink does them.

Columns: `value` (required, binary or string), optional `key` (binary or string), `topic`
(string; the `topic` option, when set, wins over it, as in Spark), `partition` (int; else the
producer's partitioner: murmur2 of the key, or spread when key-less) and `headers`
(array<struct<key string, value binary>>). Anything else is refused when the write is planned,
in one line.

Each Spark task produces its rows through one `client.AsyncProducer` (acks=all unless the
`acks` option says otherwise) on the worker's event loop, waits for every acknowledgement and
fails the task on the first record that could not be delivered. The sink is at-least-once, as
Spark's Kafka sink is: a retried task sends its rows again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
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
from spark_connector.fetch import worker_state
from spark_connector.options import WriteOptions
from spark_connector.schema import HEADER_TYPE

_COLUMNS = ("key", "value", "topic", "partition", "headers")
MAX_UNACKED_RECORDS = 100_000  # await acknowledgements before queueing more than this


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


def _as_bytes(value: Any, is_str: bool) -> bytes | None:
    if value is None:
        return None
    if is_str:
        return str(value).encode()
    return bytes(value)


async def _produce(opts: WriteOptions, layout: RowLayout, rows: Iterator[Any]) -> int:
    producer = AsyncProducer(
        opts.bootstrap, acks=opts.acks, linger_ms=opts.linger_ms, batch_size=opts.batch_size
    )
    await producer.start()
    count, pending = 0, []
    try:
        for row in rows:
            topic = opts.topic if layout.topic is None else row[layout.topic]
            if not topic:
                raise UsageError(f"row {count} has no topic (null topic column, no topic option)")
            headers = None
            if layout.headers is not None and row[layout.headers] is not None:
                headers = [
                    (h[0], None if h[1] is None else bytes(h[1])) for h in row[layout.headers]
                ]
            pending.append(await producer.send(
                topic,
                _as_bytes(row[layout.value], layout.value_is_str),
                None if layout.key is None else _as_bytes(row[layout.key], layout.key_is_str),
                None if layout.partition is None else row[layout.partition],
                headers,
            ))  # fmt: skip
            count += 1
            if len(pending) >= MAX_UNACKED_RECORDS:
                await _settle(pending)
        await producer.flush()
        await _settle(pending)
    finally:
        await producer.close()
    return count


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


def write_rows(opts: WriteOptions, layout: RowLayout, rows: Iterator[Any]) -> WriteCommit:
    return WriteCommit(worker_state().run(_produce(opts, layout, rows)))


class OdradekWriter(DataSourceWriter):
    def __init__(self, opts: WriteOptions, layout: RowLayout) -> None:
        self.opts = opts
        self.layout = layout

    def write(self, iterator: Iterator[Any]) -> WriteCommit:
        return write_rows(self.opts, self.layout, iterator)


class OdradekStreamWriter(DataSourceStreamWriter):
    def __init__(self, opts: WriteOptions, layout: RowLayout) -> None:
        self.opts = opts
        self.layout = layout

    def write(self, iterator: Iterator[Any]) -> WriteCommit:
        return write_rows(self.opts, self.layout, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every record was acknowledged by its task: nothing left to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records already acknowledged stay (at-least-once, as Spark's Kafka sink)."""
