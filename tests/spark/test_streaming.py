"""Streaming reads: availableNow with a kill and a restart, exactly once into a file sink; and
a processing-time query that picks up records produced after it started; the stream reader's
minOffsetsPerTrigger and lag figures, driven as Spark drives it."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from spark_connector.options import parse_read_options
from spark_connector.streaming import OdradekStreamReader
from tests.spark.conftest import create_topic, produce, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.integration]

QUERY_TIMEOUT_S = 120


def _stream(spark: Any, bootstrap: str, **options: str) -> Any:
    r = spark.readStream.format("odradek").option("bootstrap", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def _start_available_now(spark: Any, bootstrap: str, topic: str, out: Path, ckpt: Path) -> Any:
    df = _stream(spark, bootstrap, subscribe=topic, startingOffsets="earliest",
                 maxOffsetsPerTrigger="150")  # fmt: skip
    return (
        df.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("json")
        .option("path", str(out))
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )


def test_available_now_killed_and_restarted_delivers_exactly_once(
    spark: Any, cluster3: LocalCluster, tmp_path: Path
) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "stream", 2)
    produce(boot, "stream", 300)
    out, ckpt = tmp_path / "out", tmp_path / "checkpoint"

    first = _start_available_now(spark, boot, "stream", out, ckpt)
    wait_for(lambda: len(first.recentProgress) >= 1 or not first.isActive, QUERY_TIMEOUT_S,
             "the first micro-batch")  # fmt: skip
    first.stop()  # killed mid-run: later micro-batches never ran
    batches_before = len(first.recentProgress)
    assert first.exception() is None

    produce(boot, "stream", 200, prefix="w")
    second = _start_available_now(spark, boot, "stream", out, ckpt)
    assert second.awaitTermination(QUERY_TIMEOUT_S)
    assert second.exception() is None
    assert batches_before + len(second.recentProgress) >= 500 // 150  # maxOffsetsPerTrigger held

    rows = spark.read.json(str(out)).collect()
    seen = [(r.partition, r.offset) for r in rows]
    assert len(seen) == len(set(seen)) == 500, "every record exactly once"
    values = sorted(r.value for r in rows)
    assert values == sorted([f"v{i}" for i in range(300)] + [f"w{i}" for i in range(200)])
    per_partition: dict[int, list[int]] = {}
    for p, o in seen:
        per_partition.setdefault(p, []).append(o)
    for offsets in per_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))


def test_processing_time_query_reads_new_records_and_new_topics(
    spark: Any, cluster3: LocalCluster
) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "live-a", 2)
    produce(boot, "live-a", 20, prefix="old")  # before the query: not read (default is latest)
    query = (
        _stream(spark, boot, subscribePattern="live-.*")
        .selectExpr("topic", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName("live_sink")
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: len(query.recentProgress) >= 1, QUERY_TIMEOUT_S, "the first batch")
        produce(boot, "live-a", 50, prefix="new")
        create_topic(boot, "live-b", 1)  # appears later: read from its earliest offset
        produce(boot, "live-b", 25, prefix="b")
        want = sorted([("live-a", f"new{i}") for i in range(50)] +
                      [("live-b", f"b{i}") for i in range(25)])  # fmt: skip
        deadline = time.monotonic() + QUERY_TIMEOUT_S
        got: list[tuple[str, str]] = []
        while time.monotonic() < deadline and len(got) < len(want):
            got = sorted((r.topic, r.value) for r in spark.sql("SELECT * FROM live_sink").collect())
            time.sleep(0.5)
        assert got == want
        assert query.exception() is None
    finally:
        query.stop()


def test_stream_to_stream_through_the_sink(
    spark: Any, cluster3: LocalCluster, tmp_path: Path
) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "upper-in", 2)
    create_topic(boot, "upper-out", 1)
    produce(boot, "upper-in", 100)
    query = (
        _stream(spark, boot, subscribe="upper-in", startingOffsets="earliest")
        .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
        .writeStream.format("odradek")
        .option("bootstrap", boot)
        .option("topic", "upper-out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S)
    assert query.exception() is None
    out = spark.read.format("odradek").option("bootstrap", boot).option("subscribe", "upper-out")
    rows = out.load().selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v").collect()
    assert sorted((r.k, r.v) for r in rows) == sorted((f"k{i % 10}", f"V{i}") for i in range(100))


class _Clock:
    """A manual clock for the stream reader's maxTriggerDelay."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def test_min_offsets_per_trigger_and_the_lag_of_each_micro_batch(
    cluster3: LocalCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The driver's stream reader as Spark drives it (initialOffset, then latestOffset with the
    default read limit), on a manual clock: a micro-batch is held back (its end is its start,
    so Spark runs none) while fewer than minOffsetsPerTrigger offsets are new, until
    maxTriggerDelay passed; each batch logs Spark's Kafka lag figures."""
    boot = cluster3.bootstrap
    # RF 3: every broker hosts both partitions, so the group's coordinator reports their lag
    create_topic(boot, "min-trigger", 2, rf=3)
    opts = parse_read_options(
        {"bootstrap": boot, "subscribe": "min-trigger", "startingOffsets": "earliest",
         "minOffsetsPerTrigger": "50", "maxTriggerDelay": "10s", "maxOffsetsPerTrigger": "60"},
        streaming=True,
    )  # fmt: skip
    clock = _Clock()
    reader = OdradekStreamReader(opts, clock=clock)
    try:
        start = reader.initialOffset()
        limit = reader.getDefaultReadLimit()
        produce(boot, "min-trigger", 20, partition=0)
        assert reader.latestOffset(start, limit) == start  # 20 < 50: held back
        clock.now_s = 10.0  # the delay passed: the 20 go
        end = reader.latestOffset(start, limit)
        assert end == {"min-trigger": {"0": 20, "1": 0}}
        produce(boot, "min-trigger", 100, partition=1)  # 100 new: over the minimum, at once
        caplog.set_level(logging.INFO, logger="spark_connector")
        rate_limited = reader.latestOffset(end, limit)
        assert rate_limited == {"min-trigger": {"0": 20, "1": 60}}  # maxOffsetsPerTrigger
        lag = {"minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "40",
               "avgOffsetsBehindLatest": "20.0"}  # fmt: skip
        assert reader.metrics == lag
        assert "maxOffsetsBehindLatest 40" in caplog.text
        # Spark commits the batch: its end goes to the query's group, whose lag the brokers'
        # metrics report per partition: the same figures (0 and 40, so min 0, max 40, avg 20)
        assert reader.group_id.startswith("spark-kafka-source-")
        reader.commit(rate_limited)
        want = {"0": 0.0, "1": 40.0}
        wait_for(lambda: _group_lag(cluster3, reader.group_id, "min-trigger") == want, 30,
                 "the query's lag in odradek_coordinator_group_lag")  # fmt: skip
    finally:
        reader.stop()


def _group_lag(cluster: LocalCluster, group: str, topic: str) -> dict[str, float]:
    """{partition: lag} as the group's coordinator reports it in its metrics."""
    from tests.integration.test_metrics import metrics_ports, scrape

    found: dict[str, list[float]] = {}
    for port in metrics_ports(cluster).values():
        for name, labels, value in scrape(port):
            if (name == "odradek_coordinator_group_lag" and labels.get("group") == group
                    and labels.get("topic") == topic):  # fmt: skip
                found.setdefault(labels["partition"], []).append(value)
    return {p: min(vs) for p, vs in found.items()}
