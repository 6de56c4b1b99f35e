"""`valueFormat=avro`: values framed by a schema registry, decoded into a typed `value` column.

A registry-framed value is Confluent's wire format: byte 0 (the magic byte), the writer
schema's id as a 4-byte big-endian int, then the Avro binary encoding of the value.

Driver (`plan_values`, at planning): the reader schema is the subject's latest version (or
`schemaVersion`), asked from the registry once; `value_type` maps it to Spark's type
(spark_connector/avro_types.py) and the `value` column becomes that type, as Databricks'
`from_avro(value, subject, schemaRegistryAddress)` gives it (a struct for a record schema;
select `value.*` for the fields as columns). The schema Spark is handed carries the reader
schema's id in the `value` field's metadata (`VALUE_SCHEMA_ID`), so the reader that Spark
makes later plans with the very version the query's schema was made from, even when a new
version was registered in between.

Executor (`decode_batches`, in each task): the Arrow batches of spark_connector/fetch.py,
their binary `value` column replaced by the decoded one. For each value: check the frame,
look the writer schema up by its id (asked from the registry once per id and process, then
kept: `_WRITERS`; an id the registry does not know is asked again by the next task), and
decode with fastavro's compiled `schemaless_reader`, resolving the writer's schema to the
reader's (Avro's schema resolution: a field the writer lacked gets
the reader's default; with the reader's own id, no resolution). All the values of a batch
are read from one buffer (the Arrow column's data), each from its offset; then one
`pa.array(..., type)` builds the column (in C). A value whose decoding reads past its own end
(truncated) is undecodable, trailing bytes are ignored (as Confluent's deserializers do).

Bad input, by `mode`: a value shorter than 5 bytes or without the magic byte, an id the
registry does not know (40403), a writer schema that is not Avro or cannot be resolved to the
reader's, a body that does not decode: FAILFAST (the default) fails the task with one line
naming the topic, partition, offset and reason; PERMISSIVE reads it as a null `value`. A null
value (a tombstone) is a null `value`. A registry that cannot be reached fails the task in
either mode: it says nothing about the record.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import fastavro
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import DataType, StructField, StructType

from protocol.errors import OdradekError, UsageError
from spark_connector.avro_types import decoder_schema, spark_type
from spark_connector.fetch import RangePartition, read_range
from spark_connector.lookup import OffsetLookup
from spark_connector.registry import (
    PERMISSIVE,
    AvroValues,
    RegistryClient,
    RegistryError,
    Schema,
)
from spark_connector.security import Props
from spark_connector.value_options import AVRO, ValueFormat

log = logging.getLogger("spark_connector")

VALUE_SCHEMA_ID = "odradek.avro.schemaId"  # the reader schema's id, in the value field's metadata
MAGIC = 0
HEADER_BYTES = 5
WRITERS_MAX = 10_000  # writer schemas kept per process
UNKNOWN_SCHEMA = 40403  # Confluent's "Schema not found"


class AvroDecodeError(OdradekError):
    """A value could not be decoded (mode FAILFAST)."""

    name = "AVRO_DECODE"


# ----- driver -----------------------------------------------------------------------------------


def plan_values(
    values: ValueFormat, bootstrap: str, security: Props, schema_id: int | None
) -> AvroValues | None:
    """The decoding spec for a query (None for binary values): the registry is the one given,
    else the brokers'; the reader schema is the one with `schema_id` (from the planned
    schema's metadata), else the subject's version."""
    if values.kind != AVRO:
        return None
    urls = values.registry_urls or cluster_registry(bootstrap, security)
    if not urls:
        raise UsageError("valueFormat=avro needs option 'schemaRegistryAddress' (the cluster's "
                         "brokers serve no schema registry)")  # fmt: skip
    client = RegistryClient(urls, security)
    try:
        if schema_id is not None:
            reader_id, reader = schema_id, client.by_id(schema_id)
        else:
            reader_id, _, reader = client.version(values.subject, values.version)
    except RegistryError as exc:
        raise UsageError(f"valueFormat=avro, subject {values.subject!r} version "
                         f"{values.version}: {exc}") from None  # fmt: skip
    if reader.schema_type != "AVRO":
        raise UsageError(f"valueFormat=avro: subject {values.subject!r} holds "
                         f"{reader.schema_type} schemas, not Avro")  # fmt: skip
    return AvroValues(urls, security, reader_id, reader, values.mode)


def cluster_registry(bootstrap: str, security: Props) -> tuple[str, ...]:
    """The registry URLs the cluster's brokers serve (lookup.py `registry_urls`)."""
    lookup = OffsetLookup(bootstrap, security=security)
    try:
        return lookup.registry_urls()
    except OdradekError as exc:
        raise UsageError(
            "valueFormat=avro: no 'schemaRegistryAddress' given, and asking the brokers for "
            f"their registry failed ({exc}); give it"
        ) from None
    finally:
        lookup.close()


def value_type(spec: AvroValues) -> DataType:
    schema, named = _parse(spec.reader)
    return spark_type(schema, named)


def with_value_type(schema: StructType, spec: AvroValues) -> StructType:
    """Spark's Kafka schema with `value` of the reader schema's type, its id in the metadata."""
    fields = [
        StructField("value", value_type(spec), True, {VALUE_SCHEMA_ID: spec.reader_id})
        if f.name == "value" else f
        for f in schema.fields
    ]  # fmt: skip
    return StructType(fields)


def planned_schema_id(schema: StructType) -> int | None:
    """The reader schema id `with_value_type` put in `schema` (None: not there)."""
    found = [f for f in schema.fields if f.name == "value"]
    value = found[0].metadata.get(VALUE_SCHEMA_ID) if found and found[0].metadata else None
    return int(value) if value is not None else None


def _parse(schema: Schema) -> tuple[Any, dict[str, Any]]:
    """(parsed schema, its named types by full name), references' named types included."""
    named: dict[str, Any] = {}
    try:
        for text in schema.references:
            fastavro.parse_schema(decoder_schema(json.loads(text)), named_schemas=named)
        parsed = fastavro.parse_schema(decoder_schema(json.loads(schema.text)), named_schemas=named)
    except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException) as exc:
        raise UsageError(f"valueFormat=avro: the schema does not parse ({exc})") from None
    return parsed, named


# ----- executor ---------------------------------------------------------------------------------

_WRITERS: dict[tuple[tuple[str, ...], int], Any] = {}  # parsed writer schema, or the error


class _Decoder:
    def __init__(self, spec: AvroValues, value_arrow: pa.DataType, topic: str, partition: int):
        self.spec, self.topic, self.partition = spec, topic, partition
        self.reader, _ = _parse(spec.reader)
        self.value_arrow = value_arrow
        self.client = RegistryClient(spec.urls, spec.security)
        self.read = fastavro.schemaless_reader
        self.unknown: set[int] = set()  # ids the registry did not know, during this task

    def writer(self, schema_id: int) -> Any:
        """The parsed writer schema (None: the reader's own), or a str: why it is unusable."""
        if schema_id == self.spec.reader_id:
            return None
        key = (self.spec.urls, schema_id)
        if key in _WRITERS:
            return _WRITERS[key]
        if schema_id in self.unknown:
            return f"schema id {schema_id} is unknown to the registry"
        try:
            schema = self.client.by_id(schema_id)
        except RegistryError as exc:
            if exc.error_code != UNKNOWN_SCHEMA:
                raise
            # kept for this task only: a registration on another broker reaches this one's
            # registry within about a second, and a retried task asks again
            self.unknown.add(schema_id)
            return self.writer(schema_id)
        if len(_WRITERS) >= WRITERS_MAX:
            _WRITERS.clear()
        _WRITERS[key] = self._usable(schema_id, schema)
        return _WRITERS[key]

    def _usable(self, schema_id: int, schema: Schema) -> Any:
        if schema.schema_type != "AVRO":
            return f"schema id {schema_id} is a {schema.schema_type} schema, not Avro"
        try:
            return _parse(schema)[0]
        except UsageError as exc:
            return f"schema id {schema_id}: {exc}"

    def column(self, values: pa.Array, offsets: pa.Array) -> pa.Array:
        raw = values.buffers()[2]
        data = raw.to_pybytes() if raw is not None else b""
        stream = io.BytesIO(data)
        ends = pa.Array.from_buffers(pa.int32(), len(values) + 1, [None, values.buffers()[1]],
                                     offset=values.offset).to_pylist()  # fmt: skip
        nulls = values.is_null().to_pylist() if values.null_count else None
        rows: list[Any] = []
        for i in range(len(values)):
            if nulls is not None and nulls[i]:
                rows.append(None)
                continue
            row, why = self._one(data, stream, ends[i], ends[i + 1])
            if why is not None:
                self._bad(offsets, i, why)
            rows.append(row)
        return self._to_arrow(rows, offsets)

    def _one(self, data: bytes, stream: io.BytesIO, start: int, end: int) -> tuple[Any, str | None]:
        if end - start < HEADER_BYTES or data[start] != MAGIC:
            return None, "not framed by a schema registry (no magic byte 0 and 4-byte id)"
        schema_id = int.from_bytes(data[start + 1 : start + HEADER_BYTES], "big")
        writer = self.writer(schema_id)
        if isinstance(writer, str):
            return None, writer
        stream.seek(start + HEADER_BYTES)
        try:
            if writer is None:
                row = self.read(stream, self.reader, None)
            else:
                row = self.read(stream, writer, self.reader)
        except Exception as exc:  # fastavro raises EOFError, ValueError, its own, ...
            return None, f"undecodable with schema id {schema_id}: {type(exc).__name__}: {exc}"
        if stream.tell() > end:
            return None, f"undecodable with schema id {schema_id}: the value ends too soon"
        return row, None

    def _bad(self, offsets: pa.Array, i: int, why: str) -> None:
        where = f"{self.topic}/{self.partition} offset {offsets[i].as_py()}"
        if self.spec.mode != PERMISSIVE:
            raise AvroDecodeError(f"{where}: value {why} (mode FAILFAST; mode=PERMISSIVE reads "
                                  "it as null)")  # fmt: skip
        log.warning("%s: value %s; read as null (mode PERMISSIVE)", where, why)

    def _to_arrow(self, rows: list[Any], offsets: pa.Array) -> pa.Array:
        try:
            return pa.array(rows, type=self.value_arrow)
        except (pa.ArrowException, TypeError, ValueError):
            pass
        out = []  # one value does not fit the reader's type: find it, row by row
        for i, row in enumerate(rows):
            try:
                pa.array([row], type=self.value_arrow)
                out.append(row)
            except (pa.ArrowException, TypeError, ValueError) as exc:
                self._bad(offsets, i, f"does not fit the reader schema: {exc}")
                out.append(None)
        return pa.array(out, type=self.value_arrow)


def read_values(part: RangePartition, spec: AvroValues | None) -> Iterator[pa.RecordBatch]:
    """A task's read: fetch.read_range, its values decoded when `spec` says so."""
    batches = read_range(part)
    return batches if spec is None else decode_batches(batches, spec, part.topic, part.partition)


def decode_batches(
    batches: Iterator[pa.RecordBatch], spec: AvroValues, topic: str, partition: int
) -> Iterator[pa.RecordBatch]:
    """`batches` (Spark's Kafka schema, value binary) with `value` decoded (see above)."""
    value_arrow = to_arrow_type(value_type(spec), timezone="UTC")
    decoder: _Decoder | None = None
    for batch in batches:
        if decoder is None:
            decoder = _Decoder(spec, value_arrow, topic, partition)
        index = batch.schema.get_field_index("value")
        column = decoder.column(batch.column(index), batch.column("offset"))
        schema = batch.schema.set(index, pa.field("value", value_arrow))
        arrays = [column if i == index else c for i, c in enumerate(batch.columns)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)
