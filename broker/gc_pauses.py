"""The cyclic garbage collector's pauses, timed through `gc.callbacks`, and its tuning.

`GcPauses.install()` adds one callback to `gc.callbacks`: at a collection's "start" it reads
the clock, at its "stop" it records the pause into that generation's histogram (bucket counts
as broker/loop_lag.py's) and adds the objects collected. A collection stops the whole process,
so every pause is a stall of the event loop as long as it (the loop-lag histogram sees it too,
when a tick falls due meanwhile; this one names the cause).

No lock: CPython runs one collection at a time (the collector's `collecting` flag is set from
before the "start" callback to after the "stop" one, on whichever thread allocated), and no
collection can start inside a callback, so the callbacks never overlap; the scrape only
copies the counts (`snapshot`), and a copy taken between the two halves of an update is off by
one collection at most. It is one object per process (`GC_PAUSES`): brokers run one per process.

`settle_heap()` is what the broker process does once start-up has loaded its logs and caches
and before its listeners open: a full collection (start-up's garbage is not kept forever), then
`gc.freeze()`: every object alive then (the modules, the loaded logs' segments and indexes, the
config) moves to the permanent generation, which no later collection scans. Measured on a
3-broker local cluster under `make bench`-like load (docs/benchmarks.md, "The tail"): a full
collection took 137-202 ms without it and 0.6-5.9 ms with it; the young generations' own
collections were a handful per broker in 20 s of load, each under 0.3 ms (gen 0) or 1.6 ms
(gen 1), so the thresholds stay CPython's: raising them had nothing to win.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from broker.histograms import BucketCounts, HistogramReading

GENERATIONS = (0, 1, 2)

# CPython's defaults, kept by measurement (see above): gen 0 is collected once allocations
# minus deallocations of tracked objects pass 700, each older one after 10 of the younger's
GC_THRESHOLDS: tuple[int, int, int] = (700, 10, 10)


class GcPauses:
    """Pause histograms and collected-object counts per generation, fed by `gc.callbacks`."""

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self._now = now
        self.pauses = [BucketCounts() for _ in GENERATIONS]
        self.collected = [0 for _ in GENERATIONS]
        self._started = 0.0

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = self._now()
            return
        generation = info["generation"]
        self.pauses[generation].record(self._now() - self._started)
        self.collected[generation] += info["collected"]

    def install(self) -> None:
        if self.on_gc not in gc.callbacks:
            gc.callbacks.append(self.on_gc)

    def remove(self) -> None:
        if self.on_gc in gc.callbacks:
            gc.callbacks.remove(self.on_gc)

    def snapshot(self) -> list[tuple[HistogramReading, int]]:
        """Per generation: (its pause histogram, objects collected)."""
        return [(p.snapshot(), n) for p, n in zip(self.pauses, self.collected, strict=True)]


GC_PAUSES = GcPauses()


def settle_heap(thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> None:
    """Collect, freeze what is alive (never scanned again), set the thresholds: once, after
    start-up has loaded everything and before the listeners open."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)


def gc_families(reading: list[tuple[HistogramReading, int]]) -> list[Metric]:
    pauses = HistogramMetricFamily(
        "odradek_broker_gc_pause_seconds", "Cyclic garbage collections and how long each "
        "stopped the process, per generation (the JVM's counterpart: "
        "java.lang:type=GarbageCollector CollectionCount and CollectionTime).",
        labels=["generation"],
    )  # fmt: skip
    collected = CounterMetricFamily(
        "odradek_broker_gc_collected_objects", "Objects the cyclic garbage collector freed, "
        "per generation.", labels=["generation"],
    )  # fmt: skip
    for generation, (hist, n) in zip(GENERATIONS, reading, strict=True):
        pauses.add_metric([str(generation)], hist.buckets, hist.sum_s)
        collected.add_metric([str(generation)], n)
    frozen = GaugeMetricFamily(
        "odradek_broker_gc_frozen_objects", "Objects start-up left alive, frozen by "
        "gc.freeze() so that no collection scans them again (0: not frozen).",
        value=gc.get_freeze_count(),
    )  # fmt: skip
    return [pauses, collected, frozen]
