"""deploy/loop_lag.py: a broker's loop lag over an interval, from two /metrics texts as the
broker renders them (broker/loop_lag.py's histogram through prometheus_client)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from broker.histograms import BucketCounts
from broker.loop_lag import lag_histogram
from deploy.loop_lag import LagInterval, interval, lag_buckets


def rendered(counts: BucketCounts) -> str:
    class One(Collector):
        def collect(self) -> Any:
            return iter([lag_histogram(counts.snapshot())])

    registry = CollectorRegistry()
    registry.register(One())
    return generate_latest(registry).decode()


def test_the_interval_is_the_difference_of_two_readings() -> None:
    counts = BucketCounts()
    for _ in range(500):
        counts.record(0.00005)  # the idle floor, before the interval
    before = lag_buckets(rendered(counts))
    for _ in range(980):
        counts.record(0.00005)
    for _ in range(19):
        counts.record(0.0009)  # in (0.8, 1] ms
    counts.record(0.0123)  # one stall: in (10, 12.5] ms
    after = lag_buckets(rendered(counts))
    assert after is not None
    got = interval(before, after)
    assert got is not None and got.samples == 1000
    assert got.p50_ms == pytest.approx(0.051, abs=0.001)  # interpolated in [0, 0.1] ms
    assert 0.8 <= got.p99_ms <= 1.0
    assert got.max_ms == 12.5  # the stall's bucket's upper bound
    since_start = interval(None, after)
    assert since_start is not None and since_start.samples == 1500


def test_no_reading_without_the_metric_or_without_new_ticks_or_after_a_restart() -> None:
    assert lag_buckets("# HELP x y\n# TYPE x gauge\nx 1.0\n") is None
    counts = BucketCounts()
    counts.record(0.001)
    first = lag_buckets(rendered(counts))
    assert first is not None
    assert interval(first, first) is None  # no tick in between
    restarted = lag_buckets(rendered(BucketCounts()))
    assert restarted is not None and interval(first, restarted) is None


def test_a_sample_past_every_bound_reads_as_the_last_bound() -> None:
    counts = BucketCounts()
    counts.record(60.0)
    got = interval(None, lag_buckets(rendered(counts)) or {})
    assert got == LagInterval(samples=1, p50_ms=10_000.0, p99_ms=10_000.0, max_ms=10_000.0)
    assert got.as_dict()["max_ms"] == 10_000.0
