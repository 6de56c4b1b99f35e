"""LogLimit: once per interval per key, with a bounded memory of keys."""

from __future__ import annotations

from protocol.clock import ManualClock
from protocol.log_limit import LogLimit


def test_once_per_interval_per_key() -> None:
    clock = ManualClock()
    limit = LogLimit(60_000, clock.monotonic_ms)
    assert limit.allow("a") and limit.allow("b")
    assert not limit.allow("a") and not limit.allow("b")
    clock.advance(59_999)
    assert not limit.allow("a")
    clock.advance(1)
    assert limit.allow("a") and not limit.allow("a")


def test_the_least_recently_allowed_key_is_forgotten_first() -> None:
    clock = ManualClock()
    limit = LogLimit(60_000, clock.monotonic_ms, max_keys=2)
    assert limit.allow("a") and limit.allow("b") and limit.allow("c")  # "a" forgotten
    assert not limit.allow("b") and not limit.allow("c")
    assert limit.allow("a")  # seen again as new; now "b" is the oldest and goes
    assert limit.allow("b")
