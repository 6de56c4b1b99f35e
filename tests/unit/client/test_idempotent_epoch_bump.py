"""An idempotent producer that loses a batch bumps its epoch only once the partition's other
batches of that epoch have settled, and never sends a partition's new-epoch batches while
batches of the old epoch are in flight or waiting to be retried (KIP-360; docs/design.md,
"Replication and idempotence"). Driven on a manual clock against the fake broker, which keeps
the broker's producer-state rules; the scripts play an ISR below min.insync.replicas
(NOT_ENOUGH_REPLICAS) that later recovers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from client.accumulator import RecordAccumulator
from client.producer import AsyncProducer
from client.types import TopicPartition
from protocol.batch import BatchHeader, decode_all, read_header
from protocol.clock import ManualClock
from protocol.errors import OutOfOrderSequenceNumberError, RequestTimedOutError
from tests.unit.client.fake_broker import FakeState, Refusal, bootstrap
from tests.unit.client.test_accumulator import T0, T1, Fut, add, leader_of

NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
DELIVERY_TIMEOUT_MS = 10_000
STEP_MS = 10  # the retry backoff: one step of the manual clock lets every backing-off batch go
MAX_STEPS = 300


@contextlib.asynccontextmanager
async def _producer(state: FakeState, clock: ManualClock) -> AsyncIterator[AsyncProducer]:
    """A started producer, closed without waiting long (on a stopped clock nothing expires, so
    a failed test must not wait for its batches)."""
    producer = AsyncProducer(
        bootstrap(state), acks="all", linger_ms=0, batch_size=1, retry_backoff_ms=STEP_MS,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS, clock=clock,
    )  # fmt: skip
    await producer.start()
    try:
        yield producer
    finally:
        await producer.close(timeout_ms=200)


async def _until(what: str, check: Callable[[], bool]) -> None:
    """Poll (real time, bounded) for a state the producer reaches without the clock moving."""
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


async def _step_until(what: str, clock: ManualClock, check: Callable[[], bool]) -> None:
    """Move the clock one backoff at a time, letting the sender run between steps, until
    `check` holds (at most MAX_STEPS steps: far less than any delivery timeout left)."""
    for _ in range(MAX_STEPS):
        if check():
            return
        clock.advance(STEP_MS)
        await asyncio.sleep(0.01)
    raise AssertionError(f"{what}: not reached within {MAX_STEPS} steps")


async def _steps(clock: ManualClock, count: int) -> None:
    """Let the sender run a few backoff rounds (a wrong producer would send here)."""
    for _ in range(count):
        clock.advance(STEP_MS)
        await asyncio.sleep(0.01)


def _arrived(state: FakeState, tp: tuple[str, int], epoch: int, sequence: int) -> bool:
    return any(
        (a.tp, a.producer_epoch, a.base_sequence) == (tp, epoch, sequence) for a in state.arrivals
    )


def _log_values(state: FakeState, tp: tuple[str, int]) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    for batch in state.logs[tp]:
        out.extend((r.offset, r.value or b"") for r in decode_all(batch))
    return out


def _assert_log_in_send_order(
    state: FakeState, tp: tuple[str, int], sent: list[tuple[bytes, asyncio.Future]]
) -> None:
    """The stored log holds the values in send order, each at most once; every acknowledged
    value is stored once, at the offset its acknowledgement gave."""
    order = {value: i for i, (value, _) in enumerate(sent)}
    log = _log_values(state, tp)
    positions = [order[value] for _, value in log]
    assert positions == sorted(set(positions)), f"{tp}: stored out of send order: {log}"
    stored_at = {value: offset for offset, value in log}
    for value, future in sent:
        if future.done() and future.exception() is None:
            assert stored_at.get(value) == future.result().offset, f"{tp}: {value!r} moved"


def _assert_epochs_never_go_back(state: FakeState, tp: tuple[str, int]) -> None:
    """No batch of an older epoch reached the partition's leader after a newer epoch's."""
    epochs = [a.producer_epoch for a in state.arrivals if a.tp == tp]
    assert epochs == sorted(epochs), f"{tp}: epochs arrived interleaved: {epochs}"


async def test_later_batches_settle_at_their_epoch_before_the_bump(fake1: FakeState) -> None:
    """b0 is stored but its answer says NOT_ENOUGH_REPLICAS_AFTER_APPEND, then the ISR stays
    short until b0 expires while b1..b4 are still being retried. They must go on at epoch 0
    (their sequences follow b0's) and be acknowledged; only then is the epoch bumped, and the
    next value goes out at epoch 1, sequence 0."""
    fake1.create_topic("o", 1)
    tp = ("o", 0)
    down = [True]

    def script(_tp: tuple[str, int], h: BatchHeader) -> Refusal | None:
        if not down[0]:
            return None
        if h.base_sequence == 0 and not _arrived(fake1, tp, 0, 0):
            return Refusal(NOT_ENOUGH_REPLICAS_AFTER_APPEND, stored=True)
        return Refusal(NOT_ENOUGH_REPLICAS)

    fake1.produce_script = script
    clock = ManualClock()
    sent: list[tuple[bytes, asyncio.Future]] = []
    async with _producer(fake1, clock) as producer:
        sent.append((b"v0", await producer.send("o", b"v0", partition=0)))
        await _until("b0 at the leader", lambda: _arrived(fake1, tp, 0, 0))
        clock.advance(DELIVERY_TIMEOUT_MS // 2)
        for i in range(1, 5):
            sent.append((b"v%d" % i, await producer.send("o", b"v%d" % i, partition=0)))
        await _step_until("b1..b4 at the leader", clock, lambda: _arrived(fake1, tp, 0, 4))
        clock.advance(DELIVERY_TIMEOUT_MS // 2)  # b0's deadline; b1..b4 have 5 s left
        await _until("b0 expired", sent[0][1].done)
        sent.append((b"v5", await producer.send("o", b"v5", partition=0)))
        await _steps(clock, 5)  # the ISR still short: b1..b4 are retried, v5 must wait
        down[0] = False
        await _step_until("every value settled", clock, lambda: all(f.done() for _, f in sent))
    _assert_log_in_send_order(fake1, tp, sent)
    _assert_epochs_never_go_back(fake1, tp)
    assert [f.result().offset for _, f in sent[1:]] == [1, 2, 3, 4, 5]
    with pytest.raises(RequestTimedOutError, match="delivery timed out after 10000 ms: "
                       "NOT_ENOUGH_REPLICAS"):  # fmt: skip
        sent[0][1].result()
    fields = [(h.producer_epoch, h.base_sequence) for h in map(read_header, fake1.logs[tp])]
    assert fields == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0)]


async def test_a_lost_batch_on_one_partition_leaves_the_other_undisturbed(
    fake3: FakeState,
) -> None:
    """p0's b0 expires (never stored) while p0's b1 and p1's w0..w3 are being retried. p1 goes
    on at epoch 0 and gets every value acknowledged in order; p0's b1 can never follow the lost
    b0 and fails for that reason once the leader says so; after the bump both partitions start
    again at sequence 0."""
    fake3.create_topic("o", 2)  # p0 led by broker 1, p1 by broker 2
    p0, p1 = ("o", 0), ("o", 1)
    down = {p0: True, p1: True}
    fake3.produce_script = lambda tp, _h: Refusal(NOT_ENOUGH_REPLICAS) if down[tp] else None
    clock = ManualClock()
    sent: dict[tuple[str, int], list[tuple[bytes, asyncio.Future]]] = {p0: [], p1: []}

    async def send(tp: tuple[str, int], value: bytes) -> None:
        sent[tp].append((value, await producer.send("o", value, partition=tp[1])))

    async with _producer(fake3, clock) as producer:
        await send(p0, b"v0")
        await _until("b0 at its leader", lambda: _arrived(fake3, p0, 0, 0))
        clock.advance(DELIVERY_TIMEOUT_MS // 2)
        await send(p0, b"v1")
        for i in range(3):
            await send(p1, b"w%d" % i)
        await _step_until("p0's b1, p1's w0..w2", clock, lambda: _arrived(fake3, p1, 0, 2)
                          and _arrived(fake3, p0, 0, 1))  # fmt: skip
        clock.advance(DELIVERY_TIMEOUT_MS // 2)  # b0's deadline
        await _until("b0 expired", sent[p0][0][1].done)
        await send(p1, b"w3")
        await send(p0, b"v2")
        await _steps(clock, 5)
        down[p0] = down[p1] = False
        await _step_until("every value settled", clock,
                          lambda: all(f.done() for s in sent.values() for _, f in s))  # fmt: skip
        await send(p1, b"w4")
        await _step_until("w4 settled", clock, sent[p1][-1][1].done)
    for tp in (p0, p1):
        _assert_log_in_send_order(fake3, tp, sent[tp])
        _assert_epochs_never_go_back(fake3, tp)
    assert [f.result().offset for _, f in sent[p1]] == [0, 1, 2, 3, 4]
    v0, v1, v2 = (f for _, f in sent[p0])
    with pytest.raises(RequestTimedOutError, match="delivery timed out after 10000 ms"):
        v0.result()
    with pytest.raises(OutOfOrderSequenceNumberError, match=r"sequence 0 .* was lost"):
        v1.result()
    assert v2.result().offset == 0
    fields = {
        tp: [(h.producer_epoch, h.base_sequence) for h in map(read_header, fake3.logs[tp])]
        for tp in (p0, p1)
    }
    assert fields == {p0: [(1, 0)], p1: [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]}


async def test_a_batch_that_never_found_a_leader_says_so_when_it_expires(
    fake1: FakeState,
) -> None:
    fake1.create_topic("o", 1, leader=99)  # a broker the metadata does not list
    clock = ManualClock()
    async with _producer(fake1, clock) as producer:
        future = await producer.send("o", b"v", partition=0)
        clock.advance(DELIVERY_TIMEOUT_MS)
        await _until("expired", future.done)
    with pytest.raises(RequestTimedOutError, match=r"delivery timed out after 10000 ms: .*leader"):
        future.result()


# ----- the accumulator's rules, without a broker -------------------------------------------------

PID = 7


def _drain(acc: RecordAccumulator) -> list:
    return [b for bs in acc.drain({1, 2}, leader_of, 1 << 20, 0).values() for b in bs]


def _fill(acc: RecordAccumulator, tp: TopicPartition, count: int) -> None:
    for _ in range(count):
        add(acc, tp, None, b"x" * 10, None, 1, Fut(), 0)


def test_a_lost_partition_sends_no_new_batch_and_the_bump_waits_for_it_to_settle() -> None:
    acc = RecordAccumulator(batch_size=20, producer_id=PID)
    _fill(acc, T0, 3)
    b0, b1, b2 = (_drain(acc)[0] for _ in range(3))
    _fill(acc, T0, 1)  # a new batch, queued
    acc.requeue(b0, retry_at_ms=0)
    acc.requeue(b1, retry_at_ms=0)
    (again,) = _drain(acc)
    assert again is b0
    acc.done_in_flight(b0)
    acc.sequence_lost(b0)  # failed for good: b1 and b2 still unsettled
    assert not acc.epoch_bump_due()
    assert [b.base_sequence for b in _drain(acc)] == [1]  # b1's retry goes, nothing new
    assert _drain(acc) == []
    acc.done_in_flight(b1)
    assert not acc.epoch_bump_due()
    acc.done_in_flight(b2)
    assert acc.epoch_bump_due()
    acc.reset_producer(PID, 1)
    (new,) = _drain(acc)
    assert (new.producer_epoch, new.base_sequence) == (1, 0)


def test_after_a_bump_a_partition_switches_epoch_only_once_its_old_batches_settle() -> None:
    acc = RecordAccumulator(batch_size=20, producer_id=PID)
    _fill(acc, T0, 1)
    _fill(acc, T1, 2)
    first = _drain(acc)
    (old_t1,) = [b for b in first if b.tp == T1]
    (old_t0,) = [b for b in first if b.tp == T0]
    acc.done_in_flight(old_t0)
    acc.sequence_lost(old_t0)
    assert acc.epoch_bump_due()
    acc.reset_producer(PID, 1)
    _fill(acc, T0, 1)
    acc.requeue(old_t1, retry_at_ms=0)  # T1: an epoch-0 retry ahead of a new batch
    out = sorted(_drain(acc), key=lambda b: b.tp.partition)
    assert [(b.tp, b.producer_epoch, b.base_sequence) for b in out] == [(T0, 1, 0), (T1, 0, 0)]
    assert [b.tp for b in _drain(acc)] == []  # T1's new batch waits for its epoch-0 retry
    acc.done_in_flight(old_t1)
    (switched,) = _drain(acc)
    assert (switched.tp, switched.producer_epoch, switched.base_sequence) == (T1, 1, 0)
