"""Histograms kept as plain bucket counts on the event loop (no lock, no Prometheus object):
`BucketCounts.record` is a bisect and two additions, `snapshot` copies them at scrape time into
a `HistogramReading`, which a collector hands to a Prometheus HistogramMetricFamily off the
loop. Memory is fixed by the buckets: one int per bucket and a sum.

`R10_BUCKETS_S`, the default: the R10 preferred numbers (ten a decade, each ~26% above the one
before) from 0.1 ms to 10 s, so a quantile or a max read from the buckets is within 26% of the
truth. Used by the event loop's lag (loop_lag.py), the collector's pauses (gc_pauses.py) and a
follower's step between two fetches (replica_fetcher.py).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

_R10 = (1.0, 1.25, 1.6, 2.0, 2.5, 3.15, 4.0, 5.0, 6.3, 8.0)
R10_BUCKETS_S: tuple[float, ...] = (
    *(round(m * 10.0**e, 7) for e in range(-4, 1) for m in _R10),
    10.0,
)


@dataclass(frozen=True, slots=True)
class HistogramReading:
    """A copy of a histogram: (le, cumulative count) buckets ending with +Inf, sum, count."""

    buckets: list[tuple[str, int]]
    sum_s: float
    count: int


class BucketCounts:
    """Counts per bucket of `buckets_s` (and one above them all) and their sum, in plain ints."""

    __slots__ = ("buckets_s", "counts", "sum_s")

    def __init__(self, buckets_s: tuple[float, ...] = R10_BUCKETS_S) -> None:
        self.buckets_s = buckets_s
        self.counts = [0] * (len(buckets_s) + 1)
        self.sum_s = 0.0

    def record(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.buckets_s, seconds)] += 1
        self.sum_s += seconds

    def snapshot(self) -> HistogramReading:
        out: list[tuple[str, int]] = []
        running = 0
        for bound, n in zip((*map(str, self.buckets_s), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return HistogramReading(out, self.sum_s, running)
