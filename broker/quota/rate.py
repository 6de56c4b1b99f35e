"""Kafka's windowed rate (org.apache.kafka.common.metrics.stats.Rate over a SampledStat), its
windowed average (Avg, for the throttle-time metric) and the throttle time of a quota violation
(QuotaUtils.throttleTime), on an injected clock.

A rate keeps `samples` windows of `window_ms` each (quota.window.num=11,
quota.window.size.seconds=1). Recording adds to the current window; once the current window is
`window_ms` old the next one is reused (reset) in a ring. Before measuring, windows older than
`samples * window_ms` are reset (purged). The rate is the sum of all windows divided by the
elapsed time since the oldest window began, that elapsed time being at least `samples - 1` full
windows (so a client's first burst is measured over 10 s, not over its first millisecond):

    elapsed = now - oldest.start
    if elapsed // window_ms < samples - 1:
        elapsed += (samples - 1 - elapsed // window_ms) * window_ms
    rate = total / max(elapsed, 1) ms, reported per second

A recording that brings the rate above the bound B is a violation; the client is throttled for
the time that brings the observed rate O back to B, had nothing more been recorded:
O * W / (W + X) = B, X = (O - B) / B * W, W the elapsed window above (rounded to ms as Kafka
does; a request quota caps it at one window, `bounded_throttle_ms`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

QUOTA_WINDOW_NUM = 11  # Kafka's quota.window.num
QUOTA_WINDOW_SIZE_MS = 1000  # Kafka's quota.window.size.seconds, in ms


@dataclass(slots=True)
class _Sample:
    start_ms: int
    value: float = 0.0
    count: int = 0  # recordings (Avg's divisor)

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.value = 0.0
        self.count = 0


class Rate:
    """A per-second rate over `samples` windows of `window_ms` (see the module docstring)."""

    __slots__ = ("_current", "_ring", "samples", "window_ms")

    def __init__(self, samples: int = QUOTA_WINDOW_NUM, window_ms: int = QUOTA_WINDOW_SIZE_MS):
        if samples < 2 or window_ms < 1:
            raise ValueError(f"a rate needs >= 2 samples of >= 1 ms, not {samples} x {window_ms}")
        self.samples = samples
        self.window_ms = window_ms
        self._ring: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:  # complete: move to the next window
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._ring):
                sample = _Sample(now_ms)
                self._ring.append(sample)
            else:
                sample = self._ring[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.count += 1

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._ring:
            self._ring.append(_Sample(now_ms))
        return self._ring[self._current]

    def _purge(self, now_ms: int) -> None:
        expire_ms = self.samples * self.window_ms
        for sample in self._ring:
            if now_ms - sample.start_ms >= expire_ms:
                sample.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        """The elapsed time the rate divides by (Rate.windowSize)."""
        self._purge(now_ms)
        if not self._ring:
            self._ring.append(_Sample(now_ms))
        oldest = min(s.start_ms for s in self._ring)
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """The rate per second at `now_ms`."""
        self._purge(now_ms)
        total = sum(s.value for s in self._ring)
        return total * 1000.0 / self.window_size_ms(now_ms)


class Avg(Rate):
    """Kafka's Avg over the same windows (the throttle-time metric): the mean of the values
    recorded in the windows not yet purged; 0 when there are none (Kafka reports NaN)."""

    __slots__ = ()

    def measure(self, now_ms: int) -> float:
        self._purge(now_ms)
        count = sum(s.count for s in self._ring)
        return sum(s.value for s in self._ring) / count if count else 0.0


def throttle_ms(observed: float, bound: float, window_ms: int) -> int:
    """QuotaUtils.throttleTime: the delay that brings `observed` back to `bound` over a
    window of `window_ms`, rounded (Math.round) to ms."""
    return int(_java_round((observed - bound) / bound * window_ms))


def bounded_throttle_ms(observed: float, bound: float, window_ms: int, max_ms: int) -> int:
    """QuotaUtils.boundedThrottleTime: as `throttle_ms`, capped at `max_ms`."""
    return min(throttle_ms(observed, bound, window_ms), max_ms)


def _java_round(x: float) -> int:
    """Java's Math.round: halves go up (Python's round goes to even)."""
    return math.floor(x + 0.5)
