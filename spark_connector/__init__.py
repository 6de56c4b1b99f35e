"""The odradek connector for Apache Spark (PySpark 4.x Python data source, format "odradek").

    df = (spark.read.format("odradek")
          .option("bootstrap", "127.0.0.1:9092")
          .option("subscribe", "events")
          .load())

Options and semantics mirror Spark's built-in Kafka source (see spark_connector/README.md).
Spark finds the source by itself when the project is installed (the top-level module
`pyspark_odradek` holds a `DefaultSource`, which Spark 4.x's data source lookup registers);
`register(spark)` does the same by hand, for a session that cannot see the installed package's
modules.

Modules: options (option checks), ranges (offset-range decisions), lookup and planning (driver
side), fetch (executor side: one range into Arrow batches), streaming (micro-batch reader),
writer (sinks), schema (Spark's Kafka schema), source (the DataSource); for `valueFormat=avro`
value_options (its options), registry (the schema registry client), avro_types (Avro to Spark
types) and avro_values (planning the reader schema, decoding values in tasks). Importing this
package does not import pyspark; `register` and `OdradekDataSource` do.
"""

from __future__ import annotations

from typing import Any

SOURCE_NAME = "odradek"

__all__ = ["SOURCE_NAME", "OdradekDataSource", "register"]


def register(spark: Any) -> None:
    """Register the "odradek" format with `spark` (a SparkSession). Safe to call twice."""
    from spark_connector.source import OdradekDataSource

    spark.dataSource.register(OdradekDataSource)


def __getattr__(name: str) -> Any:
    if name == "OdradekDataSource":
        from spark_connector.source import OdradekDataSource

        return OdradekDataSource
    raise AttributeError(f"module 'spark_connector' has no attribute {name!r}")
