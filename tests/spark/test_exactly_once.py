"""Transactions and Spark on a real cluster: the source reading read_committed, and the
exactly-once sink (spark_connector/exactly_once.py) with its driver SIGKILLed between prepare
and commit, then run again (a batch write) or restarted (a streaming query, with a task failing
once).

The fault tests run the job in its own process (tests/spark/eo_job.py, `local[2,2]` so a task
is retried), held by the sink's hold hook and killed by its process group (a batch write's
second run needs no process of its own: it runs on the test's session). Every check reads
the output topic with a read_committed consumer: each value exactly once. A batch write's task
that fails (its executor SIGKILLed mid-write) is tested on the standalone cluster
(test_standalone.py::test_an_executor_killed_in_a_batch_write), not here too."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from client import AsyncProducer, Producer
from client.cluster import Cluster
from deploy.cluster import LocalCluster
from protocol.errors import UsageError
from spark_connector.exactly_once import (
    PreparedCommit,
    batch_write_base,
    cleanup,
    commit_prepared,
    leftovers,
    new_write_id,
    prepare_rows,
    query_id_of,
    streaming_base,
    transactional_id,
)
from spark_connector.options import parse_read_options, parse_write_options
from tests.spark.conftest import (
    create_topic,
    produce,
    read_committed_values,
    reader,
    wait_for,
)

pytestmark = [pytest.mark.spark, pytest.mark.integration]

JOB_TIMEOUT_S = 300
ROOT = Path(__file__).resolve().parents[2]


# ----- options and ids (no cluster) --------------------------------------------------------------


def test_isolation_and_exactly_once_options() -> None:
    base = {"bootstrap": "h:1", "subscribe": "t"}
    assert parse_read_options(base, False).isolation_level == "read_uncommitted"
    opts = parse_read_options({**base, "kafka.isolation.level": "READ_COMMITTED"}, True)
    assert opts.isolation_level == "read_committed"
    with pytest.raises(UsageError, match=r"kafka\.isolation\.level.*not 'snapshot'"):
        parse_read_options({**base, "kafka.isolation.level": "snapshot"}, False)
    write = parse_write_options({"bootstrap": "h:1", "exactlyOnce": "true",
                                 "transactionalIdPrefix": "q1"})  # fmt: skip
    assert write.exactly_once and write.transactional_id_prefix == "q1"
    assert not parse_write_options({"bootstrap": "h:1"}).exactly_once
    with pytest.raises(UsageError, match="needs option 'transactionalIdPrefix'"):
        parse_write_options({"bootstrap": "h:1", "exactlyOnce": "true"})
    with pytest.raises(UsageError, match="acks=all"):
        parse_write_options({"bootstrap": "h:1", "exactlyOnce": "true", "acks": "1",
                             "transactionalIdPrefix": "q1"})  # fmt: skip


def test_leftovers_are_this_querys_earlier_batches_or_a_prefixs_batch_writes() -> None:
    q = "0b1c2d3e-aaaa-bbbb-cccc-000000000000"
    ids = [transactional_id(streaming_base("p", q, b), part, 7) for b in (3, 4, 5)
           for part in (0, 1)]  # fmt: skip
    ids += ["p-wabcdef0123456789-0-2", "p-other-1-0-2", "px-wabcdef0123456789-0-2"]
    assert leftovers(ids, "p", {f"p-{q}-4-0-7"}, q, 4) == [
        f"p-{q}-3-0-7", f"p-{q}-3-1-7", f"p-{q}-4-1-7"
    ]  # fmt: skip
    assert leftovers(ids, "p", set(), None, None) == ["p-wabcdef0123456789-0-2"]
    message = PreparedCommit(f"p-{q}-4-0-7", 1000, 0, 5)
    assert query_id_of([None, message], "p") == q


# ----- reading read_committed -----------------------------------------------------------------


def _transactions(boot: str, topic: str) -> None:
    """Committed c0..c9, aborted a0..a9 (interleaved with a plain producer's p0..p4), committed
    d0..d4, each transaction by a producer of its own, every record acknowledged."""
    with Producer(boot, acks="all") as plain:
        for prefix, count, commit in (("c", 10, True), ("a", 10, False), ("d", 5, True)):
            with Producer(boot, transactional_id=f"spark-rc-{prefix}") as txn:
                txn.init_transactions()
                txn.begin_transaction()
                sent = []
                for i in range(count):
                    sent.append(txn.send(topic, f"{prefix}{i}".encode(), partition=i % 2))
                    if prefix == "a" and i % 2 == 0:
                        plain.send(topic, f"p{i // 2}".encode(), partition=i % 2).get(timeout=30)
                for future in sent:
                    future.get(timeout=30)
                if commit:
                    txn.commit_transaction()
                else:
                    txn.abort_transaction()


def test_the_source_reads_read_committed_values(spark: Any, cluster3: LocalCluster) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "rc", 2)
    _transactions(boot, "rc")
    committed = sorted([f"c{i}" for i in range(10)] + [f"p{i}" for i in range(5)] +
                       [f"d{i}" for i in range(5)])  # fmt: skip
    # open through two Spark reads and a stream: on a loaded machine past the default 60 s,
    # after which the coordinator would abort it and fence this producer
    with Producer(
        boot, transactional_id="spark-rc-open", transaction_timeout_ms=600_000
    ) as open_txn:
        open_txn.init_transactions()
        open_txn.begin_transaction()
        for i in range(5):
            open_txn.send("rc", f"o{i}".encode(), partition=i % 2)
        open_txn.flush()

        def values(**options: str) -> list[str]:
            df = reader(spark, boot, subscribe="rc", **options).load()
            return sorted(bytes(r.value).decode() for r in df.select("value").collect())

        assert values(**{"kafka.isolation.level": "read_committed"}) == committed
        everything = values()
        assert len(everything) == 20 + 5 + 5 + 5 and "a3" in everything and "o4" in everything
        # the streaming read, availableNow, into a memory table
        query = (
            spark.readStream.format("odradek").option("bootstrap", boot).option("subscribe", "rc")
            .option("startingOffsets", "earliest").option("kafka.isolation.level", "read_committed")
            .option("maxOffsetsPerTrigger", "7").load()
            .selectExpr("CAST(value AS STRING) AS value")
            .writeStream.format("memory").queryName("rc_stream").trigger(availableNow=True).start()
        )  # fmt: skip
        assert query.awaitTermination(JOB_TIMEOUT_S) and query.exception() is None
        out = spark.sql("SELECT value FROM rc_stream").collect()
        assert sorted(r.value for r in out) == committed  # up to the LSO: no "o" yet
        open_txn.commit_transaction()
    assert values(**{"kafka.isolation.level": "read_committed"}) == sorted(
        committed + [f"o{i}" for i in range(5)]
    )


# ----- the exactly-once sink --------------------------------------------------------------------


def _count_all(spark: Any, boot: str, topic: str) -> int:
    return reader(spark, boot, subscribe=topic).load().count()


def test_batch_write_exactly_once(spark: Any, cluster3: LocalCluster) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "eo-batch", 3)
    rows = spark.createDataFrame(
        [(f"k{i % 5}", f"r{i}") for i in range(500)], "key string, value string"
    )
    (rows.repartition(4).write.format("odradek").mode("append").option("bootstrap", boot)
     .option("topic", "eo-batch").option("exactlyOnce", "true")
     .option("transactionalIdPrefix", "batch-job").save())  # fmt: skip
    assert read_committed_values(boot, "eo-batch", 3) == Counter(f"r{i}" for i in range(500))


def _job(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.spark.eo_job", *args], cwd=ROOT, text=True,
        env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the JVM and Python workers with it
    )  # fmt: skip


def _finish(job: subprocess.Popen[str]) -> None:
    out, _ = job.communicate(timeout=JOB_TIMEOUT_S)
    assert job.returncode == 0 and "DONE" in out, out[-3000:]


def _kill_when_held(job: subprocess.Popen[str], hold_dir: Path, step: str) -> None:
    """Wait for the driver to hold at `step`, then SIGKILL its whole process group."""
    held = hold_dir / f"spark-held-{step}"
    try:
        wait_for(lambda: held.exists() or job.poll() is not None, JOB_TIMEOUT_S, f"held at {step}")
    finally:  # held, or never (the wait timed out): the job must not outlive the test either
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        output = job.communicate(timeout=60)[0] or ""  # reaped, its pipe closed
    assert held.exists(), output[-3000:]


def test_a_stale_attempt_never_replaces_the_latest_attempts_transaction(
    cluster3: LocalCluster,
) -> None:
    """A failed attempt's Python writer outlives its task: Spark runs the next attempt while
    the old writer is still starting, so the old one may initialise, write and prepare only
    after the next attempt prepared (as a loaded machine once had it, with the UDF of
    tests/spark/eo_job.py failing the first attempt). The latest attempt's transaction is still
    the one committed; the stale one's is aborted by the cleanup."""
    boot = cluster3.bootstrap
    create_topic(boot, "eo-stale", 1)
    base = batch_write_base("stale", new_write_id())

    def rows(*values: str) -> Any:
        async def send(producer: AsyncProducer) -> int:
            futures = [await producer.send("eo-stale", v.encode(), None, 0) for v in values]
            await producer.flush()
            for future in futures:
                await future
            return len(values)

        return send

    async def attempts() -> tuple[PreparedCommit, PreparedCommit, list[str]]:
        cluster = Cluster(boot, request_timeout_ms=30_000)
        try:
            latest = await prepare_rows(boot, base, 0, 5, rows("n0", "n1"), False, cluster, {})
            stale = await prepare_rows(boot, base, 0, 4, rows("s0"), False, cluster, {})
            await commit_prepared(boot, [latest], "write stale")
            aborted = await cleanup(boot, cluster, "stale", {latest.transactional_id}, None, None)
            return latest, stale, aborted
        finally:
            await cluster.close()

    latest, stale, aborted = asyncio.run(attempts())
    assert latest.transactional_id != stale.transactional_id
    assert aborted == [stale.transactional_id]
    assert read_committed_values(boot, "eo-stale", 1) == Counter(["n0", "n1"])


def test_batch_write_driver_killed_before_commit_then_run_again(
    spark: Any, cluster3: LocalCluster, tmp_path: Path
) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "eo-batch-kill", 2)
    env = {"ODRADEK_SPARK_HOLD": "commit", "ODRADEK_SPARK_HOLD_DIR": str(tmp_path)}
    _kill_when_held(_job("batch", boot, "eo-batch-kill", "batch-kill", env=env), tmp_path, "commit")
    assert _count_all(spark, boot, "eo-batch-kill") == 200  # prepared, never committed
    # run again (here: no driver of its own is needed) with the prefix: aborts the dead write's
    rows = spark.createDataFrame([(f"r{i}",) for i in range(200)], "value string")
    (rows.repartition(4).write.format("odradek").mode("append").option("bootstrap", boot)
     .option("topic", "eo-batch-kill").option("exactlyOnce", "true")
     .option("transactionalIdPrefix", "batch-kill").save())  # fmt: skip
    assert read_committed_values(boot, "eo-batch-kill", 2) == Counter(f"r{i}" for i in range(200))


def test_streaming_driver_killed_with_one_transaction_committed_then_restarted(
    spark: Any, cluster3: LocalCluster, tmp_path: Path
) -> None:
    """Killed with one of a micro-batch's transactions committed and the others prepared;
    restarted on the same checkpoint (with a task failing once). (Killed with every task
    prepared and none committed: tests/spark/test_standalone.py, on the standalone cluster.)"""
    boot, step = cluster3.bootstrap, "committed-one"
    source, sink = f"eo-in-{step}", f"eo-out-{step}"
    create_topic(boot, source, 2)
    create_topic(boot, sink, 2)
    produce(boot, source, 400)
    args = ("stream", boot, sink, f"stream-{step}", "--input", source,
            "--checkpoint", str(tmp_path / "checkpoint"))  # fmt: skip
    env = {"ODRADEK_SPARK_HOLD": step, "ODRADEK_SPARK_HOLD_DIR": str(tmp_path)}
    _kill_when_held(_job(*args, env=env), tmp_path, step)
    _finish(_job(*args, "--fail-once"))
    assert read_committed_values(boot, sink, 2) == Counter(f"v{i}" for i in range(400))
    assert _count_all(spark, boot, sink) > 400  # the killed run's and the failed attempt's
