"""The acks=all purgatory: produce requests waiting until every in-sync replica has their batches.

A `DelayedProduce` is one request: the (topic, partition)s it appended to, each with the offset
the high watermark must reach (the batch's last offset + 1), and a future completed when every
partition has its answer. Each leader `Partition` keeps a `ProduceWaiters` queue: entries are
added in append order, so required offsets only grow and a HW move completes a prefix of the
queue (`on_high_watermark`, O(completed)). The answer per partition comes from
replication_decisions.produce_outcome: NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR
shrank below min.insync.replicas meanwhile. Losing leadership fails the whole queue with
NOT_LEADER_FOR_PARTITION (`fail_all`). `wait` bounds the request by its timeout_ms: partitions
still pending then are answered REQUEST_TIMED_OUT (their batches stay in the log, as in Kafka).
`start` is the same without a coroutine: a loop timer for the timeout, and `deferred`
(broker/deferred.py) resolved synchronously by the HW move that completes the last partition,
so the produce handler's answer is written in that iteration (a follower's fetch, usually).

Bound: a queue holds at most one entry per in-flight acks=all request on the partition (the
server bounds in-flight requests per connection and connections); entries of requests already
answered (timed out) are pruned when a queue grows past MAX_QUEUED.
"""

from __future__ import annotations

import asyncio
from collections import deque

from broker.deferred import Deferred
from broker.replication_decisions import produce_outcome
from protocol.errors import RequestTimedOutError

MAX_QUEUED = 4096
Key = tuple[str, int]


class DelayedProduce:
    def __init__(self) -> None:
        self.deferred: Deferred[dict[Key, int]] = Deferred(self._stop_timer)
        self.results: dict[Key, int] = {}
        self.pending: set[Key] = set()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def future(self) -> Deferred[dict[Key, int]]:
        """The completion (`done()`), as the asyncio future it used to be."""
        return self.deferred

    def expect(self, key: Key) -> None:
        self.pending.add(key)

    def complete(self, key: Key, error_code: int) -> None:
        if key not in self.pending:
            return
        self.pending.discard(key)
        self.results[key] = error_code
        if not self.pending:
            self._stop_timer()
            self.deferred.resolve(self.results)

    def start(self, timeout_ms: int) -> Deferred[dict[Key, int]]:
        """Every expected partition's error code once known, REQUEST_TIMED_OUT for those not
        done within timeout_ms; resolved at once when nothing is pending."""
        if not self.pending:
            self.deferred.resolve(self.results)
        elif self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(max(0, timeout_ms) / 1000, self._expire)
        return self.deferred

    async def wait(self, timeout_ms: int) -> dict[Key, int]:
        return await self.start(timeout_ms)

    def _expire(self) -> None:
        self._timer = None
        for key in list(self.pending):
            self.complete(key, RequestTimedOutError.code)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class ProduceWaiters:
    """One partition's queue of (required offset, request) in append order."""

    def __init__(self, key: Key) -> None:
        self.key = key
        self._queue: deque[tuple[int, DelayedProduce]] = deque()

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, required_offset: int, op: DelayedProduce) -> None:
        if len(self._queue) >= MAX_QUEUED:
            self._queue = deque(e for e in self._queue if self.key in e[1].pending)
        op.expect(self.key)
        self._queue.append((required_offset, op))

    def on_high_watermark(self, high_watermark: int, isr_size: int, min_insync: int) -> None:
        queue = self._queue
        while queue:
            required, op = queue[0]
            code = produce_outcome(high_watermark, required, isr_size, min_insync)
            if code is None:
                return
            queue.popleft()
            op.complete(self.key, code)

    def fail_all(self, error_code: int) -> None:
        queue, self._queue = self._queue, deque()
        for _, op in queue:
            op.complete(self.key, error_code)
