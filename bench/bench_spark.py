#!/usr/bin/env python3
"""Spark connector benchmark: Spark (local[2]) versus the project's own consumer, same run.

1. Starts a local odradek cluster (ZooKeeper + 1 broker) in a temporary directory, creates a
   topic with `--partitions` partitions (2 by default: one per Spark core) and produces
   `--records` records of `--size` bytes (10 million of 100 bytes by default) with the bulk
   producer API, acks=1.
2. Consumer: one process, `client.Consumer` assigned every partition from the beginning; first
   a plain `poll()` loop that only counts the records (issue 12's consumer figure), then one
   that also sums value lengths per partition (the same aggregate Spark computes).
   With `--large-records` (1,000,000 by default; 0: none) a second topic, TOPIC-<size>, gets
   that many records of `--large-size` bytes (1 KiB), for the read at 1 KiB.
3. Spark: one SparkSession, local[2] (then a standalone cluster's, 5.); `df.count()` and then
   `df.groupBy("partition").agg(count("*"), sum(length("value")))`, each timed from the action
   to its result (the session is started, and both paths below are warmed up with one whole
   count each first, not timed: the JVM's compiled code for a query's shape is warm for both);
   and `count()` over a stand-in source that yields pre-built Arrow batches of the same shape
   (no network, no decoding: the most Spark's Python data source path delivers here), the two
   back to back for `--rounds` rounds (load drifts), then the groupBy; then the same count
   and ceiling pairs on the 1 KiB topic, against a ceiling of 1 KiB values. The ceiling's
   batches hold about 4 MB (40,000 rows of 100 B, 4,000 of 1 KiB), as a 4 MiB fetch answer.
4. The sink: the first `--sink-records` records (key and value, cached in Spark's memory, one
   Spark partition per topic partition) written with `df.write.format("odradek")` to a topic
   of their own, at-least-once (the default) and with `exactlyOnce` (a transaction per task,
   prepared, then committed by the driver), alternately for `--sink-rounds` rounds: each
   exactly-once rate as a ratio of the at-least-once rate measured beside it (the order
   swaps each round: at-least-once first in odd rounds, exactly-once first in even ones, so
   that neither always runs on the other's warm-up). `--sink-records` is 4,000,000 by default
   (about 4 s per write), so the per-row cost dominates; each round also writes 2 rows (one
   per Spark task) of each kind, whose time is the write's fixed cost per job (Spark's job
   and commit, the producers' start, the transactions' set-up and commit). Each write also
   reports the CPU seconds of this process's tree (Spark's JVM and Python workers) and of the
   broker, which a loaded machine does not distort as it does seconds.
5. Unless --no-standalone: steps 3 and 4 again on a Spark standalone cluster started as `make
   spark-cluster` starts it (a master and two workers of one core each, deploy/spark_cluster.py),
   the driver in this process, rows named "standalone 2x1".
6. Prints a Markdown table, each Spark read figure beside the ceiling measured in the same run
   (as a share of it), the sink ratios, and writes the JSON to bench/results/spark-<time>.json.

Usage: .venv/bin/python bench/bench_spark.py [--records N] [--size B] [--partitions P]
       [--large-records N] [--large-size B] [--sink-records N] [--sink-rounds R]
       [--no-standalone]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client import Admin, Consumer, NewTopic, Producer, TopicPartition  # noqa: E402
from deploy.cluster import LocalCluster  # noqa: E402

TOPIC = "spark-bench"
SINKS = ("at-least-once", "exactly-once")
CONSUME_TIMEOUT_S = 900


def produce(bootstrap: str, records: int, size: int, partitions: int, topic: str = TOPIC) -> float:
    """Bulk-produce `records` values of `size` bytes round robin over the partitions; seconds."""
    value, chunk = b"x" * size, 10_000
    window: collections.deque[Any] = collections.deque()  # at most 64 chunks unacknowledged
    start = time.perf_counter()
    with Producer(bootstrap, acks=1, linger_ms=5, batch_size=256 * 1024,
                  buffer_memory=64 * 1024 * 1024) as producer:  # fmt: skip
        for i, sent in enumerate(range(0, records, chunk)):
            n = min(chunk, records - sent)
            window.append(producer.send_batch(topic, [value] * n, partition=i % partitions))
            if len(window) >= 64:
                window.popleft().result(timeout=120)
        producer.flush()
        for future in window:
            future.result(timeout=120)
    return time.perf_counter() - start


def poll_loop(bootstrap: str, partitions: int, records: int) -> dict[str, Any]:
    """A plain poll loop: records counted, nothing else touched."""
    with Consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=100_000) as c:
        c.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
        got, deadline = 0, time.monotonic() + CONSUME_TIMEOUT_S
        start = time.perf_counter()
        while got < records and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=1000).values():
                got += len(recs)
        elapsed = time.perf_counter() - start
    return {"what": "consumer: plain poll() loop, records counted", "records": got,
            "seconds": round(elapsed, 2), "records_per_s": round(got / elapsed)}  # fmt: skip


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


def tree_cpu_s(roots: list[int]) -> float:
    """CPU seconds of `roots` and their descendants so far (user + system, with their
    waited-for children's): this process, the JVM its SparkSession starts and the Python
    workers (and a standalone cluster's workers, their executors and theirs), or a broker.
    A process that exits without its parent waiting for it takes its seconds along: a
    difference can then come out low, even negative (seen at load 20-40)."""
    total, todo, tick = 0.0, list(roots), os.sysconf("SC_CLK_TCK")
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / tick
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo += [int(x) for x in f.read().split()]
        except OSError:  # gone meanwhile
            continue
    return total


def ceiling_source(records: int, size: int, partitions: int, name: str) -> Any:
    """A data source that yields pre-built Arrow batches of the same shape (about 4 MB each,
    as a 4 MiB fetch answer): no I/O, no decoding. What Spark's Python data source path itself
    costs on this machine."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from spark_connector.schema import ARROW_SCHEMA, spark_schema

    per_task, rows = records // partitions, max(1, 4_000_000 // size)

    class Reader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(partitions)]

        def read(self, partition: InputPartition) -> Any:
            n = min(rows, per_task)
            batch = pa.RecordBatch.from_arrays(
                [pa.nulls(n, pa.binary()), pa.array([b"x" * size] * n, pa.binary()),
                 pa.repeat(pa.scalar(TOPIC), n), pa.repeat(pa.scalar(0, pa.int32()), n),
                 pa.array(range(n), pa.int64()), pa.repeat(pa.scalar(0, pa.int64()), n).cast(
                     pa.timestamp("us", tz="UTC")), pa.repeat(pa.scalar(0, pa.int32()), n)],
                schema=ARROW_SCHEMA,
            )  # fmt: skip
            left = per_task
            while left > 0:
                yield batch.slice(0, min(n, left))
                left -= n

    class Ceiling(DataSource):
        @classmethod
        def name(cls) -> str:
            return name

        def schema(self) -> Any:
            return spark_schema(False)

        def reader(self, schema: Any) -> DataSourceReader:
            return Reader()

    return Ceiling


def _timed(what: str, action: Any, records: int) -> dict[str, Any]:
    start = time.perf_counter()
    n = action()
    elapsed = time.perf_counter() - start
    assert n == records, f"{what} saw {n} of {records}"
    return {"what": what, "records": n, "seconds": round(elapsed, 2),
            "records_per_s": round(n / elapsed)}  # fmt: skip


def sink_run(
    spark: Any, bootstrap: str, sink_records: int, partitions: int, rounds: int, where: str,
    pids: tuple[list[int], int],
) -> list[dict[str, Any]]:  # fmt: skip
    """At-least-once and exactly-once writes of the same cached rows, alternately (into topics
    of their own for each `where`), each round also a 2-row write of each kind: the fixed
    cost of a write job."""
    tag = "".join(c for c in where if c.isalnum())
    ends = json.dumps({TOPIC: {str(p): sink_records // partitions for p in range(partitions)}})
    rows = (spark.read.format("odradek").option("bootstrap", bootstrap).option("subscribe", TOPIC)
            .option("endingOffsets", ends).load().select("key", "value").cache())  # fmt: skip
    n = rows.count()
    two = spark.createDataFrame([(None, b"x" * 100)] * 2, "key binary, value binary")
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(f"{TOPIC}-{tag}-{kind}", partitions, 1) for kind in SINKS])
    time.sleep(1)

    def write(df: Any, kind: str, i: int) -> None:
        w = df.write.format("odradek").mode("append").option("bootstrap", bootstrap)
        w = w.option("topic", f"{TOPIC}-{tag}-{kind}").option("acks", "all")
        if kind == "exactly-once":
            w = w.option("exactlyOnce", "true").option("transactionalIdPrefix", f"bench-{tag}-{i}")
        w.save()

    def timed_write(df: Any, kind: str, i: int, records: int, what: str) -> dict[str, Any]:
        spark_cpu, broker_cpu = tree_cpu_s(pids[0]), tree_cpu_s([pids[1]])
        start = time.perf_counter()
        write(df, kind, i)
        elapsed = time.perf_counter() - start
        spark_cpu, broker_cpu = (
            tree_cpu_s(pids[0]) - spark_cpu,
            tree_cpu_s([pids[1]]) - broker_cpu,
        )
        return {
            "what": f"spark {where}: {what} {kind}, round {i + 1}",
            "records": records,
            "seconds": round(elapsed, 3),
            "records_per_s": round(records / elapsed, 3),
            "kind": kind,
            "round": i + 1,
            "spark_cpu_s": round(spark_cpu, 2),
            "broker_cpu_s": round(broker_cpu, 2),
            "load": round(os.getloadavg()[0], 1),
        }

    for kind in SINKS:  # warm: the writer's workers, connections and both kinds' code paths
        write(two, kind, 0)
    write(rows, "at-least-once", 0)
    out = []
    for i in range(rounds):
        order = SINKS if i % 2 == 0 else SINKS[::-1]
        out += [timed_write(two, kind, i, 2, "2-row write (fixed cost)") for kind in order]
        out += [timed_write(rows, kind, i, n, "write") for kind in order]
    rows.unpersist()
    return out


def spark_run(
    bootstrap: str, args: argparse.Namespace, broker_pid: int, where: str = "local[2]",
    conf: dict[str, str] | None = None, spark_pids: tuple[int, ...] = (),
) -> list[dict[str, Any]]:  # fmt: skip
    """The read rounds, the aggregate and the sink rounds on one session: `local[2]`, or the
    standalone cluster whose session settings `conf` gives (`where` names it in each row)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import spark_connector

    records, partitions, rounds = args.records, args.partitions, args.rounds
    builder = SparkSession.builder.master((conf or {}).get("spark.master", where))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")  # local[2]: the sink's cached rows
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
        spark.dataSource.register(ceiling_source(records, args.size, partitions, "ceiling"))
        ceiling = spark.read.format("ceiling")
        full = reader().load()
        full.count()  # both paths warmed the same way: one whole count each, not timed
        ceiling.load().count()
        # rounds of (odradek, ceiling) back to back: the load other jobs put on the machine
        # drifts, and each share compares two figures taken seconds apart
        for i in range(rounds):
            out.append(_timed(f"spark {where}: df.count(), round {i + 1}", full.count, records))
            out.append(_timed(f"spark {where}: count() of pre-built Arrow batches (no I/O, "
                              f"no decoding: the ceiling), round {i + 1}",
                              ceiling.load().count, records))  # fmt: skip

        def aggregate() -> int:
            rows = (
                full.groupBy("partition")
                .agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes"))
                .collect()
            )
            return sum(r.n for r in rows)

        out.append(_timed(f"spark {where}: groupBy(partition).agg(count, sum(length(value)))",
                          aggregate, records))  # fmt: skip
        if args.large_records:
            out += large_run(spark, bootstrap, args, where)
        if args.sink_rounds:
            out += sink_run(spark, bootstrap, min(args.sink_records, records), partitions,
                            args.sink_rounds, where,
                            ([os.getpid(), *spark_pids], broker_pid))  # fmt: skip
    finally:
        spark.stop()
    return out


def large_run(spark: Any, bootstrap: str, args: argparse.Namespace, where: str) -> list[Any]:
    """The count and ceiling pairs again on the topic of `--large-size` records."""
    size, records = args.large_size, args.large_records
    topic = f"{TOPIC}-{size}"
    spark.dataSource.register(ceiling_source(records, size, args.partitions, f"ceiling-{size}"))
    ceiling = spark.read.format(f"ceiling-{size}")
    full = spark.read.format("odradek").option("bootstrap", bootstrap).option("subscribe", topic)
    full = full.load()
    full.count()  # both warmed, as at 100 B
    ceiling.load().count()
    out = []
    for i in range(args.rounds):
        out.append(_timed(f"spark {where}: df.count() at {size} B, round {i + 1}", full.count,
                          records))  # fmt: skip
        out.append(
            _timed(
                f"spark {where}: count() of pre-built Arrow batches of {size} B "
                f"(the ceiling), round {i + 1}",
                ceiling.load().count,
                records,
            )
        )
    return out


def standalone_run(
    where: Path, bootstrap: str, args: argparse.Namespace, broker_pid: int
) -> list[dict[str, Any]]:
    """The same passes on `make spark-cluster`'s shape: a master and two 1-core workers, each
    with its executor (deploy/spark_cluster.py), the driver in this process."""
    from deploy import spark_cluster

    cluster = spark_cluster.start(where)
    try:
        return spark_run(bootstrap, args, broker_pid, "standalone 2x1",
                         spark_cluster.app_conf(cluster),
                         (cluster.master.pid, *(w.pid for w in cluster.workers)))  # fmt: skip
    finally:
        spark_cluster.stop(cluster)


def summarize(where: str, results: list[dict[str, Any]]) -> None:
    """The median share of the ceiling (per record size) and the sinks' ratios, of one
    session's rows."""

    def median(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2]

    for size, rows in (
        ("100 B", [r for r in results if "df.count()," in r["what"]]),
        ("1 KiB", [r for r in results if "df.count() at " in r["what"]]),
    ):
        if rows:
            each = ", ".join(f"{r['share']:.0%}" for r in rows)
            print(f"\n{where}: df.count() at {size} as a share of its ceiling: median "
                  f"{median([r['share'] for r in rows]):.0%} (each round: {each})")  # fmt: skip
    for what in (" write ", " 2-row write "):
        writes = {(r["round"], r["kind"]): r for r in results if what in r["what"]}
        rounds = sorted({k[0] for k in writes})
        if not rounds:
            continue
        pairs = [(writes[(i, SINKS[0])], writes[(i, SINKS[1])]) for i in rounds]
        rate = [alo["seconds"] / eo["seconds"] for alo, eo in pairs]  # the same rows each
        cpu = [(eo["spark_cpu_s"] + eo["broker_cpu_s"]) / (alo["spark_cpu_s"] + alo["broker_cpu_s"])
               for alo, eo in pairs]  # fmt: skip
        for (_alo, eo), ratio in zip(pairs, rate, strict=True):
            eo["share_of_at_least_once"] = round(ratio, 3)
        if what == " write ":
            print(
                f"{where}: exactly-once sink rate / at-least-once sink rate: median "
                f"{median(rate):.2f} (each round: {', '.join(f'{x:.2f}' for x in rate)}); "
                f"CPU seconds (Spark + broker), exactly-once / at-least-once: median "
                f"{median(cpu):.2f} (each round: {', '.join(f'{x:.2f}' for x in cpu)})"
            )
        else:
            fixed = {k: median([writes[(i, k)]["seconds"] for i in rounds]) for k in SINKS}
            print(
                f"{where}: a 2-row write (the fixed cost of a write job): median "
                f"{fixed[SINKS[0]]:.2f} s at-least-once, {fixed[SINKS[1]]:.2f} s exactly-once"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="Spark count/ceiling pairs")
    parser.add_argument(
        "--large-records",
        type=int,
        default=1_000_000,
        help="records of --large-size for the second read (0: none)",
    )
    parser.add_argument("--large-size", type=int, default=1024)
    parser.add_argument("--sink-records", type=int, default=3_000_000)
    parser.add_argument("--sink-rounds", type=int, default=3, help="sink write pairs (0: none)")
    parser.add_argument("--no-standalone", action="store_true",
                        help="local[2] only: no pass on a standalone Spark cluster")  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="odradek-spark-bench-") as tmp:
        cluster = LocalCluster(
            Path(tmp) / "cluster", brokers=1, progress=print, ready_timeout_s=300
        )
        bootstrap = cluster.up()
        try:
            with Admin(bootstrap) as admin:
                admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])
            time.sleep(1)
            broker_pid = cluster.status()[0].pid
            seconds = produce(bootstrap, args.records, args.size, args.partitions)
            print(f"produced {args.records} records in {seconds:.1f} s", flush=True)
            if args.large_records:
                large = f"{TOPIC}-{args.large_size}"
                with Admin(bootstrap) as admin:
                    admin.create_topics([NewTopic(large, args.partitions, 1)])
                time.sleep(1)
                seconds = produce(bootstrap, args.large_records, args.large_size, args.partitions,
                                  large)  # fmt: skip
                print(f"produced {args.large_records} records of {args.large_size} B in "
                      f"{seconds:.1f} s", flush=True)  # fmt: skip
            results = [poll_loop(bootstrap, args.partitions, args.records)]
            print(results[-1], flush=True)
            results.append(consume(bootstrap, args.partitions, args.records))
            print(results[-1], flush=True)
            results += spark_run(bootstrap, args, broker_pid)
            if not args.no_standalone:
                results += standalone_run(Path(tmp) / "spark", bootstrap, args, broker_pid)
        finally:
            cluster.down(purge=True)
    load = os.getloadavg()
    print(f"\n{args.records} records of {args.size} B (and {args.large_records} of "
          f"{args.large_size} B), {args.partitions} partitions, load average {load[0]:.1f}; "
          f"writes of {args.sink_records} rows\n")  # fmt: skip
    print("| reader / writer | records/s | seconds | share of the ceiling | CPU s: Spark, broker "
          "| load |\n| --- | --- | --- | --- | --- | --- |")  # fmt: skip
    ceiling = 0
    for r in reversed(results):  # each count() beside the ceiling measured right after it
        if "the ceiling" in r["what"]:
            ceiling = r["records_per_s"]
        counted = "df.count()" in r["what"] or "the ceiling" in r["what"]
        r["share"] = round(r["records_per_s"] / ceiling, 2) if ceiling and counted else None
    for r in results:
        share = f"{r['share']:.0%}" if r["share"] else ""
        cpu = f"{r['spark_cpu_s']}, {r['broker_cpu_s']}" if "spark_cpu_s" in r else ""
        print(f"| {r['what']} | {r['records_per_s']:,} | {r['seconds']} | {share} | {cpu} "
              f"| {r.get('load', '')} |")  # fmt: skip
    for where in ("local[2]", "standalone 2x1"):
        summarize(where, [r for r in results if r["what"].startswith(f"spark {where}:")])
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / f"spark-{stamp}.json").write_text(
        json.dumps({"args": vars(args), "results": results, "loadavg": load}, indent=1)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
