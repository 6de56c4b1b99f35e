"""A broker's event-loop lag over an interval, read from two scrapes of its /metrics.

The broker exports how late its loop runs a timer due every 10 ms as the cumulative histogram
`odradek_broker_event_loop_lag_seconds` (broker/loop_lag.py: buckets ten a decade, from 0.1 ms
to 10 s). `lag_buckets(text)` reads its buckets from one /metrics answer ({upper bound:
cumulative count}, +Inf included); `interval(before, after)` subtracts two such readings and
gives the interval's samples, p50, p99 and max, in milliseconds. The benchmark records them
beside its end-to-end latency (bench/bench_user.py); the console (deploy/console/gather.py)
keeps a `LagWatch`: every broker's metrics scraped at each of its refreshes, and the interval
between the last two shown per broker.

Quantiles are interpolated linearly inside their bucket, as Prometheus' histogram_quantile
does; the max is the upper bound of the highest bucket that gained a sample. Both are therefore
at most one bucket (26%) above the truth; a sample past the last bound reads as 10 s.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

from prometheus_client.parser import text_string_to_metric_families

LAG_METRIC = "odradek_broker_event_loop_lag_seconds"

Buckets = dict[float, float]  # upper bound in seconds (math.inf last) -> cumulative count
Scrape = Callable[[str, int, float], Awaitable[str]]  # (host, metrics port, timeout) -> text


@dataclass(frozen=True, slots=True)
class LagInterval:
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def lag_buckets(metrics_text: str) -> Buckets | None:
    """The lag histogram's cumulative buckets in one /metrics answer (None: not there, as in a
    broker from before it or one without metrics)."""
    for family in text_string_to_metric_families(metrics_text):
        if family.name == LAG_METRIC:
            return {float(s.labels["le"]): s.value for s in family.samples
                    if s.name == LAG_METRIC + "_bucket"}  # fmt: skip
    return None


def interval(before: Buckets | None, after: Buckets) -> LagInterval | None:
    """The lag between two readings of one broker (None before: since it started); None when
    no tick ran in between, or the broker restarted (a count went down)."""
    bounds = sorted(after)
    cumulative = [after[b] - (before or {}).get(b, 0.0) for b in bounds]
    if not cumulative or any(c < 0 for c in cumulative) or cumulative[-1] <= 0:
        return None
    total = cumulative[-1]
    finite = [b for b in bounds if not math.isinf(b)]
    top = next(i for i, c in enumerate(cumulative) if c == total)  # highest non-empty bucket
    return LagInterval(
        samples=round(total),
        p50_ms=_ms(_quantile(0.50, bounds, cumulative, finite)),
        p99_ms=_ms(_quantile(0.99, bounds, cumulative, finite)),
        max_ms=_ms(bounds[top] if not math.isinf(bounds[top]) else finite[-1]),
    )


def _quantile(q: float, bounds: list[float], cumulative: list[float], finite: list[float]) -> float:
    rank = q * cumulative[-1]
    for i, (bound, count) in enumerate(zip(bounds, cumulative, strict=True)):
        if count >= rank:
            if math.isinf(bound):
                return finite[-1]
            lower, below = (bounds[i - 1], cumulative[i - 1]) if i else (0.0, 0.0)
            inside = count - below
            return bound if inside <= 0 else lower + (bound - lower) * (rank - below) / inside
    return finite[-1]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


class LagWatch:
    """Each broker's loop lag between its last two readings (`intervals`, by broker id)."""

    def __init__(self) -> None:
        self.readings: dict[int, Buckets] = {}
        self.intervals: dict[int, LagInterval] = {}

    def update(self, broker: int, buckets: Buckets | None) -> None:
        """A new reading: the interval since the broker's last one (none from the first, or
        when the broker restarted or exports no lag)."""
        before = self.readings.pop(broker, None)
        lag = interval(before, buckets) if buckets is not None and before is not None else None
        if buckets is not None:
            self.readings[broker] = buckets
        if lag is not None:
            self.intervals[broker] = lag
        else:
            self.intervals.pop(broker, None)

    async def refresh(
        self, metrics_at: dict[int, tuple[str, int]], scrape: Scrape, timeout_s: float
    ) -> list[str]:
        """Read every broker of `metrics_at` ({id: (host, metrics port)}) at once; one line
        per broker that did not answer (it keeps its last interval)."""
        ids = sorted(metrics_at)
        texts = await asyncio.gather(
            *(scrape(*metrics_at[b], timeout_s) for b in ids), return_exceptions=True
        )
        failed = []
        for broker, text in zip(ids, texts, strict=True):
            try:
                if isinstance(text, BaseException):
                    raise text
                buckets = await asyncio.to_thread(lag_buckets, text)  # a big text: off the loop
            except Exception as exc:  # anything a scrape or the parser raised: that broker
                failed.append(f"broker {broker}: {type(exc).__name__}: {exc}")
            else:
                self.update(broker, buckets)
        for gone in set(self.readings) - set(ids):
            self.update(gone, None)
        return failed
