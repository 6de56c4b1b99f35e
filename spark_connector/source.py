"""The `odradek` PySpark data source: batch reads, streaming reads, batch and streaming writes.

`OdradekDataSource` is what Spark instantiates with the query's options (a case-insensitive
map). Options are checked as soon as Spark asks for a reader or writer (spark_connector/
options.py), so a mistake fails the query on the driver with one line; addresses given as
`kafka.bootstrap.servers` are swapped for native ones there too (lookup.native_options). The
batch reader plans on the driver (planning.plan_batch) and each task reads its range
(fetch.read_range). With `valueFormat=avro` the schema's `value` is the registry schema's
type, and tasks decode values into it (avro_values.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from spark_connector.avro_values import plan_values, planned_schema_id, read_values, with_value_type
from spark_connector.fetch import RangePartition
from spark_connector.lookup import OffsetLookup, native_bootstrap, native_options
from spark_connector.options import (
    SOURCE_NAME,
    ReadOptions,
    lower_keys,
    parse_bool,
    parse_read_options,
    parse_value_options,
    parse_write_options,
)
from spark_connector.planning import plan_batch
from spark_connector.registry import AvroValues
from spark_connector.schema import spark_schema
from spark_connector.streaming import OdradekStreamReader
from spark_connector.writer import OdradekStreamWriter, OdradekWriter, check_write_schema


class OdradekBatchReader(DataSourceReader):
    def __init__(self, opts: ReadOptions, values: AvroValues | None = None) -> None:
        self.opts = opts
        self.values = values  # valueFormat=avro: how tasks decode values

    def partitions(self) -> Sequence[InputPartition]:
        lookup = OffsetLookup.of(self.opts)
        try:
            parts = plan_batch(self.opts, lookup)
        finally:
            lookup.close()
        # an empty plan still needs one (empty) task for Spark to return an empty frame
        return parts or [RangePartition(self.opts.bootstrap, "", 0, 0, 0)]  # nothing connects

    def read(self, partition: InputPartition) -> Any:
        assert isinstance(partition, RangePartition)
        return read_values(partition, self.values)


def _values(opts: ReadOptions, schema: StructType) -> AvroValues | None:
    """valueFormat=avro: the reader schema the query's schema was made from (its id is in
    the schema's metadata), else the subject's version asked again."""
    return plan_values(opts.values, opts.bootstrap, opts.security, planned_schema_id(schema))


class OdradekDataSource(DataSource):
    """spark.read / readStream / write / writeStream .format("odradek")."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        opts = lower_keys(self.options)
        schema = spark_schema(parse_bool(opts, "includeHeaders", False))
        if "valueformat" not in opts:
            return schema
        values, bootstrap, kafka_bootstrap, security = parse_value_options(opts)
        if kafka_bootstrap:
            bootstrap = native_bootstrap(bootstrap, security)
        spec = plan_values(values, bootstrap, security, None)
        return schema if spec is None else with_value_type(schema, spec)

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = native_options(parse_read_options(self.options, False))
        return OdradekBatchReader(opts, _values(opts, schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = native_options(parse_read_options(self.options, True))
        return OdradekStreamReader(opts, _values(opts, schema))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        opts = parse_write_options(self.options)
        layout = check_write_schema(schema, opts.topic)
        return OdradekWriter(native_options(opts), layout)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        opts = parse_write_options(self.options)
        layout = check_write_schema(schema, opts.topic)
        return OdradekStreamWriter(native_options(opts), layout)
