"""The leader's append-to-confirmation times (broker/replication_timeline.py), on a manual clock."""

from __future__ import annotations

from broker.replication_timeline import APPENDS_KEPT, ConfirmTimes, append_ends


class Clock:
    def __init__(self) -> None:
        self.s = 100.0

    def __call__(self) -> float:
        return self.s


def _recorded(times: ConfirmTimes) -> tuple[int, float]:
    reading = times.confirm.snapshot()
    return reading.count, round(reading.sum_s, 6)


def test_a_fetch_past_an_append_records_the_wait_since_the_oldest_it_confirms() -> None:
    clock = Clock()
    times, ends = ConfirmTimes(clock), append_ends()
    times.appended(ends, 10)  # offsets 0-9 at t=100.000
    clock.s += 0.002
    times.appended(ends, 20)  # 10-19 at t=100.002
    clock.s += 0.003
    times.fetched(ends, 0, 20)  # one fetch confirms both: the older waited 5 ms
    assert _recorded(times) == (1, 0.005)
    clock.s += 0.001
    times.fetched(ends, 20, 20)  # no move: nothing confirmed
    times.fetched(ends, 5, 20)  # the other follower, which had 0-4 already
    assert _recorded(times) == (2, 0.011)


def test_fetches_that_confirm_nothing_known_are_not_recorded() -> None:
    clock = Clock()
    times, ends = ConfirmTimes(clock), append_ends()
    times.fetched(ends, 0, 10)  # nothing appended as leader yet
    times.appended(ends, 10)
    times.fetched(ends, -1, 10)  # a follower not heard of since this leadership
    times.fetched(ends, 0, 5)  # part of the batch: not past its end
    times.fetched(ends, 10, 5)  # backwards (a truncated follower)
    assert _recorded(times) == (0, 0.0)


def test_only_the_last_appends_are_kept() -> None:
    clock = Clock()
    times, ends = ConfirmTimes(clock), append_ends()
    for end in range(1, 2 * APPENDS_KEPT + 1):
        times.appended(ends, end)
    assert len(ends) == APPENDS_KEPT
    times.fetched(ends, 0, 1)  # an append no longer kept: a catching-up follower, not recorded
    assert _recorded(times) == (0, 0.0)
    times.fetched(ends, APPENDS_KEPT, APPENDS_KEPT + 1)
    assert _recorded(times)[0] == 1
