"""Lets Spark find the "odradek" data source by itself.

Spark 4.x looks, when a session first resolves a Python data source, for top-level modules
named `pyspark_*` on the Python path that define `DefaultSource` (a DataSource subclass), and
registers each under its `name()`. This module is that hook; the source lives in
spark_connector/.
"""

from spark_connector.source import OdradekDataSource as DefaultSource

__all__ = ["DefaultSource"]
