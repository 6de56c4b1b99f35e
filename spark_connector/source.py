"""The `odradek` PySpark data source: batch reads, streaming reads, batch and streaming writes.

`OdradekDataSource` is what Spark instantiates with the query's options (a case-insensitive
map). Options are checked as soon as Spark asks for a reader or writer (spark_connector/
options.py), so a mistake fails the query on the driver with one line; addresses given as
`kafka.bootstrap.servers` are swapped for native ones there too (lookup.native_options). The
batch reader plans on the driver (planning.plan_batch) and each task reads its range
(fetch.read_range).
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

from spark_connector.fetch import RangePartition, read_range
from spark_connector.lookup import OffsetLookup, native_options
from spark_connector.options import (
    SOURCE_NAME,
    ReadOptions,
    lower_keys,
    parse_bool,
    parse_read_options,
    parse_write_options,
)
from spark_connector.planning import plan_batch
from spark_connector.schema import spark_schema
from spark_connector.streaming import OdradekStreamReader
from spark_connector.writer import OdradekStreamWriter, OdradekWriter, check_write_schema


class OdradekBatchReader(DataSourceReader):
    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

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
        return read_range(partition)


class OdradekDataSource(DataSource):
    """spark.read / readStream / write / writeStream .format("odradek")."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return spark_schema(parse_bool(lower_keys(self.options), "includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        return OdradekBatchReader(native_options(parse_read_options(self.options, False)))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return OdradekStreamReader(native_options(parse_read_options(self.options, True)))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        opts = parse_write_options(self.options)
        layout = check_write_schema(schema, opts.topic)
        return OdradekWriter(native_options(opts), layout)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        opts = parse_write_options(self.options)
        layout = check_write_schema(schema, opts.topic)
        return OdradekStreamWriter(native_options(opts), layout)
