"""A partition's waiter lists stay about twice their live waiters (broker/partition.py `_add`):
an idle partition's parked fetches time out without a wake-up, and their waiters must not pile
up (they used to, up to 1,024 per partition, with everything their fetches held)."""

from __future__ import annotations

from broker.partition import _add


class W:
    def __init__(self) -> None:
        self.finished = False

    def done(self) -> bool:
        return self.finished

    def set_result(self, _result: None) -> None:
        self.finished = True


def test_finished_waiters_do_not_pile_up() -> None:
    waiters: list[W] = []
    longest = 0
    for _ in range(10_000):
        w = W()
        _add(waiters, w)  # type: ignore[arg-type]
        longest = max(longest, len(waiters))
        w.finished = True  # its fetch timed out: no wake-up came
    assert longest <= 8


def test_live_waiters_are_kept_and_the_list_stays_near_their_number() -> None:
    waiters: list[W] = []
    live = [W() for _ in range(50)]
    for w in live:
        _add(waiters, w)  # type: ignore[arg-type]
    longest = 0
    for _ in range(5_000):
        gone = W()
        gone.finished = True
        _add(waiters, gone)  # type: ignore[arg-type]
        longest = max(longest, len(waiters))
    assert all(w in waiters for w in live)
    assert longest <= 2 * len(live) + 8
