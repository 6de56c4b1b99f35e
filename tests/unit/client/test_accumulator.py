"""The record accumulator alone: batching, readiness, draining per node, retries, memory."""

import asyncio

import pytest

from client.accumulator import RecordAccumulator, estimate_size
from client.record_failures import InvalidDifferentRecordError
from client.record_future import RecordFuture, SendFuture
from client.types import TopicPartition
from protocol.api.produce import RecordError
from protocol.batch import decode_all
from protocol.errors import InvalidTimestampError, NotLeaderForPartitionError
from protocol.record_errors import InvalidTimestampsError, produce_error

APPENDED, NEW_BATCH, BATCH_FULL = "appended", "new batch", "batch full"


class Fut:
    """A stand-in for a bulk batch's asyncio future (the accumulator only calls done/set_*);
    `add` puts the record's own future (a SendFuture) in `record`."""

    def __init__(self) -> None:
        self.result: object = None
        self.error: BaseException | None = None
        self._done = False
        self.record: SendFuture | None = None

    def done(self) -> bool:
        return self._done

    def set_result(self, value: object) -> None:
        self.result, self._done = value, True

    def set_exception(self, exc: BaseException) -> None:
        self.error, self._done = exc, True


T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
T2 = TopicPartition("t", 2)
LEADERS = {T0: 1, T1: 2, T2: 1}


def add(
    acc: RecordAccumulator, tp: TopicPartition, key: bytes | None, value: bytes,
    headers: list | None, ts: int, fut: Fut, now_ms: int,
) -> int:  # fmt: skip
    """The producer's two-step append: the open batch, else a new one; the outcome."""
    size = estimate_size(key, value, headers)
    record = acc.append(tp, key, value, headers, ts, size, SendFuture)
    outcome = APPENDED
    if record is None:
        outcome = BATCH_FULL if acc.close_open(tp) else NEW_BATCH
        record = acc.append_new(tp, key, value, headers, ts, size, now_ms, SendFuture)
    fut.record = record
    return BATCH_FULL if record.batch.closed else outcome


def leader_of(tp: TopicPartition) -> int:
    return LEADERS.get(tp, -1)


def test_records_fill_batches_up_to_batch_size() -> None:
    acc = RecordAccumulator(batch_size=100)
    size = estimate_size(None, b"x" * 38, None)  # 50
    outcomes = [add(acc, T0, None, b"x" * 38, None, 1, Fut(), 0) for _ in range(5)]
    assert outcomes == [NEW_BATCH, BATCH_FULL, NEW_BATCH, BATCH_FULL, NEW_BATCH]
    assert acc.append(T0, None, b"x" * 38, None, 1, size).batch.closed  # full
    assert acc.append(T0, None, b"x" * 38, None, 1, size) is None  # needs a new batch
    assert acc.used_bytes == 6 * size
    assert acc.incomplete == 3


def test_a_record_joins_the_open_batch_until_it_is_full() -> None:
    acc = RecordAccumulator(batch_size=200)
    assert add(acc, T0, None, b"x" * 38, None, 1, Fut(), 0) == NEW_BATCH
    assert add(acc, T0, None, b"x" * 38, None, 1, Fut(), 0) == APPENDED
    assert add(acc, T0, None, b"x" * 38, None, 1, Fut(), 0) == APPENDED
    assert add(acc, T0, None, b"x" * 38, None, 1, Fut(), 0) == BATCH_FULL
    assert acc.incomplete == 1


def test_headers_of_some_records_only_keep_their_places() -> None:
    """A batch keeps no headers column until a record has headers; then it is filled in."""
    acc = RecordAccumulator()
    sent = [(None, b"a", None), (b"k", b"b", None), (None, b"c", [("h", b"1")]), (None, b"d", None)]
    for key, value, headers in sent:
        add(acc, T0, key, value, headers, 5, Fut(), 0)
    batch = acc.close_open(T0) and acc._queue(T0)[0]
    assert batch
    got = [(r.key, r.value, r.headers) for r in decode_all(batch.payload(0))]
    assert got == sent
    plain = acc.append_new(T1, None, b"x", None, 5, estimate_size(None, b"x", None), 0)
    assert plain.batch.headers is None  # no record with headers: no column at all


def test_linger_decides_readiness() -> None:
    acc = RecordAccumulator(linger_ms=10)
    add(acc, T0, None, b"v", None, 1, Fut(), 100)
    not_yet = acc.ready(leader_of, now_ms=105)
    assert not_yet.nodes == set() and not_yet.next_check_ms == 5
    assert acc.ready(leader_of, now_ms=110).nodes == {1}


def test_flush_and_memory_waiters_make_everything_ready() -> None:
    acc = RecordAccumulator(linger_ms=1000)
    add(acc, T0, None, b"v", None, 1, Fut(), 0)
    acc.flushing = 1
    assert acc.ready(leader_of, 0).nodes == {1}
    acc.flushing, acc.memory_waiters = 0, 1
    assert acc.ready(leader_of, 0).nodes == {1}


def test_drain_takes_one_batch_per_partition_grouped_by_node() -> None:
    acc = RecordAccumulator(batch_size=100)
    for tp in (T0, T1, T2):
        for _ in range(4):  # two batches each
            add(acc, tp, None, b"x" * 38, None, 1, Fut(), 0)
    ready = acc.ready(leader_of, 0)
    assert ready.nodes == {1, 2}
    drained = acc.drain(ready.nodes, leader_of, 1 << 20, 0)
    assert sorted(b.tp for b in drained[1]) == [T0, T2]
    assert [b.tp for b in drained[2]] == [T1]
    assert acc.queued_batches() == 3


def test_drain_respects_max_request_bytes_and_in_flight_limit() -> None:
    acc = RecordAccumulator(batch_size=100, max_in_flight_per_partition=1)
    for tp in (T0, T2):
        add(acc, tp, None, b"x" * 88, None, 1, Fut(), 0)  # 100 bytes: full
    drained = acc.drain({1}, leader_of, 150, 0)
    assert len(drained[1]) == 1  # the second would pass 150 bytes
    assert acc.drain({1}, leader_of, 150, 0)[1][0].tp != drained[1][0].tp
    assert acc.drain({1}, leader_of, 150, 0) == {}  # both partitions at their in-flight limit


def test_drain_says_whether_it_left_batches_that_may_be_ready_at_once() -> None:
    acc = RecordAccumulator(batch_size=100)
    add(acc, T0, None, b"x" * 38, None, 1, Fut(), 0)
    acc.drain({1}, leader_of, 1 << 20, 0)
    assert not acc.left_behind  # a lone batch: nothing more until an append or an answer
    for _ in range(4):  # two batches of T0
        add(acc, T0, None, b"x" * 38, None, 1, Fut(), 0)
    acc.drain({1}, leader_of, 1 << 20, 0)
    assert acc.left_behind  # T0's second batch
    acc.drain({1}, leader_of, 1 << 20, 0)
    assert not acc.left_behind
    for tp in (T0, T2):  # both on node 1, too big for one request together
        add(acc, tp, None, b"x" * 88, None, 1, Fut(), 0)
    assert len(acc.drain({1}, leader_of, 150, 0)[1]) == 1
    assert acc.left_behind  # the one that did not fit


def test_a_partition_at_its_in_flight_bound_leaves_nothing_ready_behind() -> None:
    """Its next batch waits for an answer (which wakes the sender), so the drain that took the
    last slot does not ask for another pass at once."""
    acc = RecordAccumulator(batch_size=100, max_in_flight_per_partition=1)
    for _ in range(4):  # two batches of T0
        add(acc, T0, None, b"x" * 38, None, 1, Fut(), 0)
    assert [b.tp for b in acc.drain({1}, leader_of, 1 << 20, 0)[1]] == [T0]
    assert not acc.left_behind
    assert acc.drain({1}, leader_of, 1 << 20, 0) == {}  # indeed: nothing until the answer


def test_unknown_leader_is_reported() -> None:
    acc = RecordAccumulator()
    tp = TopicPartition("other", 0)
    add(acc, tp, None, b"v", None, 1, Fut(), 0)
    assert acc.ready(leader_of, 0).unknown_leaders == {tp}


def test_completion_assigns_offsets_and_frees_memory() -> None:
    acc = RecordAccumulator()
    futs = [Fut() for _ in range(3)]
    for i, f in enumerate(futs):
        add(acc, T0, b"k", b"v%d" % i, [("h", b"1")], 1000 + i, f, 0)
    (batch,) = acc.drain({1}, leader_of, 1 << 20, 0)[1]
    records = decode_all(batch.payload(0))
    assert [(r.key, r.value, r.timestamp, r.headers) for r in records] == [
        (b"k", b"v%d" % i, 1000 + i, [("h", b"1")]) for i in range(3)
    ]
    acc.done_in_flight(batch)
    assert not any(f.record.done() for f in futs)
    batch.complete(42, -1)
    assert [f.record.get(0) for f in futs] == [("t", 0, 42 + i, 1000 + i) for i in range(3)]
    assert acc.used_bytes == 0 and acc.incomplete == 0


async def test_record_futures_settle_with_their_batch_and_one_may_be_cancelled() -> None:
    """RecordFutures (asyncio flavour): a cancelled one stays cancelled, its record is sent."""
    loop = asyncio.get_running_loop()
    acc = RecordAccumulator()
    acc.loop = loop
    futs = [acc.append_new(T0, None, b"v0", None, 2000, 14, 0)]
    futs += [acc.append(T0, None, b"v%d" % i, None, 2000 + i, 14) for i in range(1, 5)]
    assert all(type(f) is RecordFuture and not f.done() for f in futs)
    assert futs[2].cancel() and not futs[2].cancel()
    (batch,) = acc.drain({1}, leader_of, 1 << 20, 0)[1]
    assert [r.value for r in decode_all(batch.payload(0))] == [b"v%d" % i for i in range(5)]
    acc.done_in_flight(batch)
    batch.complete(7, -1)
    assert futs[2].cancelled() and futs[2].done()
    with pytest.raises(asyncio.CancelledError):
        futs[2].result()
    assert [f.result() for i, f in enumerate(futs) if i != 2] == [
        ("t", 0, 7 + i, 2000 + i) for i in (0, 1, 3, 4)
    ]
    more = [acc.append_new(T0, None, b"x", None, 5, 13, 0)]
    more += [acc.append(T0, None, b"x", None, 5, 13) for _ in range(2)]
    gathered = asyncio.gather(*more)
    (batch,) = acc.drain({1}, leader_of, 1 << 20, 0)[1]
    batch.complete(100, 999)  # LogAppendTime: the broker's timestamp for every record
    assert await gathered == [("t", 0, 100 + i, 999) for i in range(3)]


async def test_a_batch_refused_for_some_records_fails_each_with_its_own_error() -> None:
    """KIP-467, as librdkafka: the records the broker named fail with the partition's error and
    their own message, the others with one InvalidDifferentRecordError naming the bad ones;
    both future flavours, result() and exception() alike."""
    acc = RecordAccumulator()
    sync = [Fut() for _ in range(4)]
    for i, f in enumerate(sync):
        add(acc, T0, None, b"v%d" % i, None, 1000 + i, f, 0)
    acc.loop = asyncio.get_running_loop()
    futs = [acc.append_new(T1, None, b"v0", None, 5, 13, 0)]
    futs += [acc.append(T1, None, b"v%d" % i, None, 5, 13) for i in (1, 2)]
    gathered = asyncio.gather(*futs, return_exceptions=True)
    named = [RecordError(1, "timestamp 9 is out of range"), RecordError(3)]
    refusal = produce_error(InvalidTimestampError.code, "2 bad timestamps", named)
    batches = acc.drain({1, 2}, leader_of, 1 << 20, 0)
    for batch in batches[1] + batches[2]:
        batch.fail(refusal)
    errors = [f.record.exception(0) for f in sync]
    different, own = InvalidDifferentRecordError, InvalidTimestampsError
    assert [type(e) for e in errors] == [different, own, different, own]
    assert (errors[1].message, errors[3].message) == (
        "timestamp 9 is out of range",
        "2 bad timestamps",
    )
    assert [e.batch_index for e in errors[1].record_errors] == [1]
    assert errors[0] is errors[2] and not errors[0].retriable
    assert errors[0].code == InvalidTimestampError.code
    assert str(errors[0]) == (
        "INVALID_DIFFERENT_RECORD: refused because another record of its batch was invalid: "
        "records 1, 3 (INVALID_TIMESTAMP: 2 bad timestamps)"
    )
    with pytest.raises(InvalidTimestampsError, match="out of range"):
        sync[1].record.get(0)
    got = await gathered
    assert [type(e) for e in got] == [different, own, different]
    assert futs[1].exception() is got[1] and futs[0].exception() is got[0]


def test_requeue_goes_first_and_backs_off() -> None:
    acc = RecordAccumulator(batch_size=50)
    first, second = Fut(), Fut()
    add(acc, T0, None, b"x" * 38, None, 1, first, 0)
    add(acc, T0, None, b"x" * 38, None, 1, second, 0)
    (batch,) = acc.drain({1}, leader_of, 1 << 20, 0)[1]
    acc.requeue(batch, retry_at_ms=100)
    waiting = acc.ready(leader_of, 50)
    assert waiting.nodes == set() and waiting.next_check_ms == 50
    (again,) = acc.drain({1}, leader_of, 1 << 20, 100)[1]
    assert again is batch and again.attempts == 2


def test_expire_fails_only_queued_batches_past_deadline() -> None:
    acc = RecordAccumulator(delivery_timeout_ms=1000)
    f = Fut()
    add(acc, T0, None, b"v", None, 1, f, 0)
    assert acc.expire(999) == []
    (batch,) = acc.expire(1000)
    batch.fail(NotLeaderForPartitionError("gone"))
    assert f.record is not None and isinstance(f.record.exception(), NotLeaderForPartitionError)
    with pytest.raises(NotLeaderForPartitionError):
        f.record.get()
    assert acc.used_bytes == 0 and acc.incomplete == 0


def test_memory_bound() -> None:
    acc = RecordAccumulator(buffer_memory=1000, batch_size=100)
    assert acc.has_room(1000)
    while acc.has_room(estimate_size(None, b"x" * 88, None)):
        add(acc, T0, None, b"x" * 88, None, 1, Fut(), 0)
    assert acc.used_bytes == 1000
    assert not acc.has_room(1)


def test_built_batches_are_sent_as_they_are() -> None:
    acc = RecordAccumulator()
    f = Fut()
    acc.append_built(T1, b"payload", 3, 5, f, 0)
    (batch,) = acc.drain({2}, leader_of, 1 << 20, 0)[2]
    assert batch.payload(0) == b"payload"
    batch.complete(10, -1)
    assert f.result == ("t", 1, 10, 3, 5)


def test_a_refused_built_batch_fails_its_future_with_the_records_named() -> None:
    acc = RecordAccumulator()
    f = Fut()
    acc.append_built(T1, b"payload", 3, 5, f, 0)
    (batch,) = acc.drain({2}, leader_of, 1 << 20, 0)[2]
    refused = InvalidTimestampsError("out of range", (RecordError(1, "too old"),))
    batch.fail(refused)
    assert isinstance(f.error, InvalidTimestampsError) and f.error is not refused
    assert (f.error.message, f.error.record_errors) == ("out of range", refused.record_errors)
