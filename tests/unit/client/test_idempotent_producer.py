"""The idempotent producer's client side: sequences per partition, retries in sequence order,
its id from InitProducerId, the next epoch after a batch is lost, and the producer's settings."""

import asyncio

import pytest

from client.accumulator import RecordAccumulator
from client.producer import AsyncProducer
from protocol.batch import build_batch_from_values, read_header, validate
from protocol.errors import (
    MessageTooLargeError,
    TransactionalIdAuthorizationFailedError,
    UsageError,
)
from tests.unit.client.fake_broker import FakeState, bootstrap
from tests.unit.client.test_accumulator import LEADERS, T0, T1, Fut, add, leader_of

PID = 4242


def drain_one(acc: RecordAccumulator, now_ms: int = 0) -> list:
    return [
        b for batches in acc.drain({1, 2}, leader_of, 1 << 20, now_ms).values() for b in batches
    ]


def test_batches_take_sequences_per_partition_when_first_drained_and_keep_them() -> None:
    acc = RecordAccumulator(batch_size=50, producer_id=PID)
    for tp in (T0, T0, T1):
        for _ in range(2):
            add(acc, tp, None, b"x" * 10, None, 1, Fut(), 0)
    first = drain_one(acc)
    assert sorted((b.tp.partition, b.base_sequence, len(b.stamps)) for b in first) == [
        (0, 0, 2), (1, 0, 2),
    ]  # fmt: skip
    (second,) = drain_one(acc)
    assert (second.tp, second.base_sequence) == (T0, 2)
    h = validate(second.payload(0))
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (PID, 0, 2)
    built = second.payload(0)
    acc.requeue(second, retry_at_ms=0)
    (again,) = drain_one(acc)
    assert again is second and again.payload(0) == built and again.base_sequence == 2


def test_retries_go_back_in_sequence_order_before_new_batches() -> None:
    acc = RecordAccumulator(batch_size=20, producer_id=PID)
    for _ in range(4):
        add(acc, T0, None, b"x" * 10, None, 1, Fut(), 0)
    sent = [drain_one(acc)[0] for _ in range(3)]  # three in flight, one still queued
    assert [b.base_sequence for b in sent] == [0, 1, 2]
    for b in (sent[0], sent[2], sent[1]):  # answers come back in any order
        acc.requeue(b, retry_at_ms=0)
    order = [drain_one(acc)[0] for _ in range(4)]
    assert [b.base_sequence for b in order] == [0, 1, 2, 3]


def test_bulk_batches_get_the_producer_fields_and_reset_starts_a_new_id() -> None:
    acc = RecordAccumulator(producer_id=PID)
    built = build_batch_from_values([b"a", b"b", b"c"], 5)
    acc.append_built(T1, built, 3, 5, Fut(), 0)
    (batch,) = drain_one(acc)
    h = validate(batch.payload(0))  # the CRC was recomputed
    assert (h.producer_id, h.base_sequence, h.record_count) == (PID, 0, 3)
    acc.done_in_flight(batch)  # settled: the partition may move to a newer epoch
    acc.reset_producer(PID, 1)  # the next epoch, as InitProducerId grants it
    acc.append_built(T1, built, 3, 5, Fut(), 0)
    (after,) = drain_one(acc)
    assert (after.producer_id, after.producer_epoch, after.base_sequence) == (PID, 1, 0)
    assert (read_header(after.payload(0)).producer_epoch, batch.producer_epoch) == (1, 0)
    plain = RecordAccumulator()  # not idempotent: the header says so
    plain.append_built(T1, built, 3, 5, Fut(), 0)
    assert read_header(drain_one(plain)[0].payload(0)).producer_id == -1


def test_producer_settings() -> None:
    assert AsyncProducer("127.0.0.1:1", acks="all").idempotent
    assert not AsyncProducer("127.0.0.1:1", acks=1).idempotent  # Kafka requires acks=all
    assert not AsyncProducer("127.0.0.1:1", acks="all", enable_idempotence=False).idempotent
    with pytest.raises(UsageError):
        AsyncProducer("127.0.0.1:1", acks="all", max_in_flight_per_partition=6)
    assert AsyncProducer("127.0.0.1:1", acks=1, max_in_flight_per_partition=6).acks == 1


async def test_idempotent_producer_stamps_what_it_sends(fake1: FakeState) -> None:
    fake1.create_topic("i", 1)
    async with AsyncProducer(bootstrap(fake1), acks="all", linger_ms=0) as producer:
        for i in range(3):
            await (await producer.send("i", b"v%d" % i, partition=0))
    headers = [read_header(b) for b in fake1.logs[("i", 0)]]
    assert {(h.producer_id, h.producer_epoch) for h in headers} == {(0, 0)}  # the first id
    assert [h.base_sequence for h in headers] == [0, 1, 2]
    assert fake1.requests["InitProducerId"] == 1
    assert LEADERS  # the accumulator tests' leader map, shared


async def test_a_lost_batch_makes_the_producer_ask_for_the_next_epoch(fake1: FakeState) -> None:
    fake1.create_topic("i", 2)
    async with AsyncProducer(bootstrap(fake1), acks="all", linger_ms=0) as producer:
        await (await producer.send("i", b"a", partition=0))
        await (await producer.send("i", b"b", partition=1))
        fake1.produce_errors.append(10)  # MESSAGE_TOO_LARGE: partition 0's sequence 1 is lost
        with pytest.raises(MessageTooLargeError):
            await (await producer.send("i", b"lost", partition=0))
        await (await producer.send("i", b"c", partition=0))
        await (await producer.send("i", b"d", partition=1))
    fields = {
        p: [(h.producer_id, h.producer_epoch, h.base_sequence) for h in map(read_header, logs)]
        for (_, p), logs in fake1.logs.items()
    }
    assert fields == {0: [(0, 0, 0), (0, 1, 0)], 1: [(0, 0, 0), (0, 1, 0)]}
    assert fake1.requests["InitProducerId"] == 2  # the first id, then the bump


async def test_init_producer_id_errors_retried_or_failing_the_waiting_batches(
    fake1: FakeState,
) -> None:
    fake1.create_topic("i", 1)
    fake1.init_producer_id_errors.extend([14, 15])  # COORDINATOR_LOAD_IN_PROGRESS, ..._AVAILABLE
    async with AsyncProducer(bootstrap(fake1), acks="all", retry_backoff_ms=5) as producer:
        assert (await (await producer.send("i", b"a"))).offset == 0
        assert fake1.requests["InitProducerId"] == 3  # retried
        fake1.produce_errors.append(10)  # a lost batch: the producer asks for the next epoch,
        fake1.init_producer_id_errors.append(53)  # which is refused (not retriable), once
        gate = fake1.gates["InitProducerId"] = asyncio.Event()
        with pytest.raises(MessageTooLargeError):
            await (await producer.send("i", b"lost"))
        waiting = await producer.send("i", b"b")  # queued while the answer is held back
        gate.set()
        with pytest.raises(TransactionalIdAuthorizationFailedError, match="no producer id"):
            await waiting
        assert (await (await producer.send("i", b"c"))).offset == 1  # asked again: granted
    headers = [read_header(b) for b in fake1.logs[("i", 0)]]
    assert [(h.producer_id, h.producer_epoch, h.base_sequence) for h in headers] == [
        (0, 0, 0), (0, 1, 0),
    ]  # fmt: skip
