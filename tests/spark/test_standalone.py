"""The connector on a real Spark standalone cluster (`--master spark://...`), where executors
are JVMs of their own that die and come back.

One cluster for the module (deploy/spark_cluster.py, what `make spark-cluster` starts): a
master and two workers of one core each, so the session below gets one executor on each. The
session runs in this process, so the run's local session is stopped first (one SparkContext
per process; tests/spark/conftest.py starts it again for the next test that asks). Records
live on the shared three-broker cluster (`cluster3`), reached the way a Spark user reaches
Kafka: `kafka.bootstrap.servers` with the Kafka listener's addresses.

Faults: a task's UDF holds its first attempt (`_hold`) and says where (its Python worker's
PID, in a file); the test SIGKILLs the executor JVM above it (with its Python workers). Spark
reruns the task on an executor that lives, and read_committed readers see every row once.
A worker killed (with its executor) under a streaming query, then started again: the query
carries on, and the application gets its second executor back. Last, a driver of its own
(tests/spark/eo_job.py) SIGKILLed between prepare and commit and restarted on its checkpoint.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from client import Consumer, Producer, TopicPartition
from deploy import spark_cluster
from deploy.cluster import LocalCluster
from deploy.spark_cluster import SparkCluster
from tests.spark.conftest import create_topic, produce, read_committed_values, wait_for
from tests.spark.test_exactly_once import _finish, _job, _kill_when_held

pytestmark = [pytest.mark.spark, pytest.mark.integration]

JOB_TIMEOUT_S = 300
EXECUTORS = 2


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    cluster = spark_cluster.start(tmp_path_factory.mktemp("spark-standalone"), workers=EXECUTORS)
    try:
        yield cluster
    finally:
        spark_cluster.stop(cluster)


def _executors(session: Any) -> int:
    """Executors the driver has now (its status tracker lists the driver too)."""
    return len(session.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1


@pytest.fixture(scope="module")
def session(standalone: SparkCluster) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    import spark_connector

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()  # the run's local session: conftest's `spark` starts it again when asked
    os.environ["PYSPARK_PYTHON"] = spark_cluster.app_conf(standalone)["spark.pyspark.python"]
    os.environ["SPARK_LOCAL_IP"] = spark_cluster.HOST  # a driver JVM started here binds it
    builder = SparkSession.builder.appName("odradek-standalone-tests")
    for key, value in spark_cluster.app_conf(standalone).items():
        builder = builder.config(key, value)
    made = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    made.sparkContext.setLogLevel("ERROR")
    spark_connector.register(made)
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture
def spark_on_cluster(session: Any) -> Any:
    """The session, once it has an executor on each worker (again, after a fault test)."""
    wait_for(lambda: _executors(session) == EXECUTORS, JOB_TIMEOUT_S, "both executors")
    return session


def _read(spark: Any, kafka: str, **options: str) -> Any:
    r = spark.read.format("odradek").option("kafka.bootstrap.servers", kafka)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def _stream(spark: Any, kafka: str, **options: str) -> Any:
    r = spark.readStream.format("odradek").option("kafka.bootstrap.servers", kafka)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def _executor_pid() -> Any:
    """A UDF naming the executor JVM each row was read on (its Python worker's ancestor)."""
    from pyspark.sql.functions import udf

    @udf("int", useArrow=False)
    def executor(_: Any) -> int:
        from deploy.spark_cluster import executor_of

        return executor_of(os.getpid()) or -1

    return executor


# ----- what works on local works here ------------------------------------------------------


def test_batch_read_and_write_through_the_kafka_listener(
    spark_on_cluster: Any, cluster3: LocalCluster
) -> None:
    """Spark's Kafka options as a Spark user copies them: the Kafka listener's addresses. The
    read's tasks run on both executors; the write's rows come back as written."""
    spark, kafka, name = spark_on_cluster, cluster3.kafka_bootstrap, uuid.uuid4().hex[:8]
    create_topic(cluster3.bootstrap, f"sa-in-{name}", 4)
    create_topic(cluster3.bootstrap, f"sa-out-{name}", 2)
    produce(cluster3.bootstrap, f"sa-in-{name}", 2000, headers=True)

    rows = _read(spark, kafka, subscribe=f"sa-in-{name}", includeHeaders="true", minPartitions="8")
    where = rows.select(_executor_pid()("offset").alias("executor")).distinct().collect()
    assert len({r.executor for r in where} - {-1}) == EXECUTORS, where
    (rows.selectExpr("key", "upper(CAST(value AS STRING)) AS value", "headers")
     .write.format("odradek").mode("append").option("kafka.bootstrap.servers", kafka)
     .option("topic", f"sa-out-{name}").save())  # fmt: skip

    back = _read(spark, kafka, subscribe=f"sa-out-{name}", includeHeaders="true")
    got = back.selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v", "headers").collect()
    assert sorted((r.k, r.v) for r in got) == sorted((f"k{i % 10}", f"V{i}") for i in range(2000))
    with_headers = sorted(int(bytes(r.headers[0].value)) for r in got if r.headers)
    assert with_headers == list(range(0, 2000, 3))


def _transactions(boot: str, topic: str) -> list[str]:
    """Committed c0..c19, aborted a0..a19, an open transaction's o0..o4 (still open when this
    returns: the caller commits it); the committed values."""
    for prefix, commit in (("c", True), ("a", False)):
        with Producer(boot, transactional_id=f"sa-{topic}-{prefix}") as txn:
            txn.init_transactions()
            txn.begin_transaction()
            for f in [txn.send(topic, f"{prefix}{i}".encode(), partition=i % 2) for i in range(20)]:
                f.get(timeout=30)
            txn.commit_transaction() if commit else txn.abort_transaction()
    return [f"c{i}" for i in range(20)]


def test_streaming_exactly_once_from_read_committed(
    spark_on_cluster: Any, cluster3: LocalCluster, tmp_path: Path
) -> None:
    """A streaming query reading read_committed (up to the last stable offset: an open
    transaction's records wait) into the exactly-once sink, a few micro-batches."""
    spark, kafka, name = spark_on_cluster, cluster3.kafka_bootstrap, uuid.uuid4().hex[:8]
    source, sink = f"sa-rc-{name}", f"sa-eo-{name}"
    create_topic(cluster3.bootstrap, source, 2)
    create_topic(cluster3.bootstrap, sink, 2)
    committed = _transactions(cluster3.bootstrap, source)
    with Producer(cluster3.bootstrap, transactional_id=f"sa-{name}-open") as open_txn:
        open_txn.init_transactions()
        open_txn.begin_transaction()
        for f in [open_txn.send(source, f"o{i}".encode(), partition=0) for i in range(5)]:
            f.get(timeout=30)
        query = _eo_query(spark, kafka, source, sink, f"sa-{name}", tmp_path, "availableNow")
        assert query.awaitTermination(JOB_TIMEOUT_S) and query.exception() is None
        assert len(query.recentProgress) >= 3  # maxOffsetsPerTrigger 15: several micro-batches
        open_txn.commit_transaction()
    assert read_committed_values(cluster3.bootstrap, sink, 2) == Counter(committed)


def _eo_query(
    spark: Any, kafka: str, source: str, sink: str, prefix: str, tmp: Path, trigger: str,
    value: Callable[[Any], Any] | None = None, per_trigger: int = 15,
) -> Any:  # fmt: skip
    """source -> sink, exactly once, read_committed, `per_trigger` offsets a micro-batch."""
    level = {"kafka.isolation.level": "read_committed"}
    df = _stream(spark, kafka, subscribe=source, startingOffsets="earliest",
                 maxOffsetsPerTrigger=str(per_trigger), **level)  # fmt: skip
    column = df.value.cast("string")
    out = df.select((value(column) if value else column).alias("value"))
    writer = (out.writeStream.format("odradek").option("kafka.bootstrap.servers", kafka)
              .option("topic", sink).option("exactlyOnce", "true")
              .option("transactionalIdPrefix", prefix)
              .option("checkpointLocation", str(tmp / "checkpoint")))  # fmt: skip
    if trigger == "availableNow":
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime=trigger).start()


def test_a_compacted_topic_with_gaps(spark_on_cluster: Any, cluster3: LocalCluster) -> None:
    """Offsets the log cleaner removed are skipped by every range, batch and streaming
    (minPartitions and maxOffsetsPerTrigger split the log into ranges, some inside gaps).
    Five keys written over and over, every 50th record a key of its own, then one record big
    enough to roll the segment: one pass of the cleaner leaves exactly the records below."""
    spark, kafka = spark_on_cluster, cluster3.kafka_bootstrap
    topic = f"sa-compact-{uuid.uuid4().hex[:8]}"
    create_topic(cluster3.bootstrap, topic, 1, **{"cleanup.policy": "compact",
                 "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"})  # fmt: skip
    with Producer(cluster3.bootstrap, acks="all") as producer:
        for i in range(300):
            key = f"u{i}" if i % 50 == 0 else f"k{i % 5}"
            producer.send(topic, f"v{i}".encode(), key=key.encode(), partition=0)
            if i % 10 == 9:
                producer.flush()  # small batches, several segments
        producer.send(topic, b"x" * 2000, key=b"end", partition=0)  # the active segment
    left = [(o, f"v{o}") for o in (0, 50, 100, 150, 200, 250, 295, 296, 297, 298, 299)]
    left.append((300, "x" * 2000))
    records = _consumed(cluster3.bootstrap, topic)
    wait_for(lambda: records(301) == left, 120, "the log cleaner's pass over the topic")

    batch = _read(spark, kafka, subscribe=topic, minPartitions="12").select("offset", "value")
    assert sorted((r.offset, bytes(r.value).decode()) for r in batch.collect()) == left
    query = (
        _stream(spark, kafka, subscribe=topic, startingOffsets="earliest",
                maxOffsetsPerTrigger="100").select("offset", "value")
        .writeStream.format("memory").queryName(f"compacted_{uuid.uuid4().hex[:8]}")
        .trigger(availableNow=True).start()
    )  # fmt: skip
    assert query.awaitTermination(JOB_TIMEOUT_S) and query.exception() is None
    streamed = spark.sql(f"SELECT * FROM {query.name}").collect()
    assert sorted((r.offset, bytes(r.value).decode()) for r in streamed) == left


def _consumed(boot: str, topic: str) -> Callable[[int], list[tuple[int, str]]]:
    def read(end: int) -> list[tuple[int, str]]:
        tp = TopicPartition(topic, 0)
        got: list[tuple[int, str]] = []
        with Consumer(boot, auto_offset_reset="earliest") as consumer:
            consumer.assign([tp])
            while consumer.position(tp) < end:
                for batch in consumer.poll(timeout_ms=1000).values():
                    got.extend((r.offset, (r.value or b"").decode()) for r in batch)
        return got

    return read


# ----- faults ----------------------------------------------------------------------------------


def _hold(hold_dir: Path, held_value: str, hold_s: float = JOB_TIMEOUT_S) -> Any:
    """A UDF passing values through, but holding the first attempt of the task that meets
    `held_value`: it writes its Python worker's PID to <hold_dir>/held, then waits to be
    killed (a bound, then it fails the attempt, so nothing hangs)."""
    from pyspark.sql.functions import udf

    where = str(hold_dir)

    @udf("string", useArrow=False)
    def hold(value: str) -> str:
        import time

        from pyspark import TaskContext

        context = TaskContext.get()
        if value == held_value and context is not None and context.attemptNumber() == 0:
            Path(where, "held.tmp").write_text(str(os.getpid()))
            Path(where, "held.tmp").replace(Path(where, "held"))
            deadline = time.monotonic() + hold_s
            while time.monotonic() < deadline:  # the test kills this process's executor
                time.sleep(0.05)
            raise RuntimeError(f"held for {hold_s} s and not killed")
        return value

    return hold


class ExecutorKiller:
    """A thread that waits for the held task (its Python worker's PID in <hold_dir>/held),
    then SIGKILLs the executor JVM above it and the held worker itself (the executor's Python
    daemon would end it too, later). The job runs in the test's own thread meanwhile (a Spark
    job started from another thread of this process does not see the session's registered
    data sources)."""

    def __init__(self, hold_dir: Path) -> None:
        self.held = hold_dir / "held"
        self.killed: int | None = None
        self.failure = ""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            wait_for(lambda: self.held.exists() or self._done.is_set(), JOB_TIMEOUT_S, "a hold")
            if not self.held.exists():
                self.failure = "the job ended before its task was held"
                return
            worker_pid = int(self.held.read_text())
            self.killed = spark_cluster.executor_of(worker_pid)
            if self.killed is None:
                self.failure = f"no executor JVM above Python worker {worker_pid}"
                return
            os.kill(self.killed, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker_pid, signal.SIGKILL)
        except Exception as exc:  # read by the test's thread
            self.failure = f"{type(exc).__name__}: {exc}"

    def join(self) -> int:
        """The executor killed (the job is over: a killer still waiting gives up)."""
        self._done.set()
        self._thread.join(JOB_TIMEOUT_S)
        assert self.killed is not None and not self.failure, self.failure
        return self.killed


def test_an_executor_killed_in_a_batch_write(
    spark_on_cluster: Any, cluster3: LocalCluster, tmp_path: Path
) -> None:
    spark, kafka = spark_on_cluster, cluster3.kafka_bootstrap
    topic = f"sa-kill-batch-{uuid.uuid4().hex[:8]}"
    create_topic(cluster3.bootstrap, topic, 2)
    rows = spark.createDataFrame([(f"r{i}",) for i in range(400)], "v string").repartition(4)
    out = rows.select(_hold(tmp_path, "r7")("v").alias("value"))
    killer = ExecutorKiller(tmp_path)
    (out.write.format("odradek").mode("append").option("kafka.bootstrap.servers", kafka)
     .option("topic", topic).option("exactlyOnce", "true")
     .option("transactionalIdPrefix", f"sa-batch-{topic}").save())  # fmt: skip
    killer.join()
    assert read_committed_values(cluster3.bootstrap, topic, 2) == Counter(
        f"r{i}" for i in range(400)
    )


def test_an_executor_killed_in_a_streaming_micro_batch(
    spark_on_cluster: Any, cluster3: LocalCluster, tmp_path: Path
) -> None:
    spark, kafka, name = spark_on_cluster, cluster3.kafka_bootstrap, uuid.uuid4().hex[:8]
    source, sink = f"sa-ks-in-{name}", f"sa-ks-out-{name}"
    create_topic(cluster3.bootstrap, source, 2)
    create_topic(cluster3.bootstrap, sink, 2)
    produce(cluster3.bootstrap, source, 100, acks="all")
    hold = _hold(tmp_path, "v37")  # in the second micro-batch or so (40 offsets each)
    killer = ExecutorKiller(tmp_path)
    query = _eo_query(spark, kafka, source, sink, f"sa-{name}", tmp_path, "availableNow", hold,
                      per_trigger=40)  # fmt: skip
    assert query.awaitTermination(JOB_TIMEOUT_S) and query.exception() is None
    killer.join()
    assert read_committed_values(cluster3.bootstrap, sink, 2) == Counter(
        f"v{i}" for i in range(100)
    )


def test_a_worker_killed_and_restarted_under_a_streaming_query(
    spark_on_cluster: Any, standalone: SparkCluster, cluster3: LocalCluster, tmp_path: Path
) -> None:
    """Records produced before, while the worker is gone, and after it is back all land,
    exactly once, and the application has two executors again."""
    spark, kafka, name = spark_on_cluster, cluster3.kafka_bootstrap, uuid.uuid4().hex[:8]
    source, sink = f"sa-kw-in-{name}", f"sa-kw-out-{name}"
    create_topic(cluster3.bootstrap, source, 2)
    create_topic(cluster3.bootstrap, sink, 2)
    query = _eo_query(spark, kafka, source, sink, f"sa-{name}", tmp_path, "200 milliseconds")
    try:
        expected: Counter[str] = Counter()
        for step in ("before", "without", "after"):
            if step == "without":
                spark_cluster.kill_worker(standalone, 1)
                wait_for(lambda: _executors(spark) == 1, JOB_TIMEOUT_S, "the executor gone")
            if step == "after":
                spark_cluster.start_worker(standalone, 1)
                wait_for(lambda: _executors(spark) == 2, JOB_TIMEOUT_S, "a new executor")
            produce(cluster3.bootstrap, source, 50, acks="all", prefix=f"{step}-")
            expected.update(f"{step}-{i}" for i in range(50))
            wait_for(lambda: read_committed_values(cluster3.bootstrap, sink, 2) == expected,
                     JOB_TIMEOUT_S, f"the records produced {step} the kill")  # fmt: skip
            assert query.isActive and query.exception() is None
    finally:
        query.stop()


def test_the_driver_killed_between_prepare_and_commit_then_restarted(
    session: Any, standalone: SparkCluster, cluster3: LocalCluster, tmp_path: Path
) -> None:
    """The job's driver in a process of its own (tests/spark/eo_job.py on the cluster), held
    with every task of a micro-batch prepared and SIGKILLed; restarted on its checkpoint (with
    a task failing once), it commits or aborts what was prepared: every row once. Last in the
    module: the job's driver needs the workers' cores, so this module's session stops first."""
    session.stop()
    wait_for(lambda: not standalone.master_state()["activeapps"], JOB_TIMEOUT_S, "no app")
    name = uuid.uuid4().hex[:8]
    source, sink = f"sa-dk-in-{name}", f"sa-dk-out-{name}"
    create_topic(cluster3.bootstrap, source, 2)
    create_topic(cluster3.bootstrap, sink, 2)
    produce(cluster3.bootstrap, source, 200)
    conf = [f"--conf={k}={v}" for k, v in spark_cluster.app_conf(standalone).items()]
    args = ("stream", cluster3.bootstrap, sink, f"sa-dk-{name}", "--input", source,
            "--checkpoint", str(tmp_path / "checkpoint"), f"--master={standalone.master_url}",
            *conf)  # fmt: skip
    env = {"ODRADEK_SPARK_HOLD": "commit", "ODRADEK_SPARK_HOLD_DIR": str(tmp_path)}
    _kill_when_held(_job(*args, env=env), tmp_path, "commit")
    _finish(_job(*args, "--fail-once"))
    assert read_committed_values(cluster3.bootstrap, sink, 2) == Counter(
        f"v{i}" for i in range(200)
    )
