"""Spark test fixtures: ONE local SparkSession for the whole test run, and record helpers.

`spark` (session scope) starts `local[2]` with the UI off and two shuffle partitions, Python
workers on this interpreter (PYSPARK_PYTHON), and registers the "odradek" format (Spark would
also find it by itself through the top-level `pyspark_odradek` module; registering keeps the
tests independent of the working directory). It is stopped at the end of the run.
Starting Spark takes tens of seconds on two cores, which is why there is only one.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from client import Admin, NewTopic, Producer


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
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
    try:
        yield session
    finally:
        session.stop()


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
