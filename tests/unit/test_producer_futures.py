"""Per-record futures settled per batch (client/record_future.py), driven through the
accumulator without a broker: results, a failed batch's exception, callbacks run once,
cancellation, and a SendFuture waited on from another thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from client.accumulator import RecordAccumulator
from client.record_future import RecordFuture, SendFuture
from client.types import TopicPartition
from protocol.errors import NotLeaderForPartitionError

TP = TopicPartition("t", 0)


def _fill(acc: RecordAccumulator, n: int, cls: type) -> list:
    futures = [acc.append_new(TP, None, b"v0", None, 100, 14, 0, cls)]
    futures += [acc.append(TP, None, b"v%d" % i, None, 100 + i, 14, cls) for i in range(1, n)]
    return futures


def _drained(acc: RecordAccumulator):  # type: ignore[no-untyped-def]
    (batch,) = acc.drain({1}, lambda _tp: 1, 1 << 20, 0)[1]
    acc.done_in_flight(batch)
    return batch


def test_send_futures_resolve_with_their_batch_and_callbacks_run_once() -> None:
    acc = RecordAccumulator()
    futures = _fill(acc, 3, SendFuture)
    assert all(isinstance(f, concurrent.futures.Future) for f in futures)
    calls: list[int] = []
    futures[1].add_done_callback(lambda f: calls.append(f.get().offset))
    assert not futures[0].done() and futures[0].running() and not futures[0].cancel()
    with pytest.raises(TimeoutError):
        futures[0].result(timeout=0.01)
    batch = _drained(acc)
    batch.complete(50, -1)
    batch.complete(99, -1)  # a second settlement is ignored
    assert [f.get(0) for f in futures] == [("t", 0, 50 + i, 100 + i) for i in range(3)]
    futures[2].add_done_callback(lambda f: calls.append(f.result().offset))  # done: at once
    assert calls == [51, 52]
    assert futures[0].exception() is None and not futures[0].cancelled()


def test_a_failed_batch_fails_every_record() -> None:
    acc = RecordAccumulator()
    futures = _fill(acc, 2, SendFuture)
    seen: list[BaseException | None] = []
    futures[0].add_done_callback(lambda f: seen.append(f.exception()))
    _drained(acc).fail(NotLeaderForPartitionError("gone"))
    for f in futures:
        with pytest.raises(NotLeaderForPartitionError):
            f.get(0)
        assert isinstance(f.exception(0), NotLeaderForPartitionError)
    assert len(seen) == 1 and isinstance(seen[0], NotLeaderForPartitionError)


def test_send_future_result_waits_for_another_thread() -> None:
    acc = RecordAccumulator()
    (future,) = _fill(acc, 1, SendFuture)
    batch = _drained(acc)
    timer = threading.Timer(0.05, batch.complete, (7, 1234))
    timer.start()
    assert future.result(timeout=10) == ("t", 0, 7, 1234)
    timer.join()


async def test_record_futures_under_gather_wait_for_and_cancel() -> None:
    acc = RecordAccumulator()
    acc.loop = asyncio.get_running_loop()
    futures = _fill(acc, 4, RecordFuture)
    calls: list[RecordFuture] = []
    futures[3].add_done_callback(calls.append)
    futures[3].add_done_callback(calls.append)
    assert futures[3].remove_done_callback(calls.append) == 2
    cancelled: list[bool] = []
    futures[2].add_done_callback(lambda f: cancelled.append(f.cancelled()))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(futures[2], 0.01)  # wait_for cancels it on timeout
    assert futures[2].cancelled() and cancelled == [True]
    gathered = asyncio.gather(*futures[:2])
    waited = asyncio.ensure_future(_await(futures[1]))
    batch = _drained(acc)
    assert [r for r in batch.stamps] == [100, 101, 102, 103]  # the cancelled record stays
    batch.complete(10, -1)
    assert await gathered == [("t", 0, 10, 100), ("t", 0, 11, 101)]
    assert await waited == ("t", 0, 11, 101)
    await asyncio.sleep(0)
    assert cancelled == [True] and calls == []  # no callback ran twice, none removed ran
    with pytest.raises(asyncio.CancelledError):
        futures[2].result()
    assert futures[3].result().offset == 13 and not futures[3].cancel()


async def _await(future: RecordFuture) -> object:
    return await future


def test_concurrent_futures_wait_and_as_completed_follow_send_futures() -> None:
    """kafka-python and concurrent.futures users wait on many sends at once."""
    acc = RecordAccumulator()
    futures = _fill(acc, 3, SendFuture)
    done, pending = concurrent.futures.wait(futures, timeout=0.01)
    assert not done and set(pending) == set(futures)
    batch = _drained(acc)
    timer = threading.Timer(0.05, batch.complete, (10, -1))
    timer.start()
    done, pending = concurrent.futures.wait(futures, timeout=10)  # woken by the completion
    timer.join()
    assert set(done) == set(futures) and not pending
    finished = list(concurrent.futures.as_completed(futures, timeout=10))
    assert sorted(f.get(0).offset for f in finished) == [10, 11, 12]

    failing = _fill(acc, 2, SendFuture)
    waited: list[set[concurrent.futures.Future]] = []
    waiter = threading.Thread(
        target=lambda: waited.append(
            concurrent.futures.wait(failing, return_when="FIRST_EXCEPTION", timeout=10)[0]
        )
    )
    waiter.start()
    while not failing[0].batch.cf:  # the waiter has installed itself
        threading.Event().wait(0.001)
    _drained(acc).fail(NotLeaderForPartitionError("gone"))
    waiter.join(10)
    assert waited and waited[0] == set(failing)


class _CountingLoop(asyncio.SelectorEventLoop):
    """Counts what is scheduled with call_soon (callbacks, not the loop's own wake-ups)."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduled = 0

    def call_soon(self, *args, **kwargs):  # type: ignore[no-untyped-def,override]
        self.scheduled += 1
        return super().call_soon(*args, **kwargs)


def test_callbacks_added_to_a_settled_batch_run_soon_in_one_pass_in_their_order() -> None:
    """asyncio's rule for a done future (a callback added runs soon, never inline) with one
    call_soon for every callback added before the loop gets to them, not a Handle each: the
    case of `asyncio.gather` over records acknowledged before it was called. One added while
    they run gets a later pass."""
    loop = _CountingLoop()
    try:
        acc = RecordAccumulator()
        acc.loop = loop
        futures = _fill(acc, 500, RecordFuture)
        _drained(acc).complete(0, -1)
        order: list[int] = []
        late: list[int] = []

        def first(f: RecordFuture) -> None:
            order.append(f.index)
            if f.index == 0:
                f.add_done_callback(lambda g: late.append(len(order)))

        async def gather_after_callbacks() -> list[object]:
            for f in futures:
                f.add_done_callback(first)
            assert order == []  # not inline
            loop.scheduled = 0
            return await asyncio.gather(*futures)

        results = loop.run_until_complete(gather_after_callbacks())
        assert order == list(range(500))
        assert late == [500]  # after the pass it was added in
        assert [r.offset for r in results] == list(range(500))  # type: ignore[attr-defined]
        assert loop.scheduled <= 5  # was one per future: 500 for gather alone
    finally:
        loop.close()
