#!/usr/bin/env python3
"""Spark connector benchmark: Spark (local[2]) versus the project's own consumer, same run.

1. Starts a local odradek cluster (ZooKeeper + 1 broker) in a temporary directory, creates a
   topic with `--partitions` partitions (2 by default: one per Spark core) and produces
   `--records` records of `--size` bytes (10 million of 100 bytes by default) with the bulk
   producer API, acks=1.
2. Consumer: one process, `client.Consumer` assigned every partition from the beginning; counts
   the records and sums value lengths per partition (the same aggregate Spark computes).
3. Spark: one SparkSession, local[2]; `df.count()` and then
   `df.groupBy("partition").agg(count("*"), sum(length("value")))`, each timed from the action
   to its result (the session is started and warmed up on a small read first, not timed).
4. Prints a Markdown table and writes the JSON to bench/results/spark-<time>.json.

Usage: .venv/bin/python bench/bench_spark.py [--records N] [--size B] [--partitions P]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client import Admin, Consumer, NewTopic, TopicPartition  # noqa: E402
from deploy.cluster import LocalCluster  # noqa: E402
from deploy.perf import produce  # noqa: E402

TOPIC = "spark-bench"
CONSUME_TIMEOUT_S = 900


def consume(bootstrap: str, partitions: int, records: int) -> dict[str, Any]:
    counts = dict.fromkeys(range(partitions), 0)
    sizes = dict.fromkeys(range(partitions), 0)
    with Consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=100_000) as c:
        c.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
        got, deadline = 0, time.monotonic() + CONSUME_TIMEOUT_S
        start = time.perf_counter()
        while got < records and time.monotonic() < deadline:
            for tp, recs in c.poll(timeout_ms=1000).items():
                counts[tp.partition] += len(recs)
                sizes[tp.partition] += sum(len(r.value or b"") for r in recs)
                got += len(recs)
        elapsed = time.perf_counter() - start
    return {"what": "consumer: count + sum(len(value)) per partition", "records": got,
            "seconds": round(elapsed, 2), "records_per_s": round(got / elapsed)}  # fmt: skip


def spark_run(bootstrap: str, records: int, partitions: int) -> list[dict[str, Any]]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import spark_connector

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark_connector.register(spark)
    out = []
    try:

        def reader() -> Any:  # a DataFrameReader keeps its options: one per query
            r = spark.read.format("odradek").option("bootstrap", bootstrap)
            return r.option("subscribe", TOPIC)

        warm = reader().option("endingOffsets", json.dumps({TOPIC: dict.fromkeys(
            (str(p) for p in range(partitions)), 1000)})).load()  # fmt: skip
        warm.collect()  # start the Python workers
        full = reader().load()
        start = time.perf_counter()
        n = full.count()
        elapsed = time.perf_counter() - start
        assert n == records, f"count() saw {n} of {records}"
        out.append({"what": "spark local[2]: df.count()", "records": n,
                    "seconds": round(elapsed, 2), "records_per_s": round(n / elapsed)})  # fmt: skip
        start = time.perf_counter()
        rows = (
            full.groupBy("partition")
            .agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"))
            .collect()
        )
        elapsed = time.perf_counter() - start
        n = sum(r.n for r in rows)
        assert n == records, f"the aggregate saw {n} of {records}"
        out.append({"what": "spark local[2]: groupBy(partition).agg(count, sum(length(value)))",
                    "records": n, "seconds": round(elapsed, 2),
                    "records_per_s": round(n / elapsed)})  # fmt: skip
    finally:
        spark.stop()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="odradek-spark-bench-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", brokers=1, progress=print)
        bootstrap = cluster.up()
        try:
            with Admin(bootstrap) as admin:
                admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])
            time.sleep(1)
            produced = asyncio.run(produce(bootstrap, TOPIC, args.records, args.size))
            print(f"produced {args.records} records in {produced['seconds']} s", flush=True)
            results = [consume(bootstrap, args.partitions, args.records)]
            print(results[-1], flush=True)
            results += spark_run(bootstrap, args.records, args.partitions)
        finally:
            cluster.down(purge=True)
    load = os.getloadavg()
    print(f"\n{args.records} records of {args.size} B, {args.partitions} partitions, "
          f"load average {load[0]:.1f}\n")  # fmt: skip
    print("| reader | records/s | seconds |\n| --- | --- | --- |")
    for r in results:
        print(f"| {r['what']} | {r['records_per_s']:,} | {r['seconds']} |")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / f"spark-{stamp}.json").write_text(
        json.dumps({"args": vars(args), "results": results, "loadavg": load}, indent=1)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
