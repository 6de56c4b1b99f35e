"""A parked fetch is answered inside the append that satisfies it (broker/delayed_fetch.py).

No timing: the server's `_on_frame` is wrapped, and the test looks at the consumer connection's
pending answers right after the produce frame's call returns, before the event loop turns
again. With a task per parked fetch (the old way) the fetch answer was still pending then.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import broker.server
from broker.deferred import Deferred
from broker.delayed_fetch import DelayedFetch, _Waiter
from broker.delayed_produce import DelayedProduce, ProduceWaiters
from broker.metrics_requests import MeteredDoor, RequestMetrics
from protocol.api.fetch import FetchResponse
from tests.unit.broker.harness import running_broker
from tests.unit.broker.helpers import batch, fetch, produce, stamped


async def test_a_parked_fetch_is_answered_in_the_iteration_of_the_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int]] = []  # (pending answers of the other connections, parked)
    original = broker.server.Connection._on_frame

    def watched(self: broker.server.Connection, frame: bytes) -> None:
        original(self, frame)
        others = [c for c in self.server.connections if c is not self]
        seen.append((sum(len(c.pending) for c in others), self.ctx.replicas.delayed_fetches))

    async with running_broker(tmp_path) as b:
        await b.lead("lat")
        consumer = await b.connect()
        producer = await b.connect()
        waiting = asyncio.create_task(consumer.send(fetch("lat", {0: 0}, max_wait_ms=30_000)))
        while b.ctx.replicas.delayed_fetches == 0:
            await asyncio.sleep(0.01)
        monkeypatch.setattr(broker.server.Connection, "_on_frame", watched)
        data = batch(3)
        await producer.send(produce("lat", 0, data))
        resp: FetchResponse = await waiting
        assert bytes(resp.topics[0].partitions[0].records) == stamped(data, 0)
    # the produce frame's _on_frame: the fetch was answered and unparked within it
    assert seen[0] == (0, 0)


async def test_a_parked_fetchs_answer_is_written_before_its_request_metrics_are_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's listener goes first on a parked fetch's Deferred: its answer leaves before
    the metrics walk the response for error codes (they only observe it)."""
    unanswered: list[int] = []  # the fetch connection's pending answers, as metrics see them
    parked_on: list[broker.server.Connection] = []
    original = RequestMetrics.finished

    def watched(self: Any, api: str, protocol: str, seconds: float, codes: Any,
                remote_s: float | None = None) -> None:  # fmt: skip
        if api == "Fetch" and parked_on:
            unanswered.append(len(parked_on[0].pending))
        original(self, api, protocol, seconds, codes, remote_s)

    monkeypatch.setattr(RequestMetrics, "finished", watched)
    async with running_broker(tmp_path) as b:
        await b.lead("metered")
        b.server.door = MeteredDoor(b.server.door, RequestMetrics())
        consumer = await b.connect()
        producer = await b.connect()
        waiting = asyncio.create_task(consumer.send(fetch("metered", {0: 0}, max_wait_ms=30_000)))
        while b.ctx.replicas.delayed_fetches == 0:
            await asyncio.sleep(0.01)
        parked_on.extend(c for c in b.server.connections if c.pending)
        await producer.send(produce("metered", 0, batch(2)))
        await waiting
    assert len(parked_on) == 1 and unanswered == [0]


async def test_a_parked_fetch_whose_connection_closes_is_unparked(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("gone")
        consumer = await b.connect()
        waiting = asyncio.create_task(consumer.send(fetch("gone", {0: 0}, max_wait_ms=30_000)))
        while b.ctx.replicas.delayed_fetches == 0:
            await asyncio.sleep(0.01)
        await consumer.close()
        for _ in range(500):  # the server sees the close within a few loop turns
            if b.ctx.replicas.delayed_fetches == 0:
                break
            await asyncio.sleep(0.01)
        assert b.ctx.replicas.delayed_fetches == 0  # cancelled: its timer and count released
        assert all(w.done() for w in b.ctx.replicas.partitions[("gone", 0)].waiters)
        waiting.cancel()


def test_deferred_runs_listeners_synchronously_and_maps() -> None:
    d: Deferred[int] = Deferred()
    got: list[Any] = []
    mapped = d.map(lambda v: v * 2)
    mapped.add_listener(lambda v, e: got.append((v, e)))
    assert got == []
    d.resolve(21)
    assert got == [(42, None)]  # within resolve, not on a later loop turn
    late: list[Any] = []
    mapped.add_listener(lambda v, e: late.append(v))
    assert late == [42]


def test_deferred_map_passes_a_conversion_error_on() -> None:
    d: Deferred[int] = Deferred()
    got: list[Any] = []
    d.map(lambda v: 1 // v).add_listener(lambda v, e: got.append(type(e)))
    d.resolve(0)
    assert got == [ZeroDivisionError]


async def test_an_acks_all_wait_is_answered_inside_the_hw_move() -> None:
    q = ProduceWaiters(("t", 0))
    op = DelayedProduce()
    q.add(10, op)
    got: list[Any] = []
    op.start(timeout_ms=30_000).add_listener(lambda codes, e: got.append(codes))
    q.on_high_watermark(10, isr_size=2, min_insync=2)
    assert got == [{("t", 0): 0}]  # synchronously, not on a later loop turn


async def test_an_acks_all_wait_answers_only_once_every_partition_is_known(
    tmp_path: Path,
) -> None:
    """One partition led here and one not: the not-led one's answer must not end the wait."""
    async with running_broker(tmp_path) as b:
        await b.lead("two", partitions=2)
        rm = b.ctx.replicas
        rm.partitions[("two", 0)].isr.append(99)  # a follower that never fetches
        d = rm.replication_deferred([("gone", 0, 1), ("two", 0, 1)], timeout_ms=30_000)
        assert not d.done()  # ("two", 0) is still waiting for its follower
        d.cancel()


def test_a_completed_deferred_holds_no_reference_back_to_its_owner() -> None:
    """A Deferred's canceller is often a method of its owner (a DelayedFetch's `_cancel`), a
    cycle while it is pending. Completed or cancelled, it lets go of it, so the owner is freed
    by reference counting instead of waiting for the cyclic GC (whose collections, fed by one
    such cycle per parked fetch, paused the leader for up to 15 ms)."""

    class Owner:
        def __init__(self) -> None:
            self.deferred: Deferred[int] = Deferred(self.cancelled)

        def cancelled(self) -> None:
            pass

    gc.disable()
    try:
        for finish in (lambda d: d.resolve(1), lambda d: d.reject(ValueError()), Deferred.cancel):
            owner = Owner()
            finish(owner.deferred)
            alive = weakref.ref(owner)
            del owner
            assert alive() is None
    finally:
        gc.enable()


async def test_parked_fetches_answered_by_appends_leave_no_cycles_through_the_fetch(
    tmp_path: Path,
) -> None:
    """The lone-record path (a fetch parked, an append answering it) frees its DelayedFetch,
    the fetch's Deferred and the _Waiter parked on the partition by reference counting: none
    of them is in a reference cycle (before, each pair left one, ~28 objects, collected by gen0
    runs of ~80 us). The collector keeps what it finds (DEBUG_SAVEALL) and only those types are
    looked for: other cycles in the process (a timer, a caught exception) come and go with load
    and are not what this is about."""
    async with running_broker(tmp_path) as b:
        await b.lead("lat")
        b.server.door = MeteredDoor(b.server.door, RequestMetrics())
        consumer = await b.connect()
        producer = await b.connect()
        data = batch(1)

        async def pair(offset: int) -> None:
            waiting = asyncio.create_task(
                consumer.send(fetch("lat", {0: offset}, max_wait_ms=30_000))
            )
            while b.ctx.replicas.delayed_fetches == 0:
                await asyncio.sleep(0)
            await producer.send(produce("lat", 0, data))
            await waiting

        await pair(0)  # warm: connections, caches, the first segment's state
        gc.collect()
        debug, saved = gc.get_debug(), len(gc.garbage)
        gc.set_debug(debug | gc.DEBUG_SAVEALL)
        try:
            for offset in range(1, 51):
                await pair(offset)
            gc.collect()
            in_cycles = Counter(
                type(o).__name__
                for o in gc.garbage[saved:]
                if isinstance(o, (DelayedFetch, Deferred, _Waiter))
            )
        finally:
            gc.set_debug(debug)
            del gc.garbage[saved:]  # what SAVEALL kept, freed by the next collection
    assert in_cycles == {}  # by type: before, 50 of DelayedFetch and of Deferred
