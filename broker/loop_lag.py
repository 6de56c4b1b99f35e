"""How late the broker's event loop runs a scheduled callback: a histogram of its lag.

`LoopLagRecorder` schedules one timer callback every `interval_s` (TICK_INTERVAL_S, 10 ms) and,
when it runs, records how long after its due time that was: the time the loop spent on other
work (a long callback or task step, a garbage collection, the OS not running the process)
while the timer was due. The next tick is due `interval_s` after this one ran (not after this
one was due), so a stall is one sample of its length, never a burst of catching-up ticks.

Why 10 ms (as Node's monitorEventLoopDelay): a tick is a `call_later`, two clock reads, a
bisect and an int bump (one timer handle and one float are its only allocations), a few
microseconds of Python; measured at 44 us (p50) on this 2-core machine at load average 18,
where a bare `time.perf_counter()` took 275 ns, 100 ticks a second still cost under 0.5% of a
core, and an idle broker wakes 100 times a second for them. A stall longer than the interval
is always caught (one sample of its remaining length), a shorter one with probability length /
interval, so the histogram tells how often the loop is late and by how much; debug mode
(broker/slow_steps.py) names every step over a threshold, however short.

Lag is measured with the injected `now` (time.perf_counter in the broker), not the loop's own
clock: uvloop's `loop.time()` and its timers have millisecond granularity, and a timer may fire
up to 1 ms before its due time by a finer clock; a negative lag is recorded as 0. An idle
uvloop on a quiet machine reads 0.1-0.3 ms (the timer's own granularity), which is the floor.

Memory is bounded: the counts are one list of len(R10_BUCKETS_S) + 1 ints, a sum and nothing
else, bumped on the loop and copied by `snapshot` (on the loop, at scrape time).
`lag_histogram` turns a snapshot into a Prometheus histogram family (off the loop).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

from prometheus_client.core import HistogramMetricFamily

from broker.histograms import R10_BUCKETS_S, BucketCounts, HistogramReading

TICK_INTERVAL_S = 0.010


class Scheduler(Protocol):
    """What the recorder needs of the event loop (tests pass their own)."""

    def call_later(self, delay: float, callback: Callable[[], Any]) -> Any: ...


class LoopLagRecorder:
    """A timer every `interval_s` on `loop`, recording how late each one ran (`lag`)."""

    def __init__(
        self,
        loop: Scheduler,
        now: Callable[[], float] = time.perf_counter,
        interval_s: float = TICK_INTERVAL_S,
        buckets_s: tuple[float, ...] = R10_BUCKETS_S,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("the tick interval must be positive")
        self.loop = loop
        self.interval_s = interval_s
        self.lag = BucketCounts(buckets_s)
        self._now = now
        self._due = 0.0
        self._handle: Any = None

    def start(self) -> None:
        if self._handle is None:
            self._schedule(self._now())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self, now: float) -> None:
        self._due = now + self.interval_s
        self._handle = self.loop.call_later(self.interval_s, self._tick)

    def _tick(self) -> None:
        now = self._now()
        late = now - self._due
        self.lag.record(late if late > 0.0 else 0.0)
        self._schedule(now)

    def snapshot(self) -> HistogramReading:
        """The lag histogram as it stands (on the loop)."""
        return self.lag.snapshot()


def lag_histogram(reading: HistogramReading) -> HistogramMetricFamily:
    return HistogramMetricFamily(
        "odradek_broker_event_loop_lag_seconds", "How late the broker's event loop ran a "
        "timer due every 10 ms: time it spent on other work while the timer was due (no Kafka "
        "counterpart; Kafka's closest is NetworkProcessorAvgIdlePercent).",
        buckets=reading.buckets, sum_value=reading.sum_s,
    )  # fmt: skip


def start_recorder(now: Callable[[], float] = time.perf_counter) -> LoopLagRecorder:
    """A recorder on the running loop, started."""
    recorder = LoopLagRecorder(asyncio.get_running_loop(), now)
    recorder.start()
    return recorder
