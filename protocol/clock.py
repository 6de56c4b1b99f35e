"""Injected time. Logic takes a `Clock`; only the daemon's edge builds a `SystemClock`.

`time_ms()` is wall-clock milliseconds (record timestamps, retention by time, segment.ms);
`monotonic_ms()` measures intervals (timeouts, lag, session expiry) and never goes back.
`ManualClock` lets tests run hours of timeouts in microseconds.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def time_ms(self) -> int: ...

    def monotonic_ms(self) -> int: ...


class SystemClock:
    def time_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    def __init__(self, time_ms: int = 1_700_000_000_000, monotonic_ms: int = 0) -> None:
        self._time_ms = time_ms
        self._monotonic_ms = monotonic_ms

    def time_ms(self) -> int:
        return self._time_ms

    def monotonic_ms(self) -> int:
        return self._monotonic_ms

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock does not go back")
        self._time_ms += ms
        self._monotonic_ms += ms
