"""The leader's view of the replication path: how long after an append each follower confirms it.

An acks=all Produce waits at the leader (its remote time, odradek_network_request_remote_seconds)
for every ISR follower's fetch to carry an offset at or past its batch's end: the leader wakes
the followers' parked fetches in the append's own loop step (broker/delayed_fetch.py), each
follower appends the answer and sends its next fetch (its step,
odradek_replica_fetcher_step_seconds), and that fetch moves the high watermark, which answers
the Produce in the same step (broker/delayed_produce.py). This module measures the middle
part from the leader: for each follower fetch whose offset moved, the time since the oldest
append it now confirms (odradek_replica_confirm_seconds). So the three together read as a
timeline: confirm - step is the network and the scheduling of two processes (leader to
follower and back), remote - confirm is the wait for the slower follower.

Each leader partition keeps the end offsets and times of its last APPENDS_KEPT appends
(`Partition.append_ends`, a bounded deque, oldest first); a fetch confirming an append older
than those is not recorded (a follower that far behind is catching up, not on the path).
The clock is injected (`now`, seconds; time.perf_counter in the broker): sub-millisecond
figures, which the loop's millisecond clock cannot give.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from broker.histograms import BucketCounts

APPENDS_KEPT = 64  # per leader partition: about the in-flight acks=all batches a producer has

AppendEnds = deque[tuple[int, float]]  # (end offset of an append, when it ended), oldest first


def append_ends() -> AppendEnds:
    return deque(maxlen=APPENDS_KEPT)


class ConfirmTimes:
    """Records, per follower fetch that moves its offset, the wait since the append it confirms."""

    __slots__ = ("confirm", "now")

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self.now = now
        self.confirm = BucketCounts()  # seconds (module docstring)

    def appended(self, ends: AppendEnds, end_offset: int) -> None:
        """An append as leader ended at `end_offset` (its last offset + 1)."""
        ends.append((end_offset, self.now()))

    def fetched(self, ends: AppendEnds, old_offset: int, new_offset: int) -> None:
        """A follower that had confirmed `old_offset` (-1: not since this leadership) now
        fetches from `new_offset`: the oldest append ending in (old, new] waited this long."""
        if new_offset <= old_offset or old_offset < 0 or not ends:
            return
        for end, at in ends:
            if end > new_offset:
                return
            if end > old_offset:
                self.confirm.record(self.now() - at)
                return
