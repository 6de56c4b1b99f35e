"""The rows a read yields: exactly Spark's Kafka source schema, as a Spark type and as Arrow.

    key binary, value binary, topic string, partition int, offset long, timestamp timestamp,
    timestampType int [, headers array<struct<key string, value binary>>]

`headers` is there only with `includeHeaders=true`, and is null for a record without headers.
`timestampType` is 0 for CreateTime and 1 for LogAppendTime. Every field is nullable, as in
Spark. The Arrow schema is what Spark's Python data source runner expects for that Spark type
(microsecond timestamps in UTC, list items named "element"); `read()` builds its record batches
against it column by column.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
_BASE_FIELDS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]

ARROW_TIMESTAMP = pa.timestamp("us", tz="UTC")
ARROW_HEADERS = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)
_ARROW_BASE = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", ARROW_TIMESTAMP),
    pa.field("timestampType", pa.int32()),
]


def spark_schema(include_headers: bool) -> StructType:
    fields = list(_BASE_FIELDS)
    if include_headers:
        fields.append(StructField("headers", ArrayType(HEADER_TYPE)))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = list(_ARROW_BASE)
    if include_headers:
        fields.append(pa.field("headers", ARROW_HEADERS))
    return pa.schema(fields)


ARROW_SCHEMA = arrow_schema(False)
ARROW_SCHEMA_WITH_HEADERS = arrow_schema(True)
