"""The log's part of the topic configs: cleanup.policy gates retention, segment.jitter.ms
takes a per-segment jitter off segment.ms."""

from __future__ import annotations

from protocol.clock import ManualClock

from .conftest import T0, OpenLog, batch

HOUR_MS = 3600 * 1000


def _three_old_segments(open_log: OpenLog, clock: ManualClock, policy: str) -> int:
    log = open_log(retention_ms=HOUR_MS, cleanup_policy=policy, file_delete_delay_ms=0)
    for i in range(3):
        log.append_as_leader(batch([b"v%d" % i], timestamp_ms=T0), 0)
        log.roll()
    clock.advance(10 * HOUR_MS)
    return log.delete_retained_segments()


def test_retention_deletes_only_when_the_policy_has_delete(
    open_log: OpenLog, clock: ManualClock
) -> None:
    assert _three_old_segments(open_log, clock, "compact") == 0


def test_compact_delete_still_deletes_by_retention(open_log: OpenLog, clock: ManualClock) -> None:
    assert _three_old_segments(open_log, clock, "compact,delete") == 3


def test_segment_jitter_is_taken_off_segment_ms_once_per_segment(
    open_log: OpenLog, clock: ManualClock
) -> None:
    log = open_log(segment_ms=HOUR_MS, segment_jitter_ms=10 * 60 * 1000)
    asked: list[int] = []

    def below(n: int) -> int:
        asked.append(n)
        return 9 * 60 * 1000 if len(asked) == 1 else 0

    log.rolling.random_below = below
    log.append_as_leader(batch([b"a"]), 0)
    clock.advance(50 * 60 * 1000)
    log.append_as_leader(batch([b"b"]), 0)  # 50 min < 60 - 9: no roll
    assert log.segments.count == 1
    clock.advance(2 * 60 * 1000)
    log.append_as_leader(batch([b"c"]), 0)  # 52 min >= 51: rolled by the jittered time
    assert log.segments.count == 2 and asked[0] == 10 * 60 * 1000
    clock.advance(59 * 60 * 1000)
    log.append_as_leader(batch([b"d"]), 0)  # the new segment drew 0: the full hour
    assert log.segments.count == 2


def test_no_jitter_by_default(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(segment_ms=HOUR_MS)
    log.rolling.random_below = lambda n: (_ for _ in ()).throw(AssertionError("asked for a jitter"))
    log.append_as_leader(batch([b"a"]), 0)
    clock.advance(HOUR_MS - 1)
    log.append_as_leader(batch([b"b"]), 0)
    assert log.segments.count == 1
