"""A Spark job for the exactly-once sink's fault tests, run in its own process (so that a test
can SIGKILL its driver, and with `local[2,2]` so that a failed task is retried).

    python -m tests.spark.eo_job batch  BOOTSTRAP OUT_TOPIC PREFIX [--rows N] [--fail-once]
    python -m tests.spark.eo_job stream BOOTSTRAP OUT_TOPIC PREFIX --input T --checkpoint DIR
                                        [--fail-once]
    ... [--master spark://HOST:PORT --conf KEY=VALUE ...]   (default: local[2,2])

`batch` writes rows "r<i>" (i < N, 4 partitions); `stream` copies topic T (availableNow, 100
offsets per trigger). `--fail-once`: a UDF raises on the first attempt of the task that meets
row 7 (or "v7"), after the rows before it were sent. The sink holds its commit when
ODRADEK_SPARK_HOLD / ODRADEK_SPARK_HOLD_DIR say so (spark_connector/exactly_once.py). Prints
DONE when the write finished. Its driver's JVM runs with tests/spark/jvm.py's options.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from tests.spark.jvm import DRIVER_ENV, SPARK_JVM_OPTIONS

QUERY_TIMEOUT_S = 300


def _session(master: str, conf: list[str]) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ[DRIVER_ENV] = SPARK_JVM_OPTIONS
    from pyspark.sql import SparkSession

    import spark_connector

    builder = SparkSession.builder.master(master)
    for setting in conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = (
        builder.appName("odradek-eo-job")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark_connector.register(spark)
    return spark


def _fail_once_udf(fail: bool) -> Any:
    from pyspark.sql.functions import udf

    @udf("string")
    def maybe_fail(value: str) -> str:
        from pyspark import TaskContext

        context = TaskContext.get()
        if fail and context is not None and context.attemptNumber() == 0 and value in ("r7", "v7"):
            raise RuntimeError("injected failure on the task's first attempt")
        return value

    return maybe_fail


def _sink(df: Any, args: argparse.Namespace) -> Any:
    return (
        df.option("bootstrap", args.bootstrap)
        .option("topic", args.out_topic)
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", args.prefix)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["batch", "stream"])
    parser.add_argument("bootstrap")
    parser.add_argument("out_topic")
    parser.add_argument("prefix")
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--input")
    parser.add_argument("--checkpoint")
    parser.add_argument("--fail-once", action="store_true")
    parser.add_argument("--master", default="local[2,2]")  # local: two tries per task
    parser.add_argument("--conf", action="append", default=[], help="KEY=VALUE, for the session")
    args = parser.parse_args()
    spark = _session(args.master, args.conf)
    maybe_fail = _fail_once_udf(args.fail_once)
    if args.mode == "batch":
        rows = spark.createDataFrame([(f"r{i}",) for i in range(args.rows)], "v string")
        out = rows.repartition(4).select(maybe_fail("v").alias("value"))
        _sink(out.write.format("odradek").mode("append"), args).save()
    else:
        stream = (
            spark.readStream.format("odradek")
            .option("bootstrap", args.bootstrap)
            .option("subscribe", args.input)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "100")
            .load()
        )
        out = stream.select(maybe_fail(stream.value.cast("string")).alias("value"))
        query = (
            _sink(out.writeStream.format("odradek"), args)
            .option("checkpointLocation", args.checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        if not query.awaitTermination(QUERY_TIMEOUT_S):
            raise SystemExit("the query did not finish")
        if query.exception() is not None:
            raise SystemExit(f"the query failed: {query.exception()}")
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
