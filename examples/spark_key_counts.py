#!/usr/bin/env python3
"""Example Spark job: read a topic, count records per key, write the counts to another topic.

    make cluster                                   # ZooKeeper + 3 brokers in ./.odradek
    .venv/bin/odradek topics create clicks --partitions 2
    printf 'alice:home\nbob:cart\nalice:cart\n' | .venv/bin/odradek produce clicks --key-separator :
    .venv/bin/python examples/spark_key_counts.py --source clicks --sink click-counts
    .venv/bin/odradek consume click-counts --from-beginning --print-key --timeout-ms 5000

(`.venv/bin/spark-submit examples/spark_key_counts.py ...` works the same way, on the
`--master` it is given: `make spark-cluster` prints the line for its standalone cluster;
without spark-submit, $SPARK_MASTER, else `local[2]`.) `--demo N`
first creates the source topic if needed and produces N sample records into it (five users).
The consume prints every count in the sink and exits once 5 s pass without a record: a
second run of the job appends its counts after the first run's.

The job is a plain batch query: `spark.read.format("odradek")` over the whole source topic
(earliest to latest), `groupBy("key").count()`, then `df.write.format("odradek")` with the key
as the record key and the count as a UTF-8 value, acks=all. No registration line is needed
when the project is installed (`make setup`): Spark finds the source through the top-level
module `pyspark_odradek`; the `register` call below only makes the example also work from a
plain checkout on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client import Admin, NewTopic, Producer  # noqa: E402
from deploy.cli_common import resolve_bootstrap  # noqa: E402


def ensure_topic(bootstrap: str, name: str, partitions: int) -> None:
    with Admin(bootstrap) as admin:
        if name not in admin.list_topics():
            admin.create_topics([NewTopic(name, partitions, 1)])


# Each cycle of 15 demo records: alice 5, bob 4, carol 3, dave 2, erin 1, so every user comes
# and each gets a different count (--demo 500: 170, 132, 99, 66, 33).
DEMO_CYCLE = [0] * 5 + [1] * 4 + [2] * 3 + [3] * 2 + [4]
DEMO_USERS = ["alice", "bob", "carol", "dave", "erin"]


def produce_demo(bootstrap: str, topic: str, count: int) -> None:
    with Producer(bootstrap, acks="all") as producer:
        for i in range(count):
            user = DEMO_USERS[DEMO_CYCLE[i % len(DEMO_CYCLE)]]
            producer.send(topic, f"page-{i % 7}".encode(), key=user.encode())
        producer.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description="count records per key with Spark")
    parser.add_argument(
        "--bootstrap", help="HOST:PORT[,...] (default: $ODRADEK_BOOTSTRAP or ./.odradek)"
    )
    parser.add_argument("--source", default="clicks")
    parser.add_argument("--sink", default="click-counts")
    parser.add_argument(
        "--demo", type=int, default=0, metavar="N", help="produce N sample records first"
    )
    args = parser.parse_args()
    bootstrap = resolve_bootstrap(args.bootstrap, os.environ, Path.cwd())
    if args.demo:
        ensure_topic(bootstrap, args.source, 2)
        produce_demo(bootstrap, args.source, args.demo)
    ensure_topic(bootstrap, args.sink, 1)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers run this interpreter
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import spark_connector

    builder = SparkSession.builder.appName("odradek-key-counts")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit, whose --master wins
        builder = builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
    spark = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    spark_connector.register(spark)
    try:
        records = (
            spark.read.format("odradek")
            .option("bootstrap", bootstrap)
            .option("subscribe", args.source)
            .load()
        )
        counts = records.groupBy("key").count().orderBy(F.desc("count"), "key")
        counts.selectExpr("CAST(key AS STRING) AS key", "count").show(truncate=False)
        (
            counts.select("key", F.col("count").cast("string").alias("value"))
            .write.format("odradek")
            .mode("append")
            .option("bootstrap", bootstrap)
            .option("topic", args.sink)
            .save()
        )
        print(f"wrote {counts.count()} key counts to {args.sink!r}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
