"""The fetch purgatory: long-polling fetches parked on the partitions they read.

A `DelayedFetch` is one fetch that found fewer than min_bytes. It parks a `_Waiter` on every
partition it reads (Partition.waiters for consumers, replica_waiters for followers) and a timer
for max_wait_ms. A partition's wake-up (`set_result`, the asyncio.Future spelling
Partition._wake uses) does not re-read at once: partition state may be half-updated then
(a LeaderAndIsr being applied). It puts the fetch on the `FetchPurgatory`'s woken list; the
replica manager calls `complete_woken()` where its state is whole again (the end of an append
and of a fetch read), so an append answers the fetches it satisfies in the same event-loop
iteration; a wake from anywhere else is completed by one `call_soon`. A re-read that is still
short parks again with fresh waiters (a generation number makes the old ones `done()`, so the
partitions prune them). The timer answers with a last read. Completion resolves the fetch's
`Deferred` (broker/deferred.py), whose listener (the server) writes the answer synchronously.

Bound: the replica manager admits at most max_delayed_fetches parked fetches; beyond that a
fetch is answered at once with what there is. One timer and one waiter per partition per fetch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from broker.deferred import Deferred

R = TypeVar("R")
_REJECTED = object()  # what `_read_or_reject` gives when the read raised


class _Waiter:
    """What a partition holds for a parked fetch: done once the fetch moved on."""

    __slots__ = ("fetch", "generation")

    def __init__(self, fetch: DelayedFetch[object], generation: int) -> None:
        self.fetch = fetch
        self.generation = generation

    def done(self) -> bool:
        f = self.fetch
        return f.finished or f.generation != self.generation or f.woken

    def set_result(self, _result: None) -> None:
        if not self.done():
            self.fetch.wake()


class DelayedFetch(Generic[R]):
    """One parked fetch: `read()` re-reads, `satisfied(reads)` says whether to answer."""

    __slots__ = ("_park", "_purgatory", "_read", "_satisfied", "_timer", "deferred", "finished",
                 "generation", "woken")  # fmt: skip

    def __init__(
        self,
        purgatory: FetchPurgatory,
        read: Callable[[], R],
        satisfied: Callable[[R], bool],
        park: Callable[[_Waiter], None],
    ) -> None:
        self._purgatory = purgatory
        self._read = read
        self._satisfied = satisfied
        self._park = park
        self._timer: asyncio.TimerHandle | None = None
        self.deferred: Deferred[R] = Deferred(self._cancel)
        self.finished = False
        self.woken = False
        self.generation = 0

    def start(self, max_wait_ms: int) -> None:
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(max_wait_ms / 1000, self._expire)
        self._park(_Waiter(self, self.generation))  # type: ignore[arg-type]

    def wake(self) -> None:
        self.woken = True
        self._purgatory.woken(self)  # type: ignore[arg-type]

    def retry(self) -> None:
        """Re-read after a wake-up: answer, or park again with fresh waiters."""
        self.woken = False
        if self.finished:
            return
        reads = self._read_or_reject()
        if reads is _REJECTED:
            return
        if self._satisfied(reads):
            self._finish()
            self.deferred.resolve(reads)
            return
        self.generation += 1
        self._park(_Waiter(self, self.generation))  # type: ignore[arg-type]

    def _expire(self) -> None:
        self._timer = None
        if self.finished:
            return
        reads = self._read_or_reject()
        if reads is _REJECTED:
            return
        self._finish()
        self.deferred.resolve(reads)

    def _read_or_reject(self) -> Any:
        """The re-read; a bug in it answers this fetch with the error (not the appender, whose
        append woke it) and gives _REJECTED."""
        try:
            return self._read()
        except Exception as exc:
            self._finish()
            self.deferred.reject(exc)
            return _REJECTED

    def _finish(self) -> None:
        self.finished = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._purgatory.finished()

    def _cancel(self) -> None:
        """The connection went away: stop waiting (partitions prune the done waiters)."""
        if not self.finished:
            self._finish()


class FetchPurgatory:
    """The parked fetches' count and the list of those woken since the last completion."""

    def __init__(self) -> None:
        self.parked = 0
        self._woken: list[DelayedFetch[object]] = []
        self._scheduled = False
        self._completing = False

    def add(self, fetch: DelayedFetch[R], max_wait_ms: int) -> Deferred[R]:
        self.parked += 1
        fetch.start(max_wait_ms)
        return fetch.deferred

    def finished(self) -> None:
        self.parked -= 1

    def woken(self, fetch: DelayedFetch[object]) -> None:
        self._woken.append(fetch)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._complete_soon)

    def _complete_soon(self) -> None:
        self._scheduled = False
        self.complete_woken()

    def complete_woken(self) -> None:
        """Re-read every woken fetch now; one woken meanwhile is taken in the same call."""
        if self._completing or not self._woken:
            return
        self._completing = True
        try:
            while self._woken:
                woken, self._woken = self._woken, []
                for fetch in woken:
                    fetch.retry()
        finally:
            self._completing = False
