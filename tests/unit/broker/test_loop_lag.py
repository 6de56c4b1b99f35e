"""The event loop's lag recorder (broker/loop_lag.py) and the garbage collector's pause
recorder (broker/gc_pauses.py), each on a clock the test moves: nothing here depends on how fast
the machine is."""

from __future__ import annotations

import gc
import itertools
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from broker.gc_pauses import GcPauses, gc_families
from broker.histograms import R10_BUCKETS_S, BucketCounts
from broker.loop_lag import LoopLagRecorder, lag_histogram


class FakeClock:
    """Seconds that move only when a test says."""

    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


class FakeTimers:
    """`call_later` that keeps the callbacks for the test to run as the loop would."""

    def __init__(self) -> None:
        self.due: list[tuple[float, Callable[[], Any]]] = []
        self.cancelled = 0

    def call_later(self, delay: float, callback: Callable[[], Any]) -> Any:
        self.due.append((delay, callback))
        timers = self

        class Handle:
            def cancel(self) -> None:
                timers.cancelled += 1

        return Handle()

    def run_next(self) -> None:
        _, callback = self.due.pop(0)
        callback()


def exposition(*families: Metric) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    class Fixed(Collector):
        def collect(self) -> Any:
            return iter(families)

    registry = CollectorRegistry()
    registry.register(Fixed())
    text = generate_latest(registry).decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}  # fmt: skip


# ----- the loop-lag recorder ---------------------------------------------------------------


def test_each_tick_records_how_late_it_ran_and_the_next_is_due_an_interval_after_it() -> None:
    clock, timers = FakeClock(), FakeTimers()
    recorder = LoopLagRecorder(timers, clock, interval_s=0.010)
    recorder.start()
    assert [d for d, _ in timers.due] == [0.010]
    clock.advance(0.010)  # on time
    timers.run_next()
    clock.advance(0.010 + 0.0042)  # the loop was busy 4.2 ms past the due time
    timers.run_next()
    clock.advance(0.010 + 0.250)  # a 250 ms stall: one sample, not 25 catching-up ticks
    timers.run_next()
    reading = recorder.snapshot()
    assert reading.count == 3
    assert reading.sum_s == pytest.approx(0.2542)
    buckets = dict(reading.buckets)
    assert buckets["0.0001"] == 1  # the on-time tick
    assert buckets["0.004"] == 1 and buckets["0.005"] == 2  # 4.2 ms: in (4, 5] ms
    assert buckets["0.2"] == 2 and buckets["0.25"] == 3 and buckets["+Inf"] == 3
    assert len(timers.due) == 1  # always exactly one tick scheduled


def test_a_tick_fired_before_its_due_time_counts_as_no_lag() -> None:
    clock, timers = FakeClock(), FakeTimers()
    recorder = LoopLagRecorder(timers, clock, interval_s=0.010)
    recorder.start()
    clock.advance(0.0092)  # uvloop's millisecond timers may fire early by a finer clock
    timers.run_next()
    assert recorder.snapshot().sum_s == 0.0
    assert dict(recorder.snapshot().buckets)["0.0001"] == 1


def test_stop_cancels_the_pending_tick_and_start_twice_schedules_one() -> None:
    timers = FakeTimers()
    recorder = LoopLagRecorder(timers, FakeClock())
    recorder.start()
    recorder.start()
    assert len(timers.due) == 1
    recorder.stop()
    assert timers.cancelled == 1
    with pytest.raises(ValueError):
        LoopLagRecorder(timers, FakeClock(), interval_s=0)


def test_buckets_are_bounded_and_a_tenth_of_a_decade_apart() -> None:
    assert R10_BUCKETS_S[0] == 0.0001 and R10_BUCKETS_S[-1] == 10.0
    assert len(R10_BUCKETS_S) == 51
    ratios = [b / a for a, b in itertools.pairwise(R10_BUCKETS_S)]
    assert all(1.2 < r < 1.3 for r in ratios), ratios
    counts = BucketCounts()
    for _ in range(10_000):
        counts.record(100.0)  # past every bucket: the +Inf one, no growth
    assert len(counts.counts) == 52 and counts.counts[-1] == 10_000


def test_the_lag_histogram_is_exported_under_its_name() -> None:
    counts = BucketCounts()
    counts.record(0.0003)
    counts.record(0.012)
    samples = exposition(lag_histogram(counts.snapshot()))
    name = "odradek_broker_event_loop_lag_seconds"
    assert samples[(name + "_count", frozenset())] == 2
    assert samples[(name + "_sum", frozenset())] == pytest.approx(0.0123)
    assert samples[(name + "_bucket", frozenset({("le", "0.000315")}))] == 1
    assert samples[(name + "_bucket", frozenset({("le", "0.0125")}))] == 2


# ----- the garbage collector's pauses ------------------------------------------------------


def test_gc_pauses_are_timed_per_generation() -> None:
    clock = FakeClock()
    pauses = GcPauses(clock)
    pauses.on_gc("start", {"generation": 2, "collected": 0, "uncollectable": 0})
    clock.advance(0.0061)
    pauses.on_gc("stop", {"generation": 2, "collected": 40, "uncollectable": 0})
    pauses.on_gc("start", {"generation": 0, "collected": 0, "uncollectable": 0})
    clock.advance(0.00005)
    pauses.on_gc("stop", {"generation": 0, "collected": 3, "uncollectable": 0})
    samples = exposition(*gc_families(pauses.snapshot()))
    name = "odradek_broker_gc_pause_seconds"
    assert samples[(name + "_count", frozenset({("generation", "2")}))] == 1
    assert samples[(name + "_sum", frozenset({("generation", "2")}))] == pytest.approx(0.0061)
    assert samples[(name + "_bucket", frozenset({("generation", "2"), ("le", "0.005")}))] == 0
    assert samples[(name + "_bucket", frozenset({("generation", "2"), ("le", "0.0063")}))] == 1
    assert samples[(name + "_count", frozenset({("generation", "0")}))] == 1
    assert samples[(name + "_count", frozenset({("generation", "1")}))] == 0
    collected = "odradek_broker_gc_collected_objects_total"
    assert samples[(collected, frozenset({("generation", "2")}))] == 40


def test_gc_pauses_installs_once_and_sees_a_real_collection() -> None:
    pauses = GcPauses()
    pauses.install()
    pauses.install()
    try:
        assert gc.callbacks.count(pauses.on_gc) == 1
        gc.collect(1)
    finally:
        pauses.remove()
    assert pauses.on_gc not in gc.callbacks
    assert pauses.snapshot()[1][0].count == 1


def test_settle_heap_freezes_what_start_up_left_so_no_collection_scans_it() -> None:
    from broker.gc_pauses import GC_THRESHOLDS, settle_heap

    loaded = [["segment", n] for n in range(1000)]  # start-up leaves them alive
    thresholds = gc.get_threshold()
    try:
        settle_heap((1000, 10, 10))
        assert gc.get_freeze_count() >= 1000
        assert gc.get_threshold() == (1000, 10, 10)
        scanned = {id(o) for o in gc.get_objects()}  # every generation a collection scans
        assert not any(id(x) in scanned for x in loaded)
        served = [["request", n] for n in range(10)]  # serving allocates them: scanned
        assert all(id(x) in {id(o) for o in gc.get_objects()} for x in served)
        frozen = exposition(*gc_families(GcPauses().snapshot()))
        assert frozen[("odradek_broker_gc_frozen_objects", frozenset())] >= 1000
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert GC_THRESHOLDS == (700, 10, 10)  # CPython's: kept by measurement (gc_pauses.py)
