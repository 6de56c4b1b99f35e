"""Spark test fixtures: ONE local SparkSession for the whole test run, and record helpers.

`spark` hands out one `local[2]` session for the whole run, with the UI off and two shuffle
partitions, Python workers on this interpreter (PYSPARK_PYTHON), its JVM with the tests' options
(tests/spark/jvm.py: C1 only, the serial GC), and registers the "odradek"
format (Spark would also find it by itself through the top-level `pyspark_odradek` module;
registering keeps the tests independent of the working directory). It is stopped at the end of
the run. Starting Spark takes tens of seconds on two cores, which is why there is only one; a
process holds one SparkContext at a time, so a module with a session of its own
(test_standalone.py) stops this one, and the next test asking for `spark` starts it again.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from client import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.spark.jvm import DRIVER_ENV, SPARK_JVM_OPTIONS


def local_session() -> Any:
    """A new `local[2]` SparkSession (see the module's docstring)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ[DRIVER_ENV] = SPARK_JVM_OPTIONS  # and the eo_job drivers, which inherit it
    from pyspark.sql import SparkSession

    import spark_connector

    session = (
        SparkSession.builder.master("local[2]")
        .appName("odradek-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    spark_connector.register(session)
    return session


def is_stopped(session: Any) -> bool:
    return session.sparkContext._jsc is None


@pytest.fixture(scope="session")
def _local_spark() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    if made and not is_stopped(made[0]):
        made[0].stop()


@pytest.fixture
def spark(_local_spark: list[Any]) -> Any:
    """The run's one local session, started again if a standalone module stopped it (a
    process has one SparkContext at a time: tests/spark/test_standalone.py's stops this one)."""
    if not _local_spark or is_stopped(_local_spark[0]):
        _local_spark[:] = [local_session()]
    return _local_spark[0]


def create_topic(bootstrap: str, name: str, partitions: int, rf: int = 1, **configs: str) -> None:
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(name, partitions, rf, dict(configs))])
        wait_for(lambda: _has_leaders(admin, name, partitions), 30, f"leaders for {name}")


def _has_leaders(admin: Admin, name: str, partitions: int) -> bool:
    described = [t for t in admin.describe_topics([name]) if t.name == name]
    return bool(described) and sum(p.leader >= 0 for p in described[0].partitions) == partitions


def produce(
    bootstrap: str,
    topic: str,
    count: int,
    partition: int | None = None,
    headers: bool = False,
    acks: str = "1",
    prefix: str = "v",
    timestamp_ms: Callable[[int], int] | None = None,
) -> None:
    """`count` records "<prefix><i>" with keys "k<i % 10>"; every third has a header."""
    with Producer(bootstrap, acks=acks) as producer:
        futures = [
            producer.send(
                topic,
                f"{prefix}{i}".encode(),
                key=f"k{i % 10}".encode(),
                partition=partition,
                headers=[("i", str(i).encode()), ("none", None)]
                if headers and i % 3 == 0
                else None,
                timestamp_ms=None if timestamp_ms is None else timestamp_ms(i),
            )
            for i in range(count)
        ]
        producer.flush()
        for f in futures:
            f.result(timeout=30)


def read_committed_values(boot: str, topic: str, partitions: int) -> Counter[str]:
    """Every value of `topic` a read_committed consumer sees, up to the last stable offset."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with Consumer(boot, isolation_level="read_committed") as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        seen: Counter[str] = Counter()
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for records in consumer.poll(timeout_ms=1000).values():
                seen.update((r.value or b"").decode() for r in records)
    return seen


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.1)


def reader(spark: Any, bootstrap: str, **options: Any) -> Any:
    r = spark.read.format("odradek").option("bootstrap", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r
