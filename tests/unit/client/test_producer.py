"""AsyncProducer against the fake cluster: batching per node, offsets, retries, back-pressure."""

import asyncio

import pytest

from client.accumulator import RECORD_OVERHEAD_BYTES
from client.partitioner import partition_for_key
from client.producer import AsyncProducer
from protocol.batch import decode_all
from protocol.errors import (
    MessageTooLargeError,
    NetworkError,
    NotLeaderForPartitionError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
    UsageError,
)
from tests.unit.client.fake_broker import FakeState, bootstrap


def _values(state: FakeState, topic: str, partition: int) -> list[bytes | None]:
    return [r.value for batch in state.logs[(topic, partition)] for r in decode_all(batch)]


async def test_send_returns_offsets_and_data_lands(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    async with AsyncProducer(bootstrap(fake1)) as producer:
        futures = [await producer.send("t", b"v%d" % i, partition=0) for i in range(10)]
        metas = await asyncio.gather(*futures)
    assert [m.offset for m in metas] == list(range(10))
    assert all(m.topic == "t" and m.partition == 0 and m.timestamp > 0 for m in metas)
    assert _values(fake1, "t", 0) == [b"v%d" % i for i in range(10)]


async def test_keys_go_where_kafka_puts_them(fake1: FakeState) -> None:
    fake1.create_topic("k", 5)
    async with AsyncProducer(bootstrap(fake1)) as producer:
        keys = [b"key-%d" % i for i in range(30)]
        metas = await asyncio.gather(*[await producer.send("k", b"x", key=k) for k in keys])
    for k, m in zip(keys, metas, strict=True):
        assert m.partition == partition_for_key(k, 5)


async def test_keyless_records_spread_over_partitions(fake1: FakeState) -> None:
    fake1.create_topic("s", 4)
    async with AsyncProducer(bootstrap(fake1), batch_size=200) as producer:
        metas = await asyncio.gather(*[await producer.send("s", b"x" * 50) for _ in range(200)])
    counts = {p: sum(1 for m in metas if m.partition == p) for p in range(4)}
    assert all(c > 20 for c in counts.values()), counts


async def test_one_produce_request_per_node_carries_many_partitions(fake3: FakeState) -> None:
    fake3.create_topic("m", 6)  # leaders 1,2,3,1,2,3
    fake3.delay_ms["Produce"] = 30
    async with AsyncProducer(bootstrap(fake3), linger_ms=20) as producer:
        futures = [await producer.send("m", b"x", partition=p) for p in range(6)]
        await asyncio.gather(*futures)
    assert fake3.requests["Produce"] == 3
    assert all(len(fake3.logs[("m", p)]) == 1 for p in range(6))


async def test_linger_batches_records_together(fake1: FakeState) -> None:
    fake1.create_topic("l", 1)
    async with AsyncProducer(bootstrap(fake1), linger_ms=300) as producer:
        futures = []
        for i in range(50):
            futures.append(await producer.send("l", b"%d" % i, partition=0))
            await asyncio.sleep(0)
        await asyncio.gather(*futures)
    assert fake1.requests["Produce"] == 1
    assert len(fake1.logs[("l", 0)]) == 1


async def test_not_leader_triggers_metadata_refresh_and_retry_to_new_leader(
    fake3: FakeState,
) -> None:
    fake3.create_topic("r", 1, leader=1)
    async with AsyncProducer(bootstrap(fake3), retry_backoff_ms=10) as producer:
        m0 = await (await producer.send("r", b"first", partition=0))
        fake3.leaders[("r", 0)] = 2  # leadership moves; producer's metadata is stale
        metadata_before = fake3.requests["Metadata"]
        m1 = await (await producer.send("r", b"second", partition=0))
    assert (m0.offset, m1.offset) == (0, 1)
    assert fake3.requests["Metadata"] > metadata_before
    assert fake3.requests["Produce"] >= 3  # the first, the refused one, the retry
    assert _values(fake3, "r", 0) == [b"first", b"second"]


async def test_retriable_errors_are_retried_then_succeed(fake1: FakeState) -> None:
    fake1.create_topic("e", 1)
    fake1.produce_errors.extend([6, 7, 19])  # NOT_LEADER, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS
    async with AsyncProducer(bootstrap(fake1), retry_backoff_ms=5) as producer:
        meta = await (await producer.send("e", b"v", partition=0))
    assert meta.offset == 0
    assert fake1.requests["Produce"] == 4


async def test_non_retriable_error_fails_the_future(fake1: FakeState) -> None:
    fake1.create_topic("f", 1)
    fake1.produce_errors.append(10)  # MESSAGE_TOO_LARGE
    async with AsyncProducer(bootstrap(fake1)) as producer:
        fut = await producer.send("f", b"v", partition=0)
        with pytest.raises(MessageTooLargeError):
            await fut
        meta = await (await producer.send("f", b"w", partition=0))
    assert meta.offset == 0


async def test_retries_are_bounded_by_delivery_timeout(fake1: FakeState) -> None:
    fake1.create_topic("d", 1)
    fake1.produce_errors.extend([6] * 1000)
    async with AsyncProducer(
        bootstrap(fake1), retry_backoff_ms=10, delivery_timeout_ms=300
    ) as producer:
        fut = await producer.send("d", b"v", partition=0)
        with pytest.raises((NotLeaderForPartitionError, RequestTimedOutError)):
            await asyncio.wait_for(fut, 3)
    assert 3 <= fake1.requests["Produce"] <= 40


async def test_request_timeout_is_retried(fake1: FakeState) -> None:
    fake1.create_topic("to", 1)
    fake1.delay_ms["Produce"] = 200
    async with AsyncProducer(
        bootstrap(fake1), request_timeout_ms=50, retry_backoff_ms=10, delivery_timeout_ms=2000
    ) as producer:
        fut = await producer.send("to", b"v", partition=0)
        await asyncio.sleep(0.1)
        fake1.delay_ms["Produce"] = 0
        meta = await asyncio.wait_for(fut, 3)
    assert meta.partition == 0
    assert fake1.requests["Produce"] >= 2


async def test_buffer_memory_applies_back_pressure(fake1: FakeState) -> None:
    fake1.create_topic("b", 1)
    fake1.delay_ms["Produce"] = 20
    producer = AsyncProducer(
        bootstrap(fake1), buffer_memory=64 * 1024, max_request_size=16 * 1024, batch_size=4096
    )
    await producer.start()
    futures = []
    peak = 0
    for _ in range(400):  # 400 KiB through a 64 KiB buffer
        futures.append(await producer.send("b", b"x" * 1000, partition=0))
        peak = max(peak, producer._acc.used_bytes)
    await asyncio.gather(*futures)
    await producer.close()
    assert peak <= 64 * 1024
    assert len(_values(fake1, "b", 0)) == 400


async def test_acks_zero_sends_without_waiting(fake1: FakeState) -> None:
    fake1.create_topic("z", 1)
    async with AsyncProducer(bootstrap(fake1), acks=0) as producer:
        meta = await (await producer.send("z", b"v", partition=0))
        assert meta.offset == -1
        for _ in range(100):
            if fake1.logs[("z", 0)]:
                break
            await asyncio.sleep(0.01)
    assert _values(fake1, "z", 0) == [b"v"]


async def test_send_batch_bulk_path(fake1: FakeState) -> None:
    fake1.create_topic("bulk", 2)
    values = [b"%06d" % i for i in range(100_000)]
    async with AsyncProducer(bootstrap(fake1)) as producer:
        metas = await (await producer.send_batch("bulk", values))
    assert sum(m.record_count for m in metas) == 100_000
    assert {m.partition for m in metas} == {0, 1}
    got = _values(fake1, "bulk", 0) + _values(fake1, "bulk", 1)
    assert sorted(got) == values  # type: ignore[type-var]


async def test_gzip_compression_round_trips(fake1: FakeState) -> None:
    fake1.create_topic("gz", 1)
    async with AsyncProducer(bootstrap(fake1), compression_type="gzip") as producer:
        await asyncio.gather(
            *[await producer.send("gz", b"a" * 100, partition=0) for _ in range(5)]
        )
    assert _values(fake1, "gz", 0) == [b"a" * 100] * 5


async def test_flush_waits_for_lingering_batches(fake1: FakeState) -> None:
    fake1.create_topic("fl", 1)
    async with AsyncProducer(bootstrap(fake1), linger_ms=10_000) as producer:
        fut = await producer.send("fl", b"v", partition=0)
        await asyncio.wait_for(producer.flush(), 2)
        assert fut.done() and fut.result().offset == 0


async def test_usage_errors(fake1: FakeState) -> None:
    fake1.create_topic("u", 2)
    producer = AsyncProducer(bootstrap(fake1), max_block_ms=200, retry_backoff_ms=20)
    with pytest.raises(UsageError):
        await producer.send("u", b"v")  # not started
    await producer.start()
    with pytest.raises(UsageError):
        await producer.send("u", b"v", partition=5)
    with pytest.raises(MessageTooLargeError):
        await producer.send("u", b"x" * 2_000_000)
    with pytest.raises(UnknownTopicOrPartitionError):
        await producer.send("missing", b"v")
    await producer.close()
    with pytest.raises(UsageError):
        await producer.send("u", b"v")
    with pytest.raises(UsageError):
        AsyncProducer("nohostport")
    with pytest.raises(UsageError):
        AsyncProducer(bootstrap(fake1), acks=2)


async def test_fenced_leader_epoch_is_retried_after_refresh(fake1: FakeState) -> None:
    fake1.create_topic("fe", 1)
    fake1.produce_errors.extend([74, 75])  # FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH
    async with AsyncProducer(bootstrap(fake1), retry_backoff_ms=5, acks="all") as producer:
        metadata_before = fake1.requests["Metadata"]
        meta = await (await producer.send("fe", b"v", partition=0))
    assert meta.offset == 0
    assert fake1.requests["Produce"] == 3
    assert fake1.requests["Metadata"] > metadata_before


async def test_close_with_timeout_fails_what_is_still_in_flight(fake1: FakeState) -> None:
    fake1.create_topic("c", 1)
    fake1.drop.add("Produce")  # the broker never answers
    producer = AsyncProducer(bootstrap(fake1), request_timeout_ms=60_000)
    await producer.start()
    fut = await producer.send("c", b"v", partition=0)
    await asyncio.sleep(0.05)
    await asyncio.wait_for(producer.close(timeout_ms=100), 5)
    with pytest.raises(RequestTimedOutError):
        await fut


async def test_start_without_a_reachable_broker_raises_and_can_be_retried(
    fake1: FakeState,
) -> None:
    fake1.create_topic("s", 1)
    port = fake1.brokers[1].port
    await fake1.brokers[1].stop()
    producer = AsyncProducer(f"127.0.0.1:{port}", retry_backoff_ms=1)
    with pytest.raises(NetworkError):
        await producer.start()
    with pytest.raises(UsageError):
        await producer.send("s", b"v")
    await producer.close()


async def test_value_only_records_join_the_sticky_batch_in_order(fake1: FakeState) -> None:
    """A record with only a value takes `append_value` (no partition choice, no metadata):
    into the sticky partition's open batch, in send order, until the batch would fill; mixed
    with records taking the full path, everything lands in send order."""
    fake1.create_topic("v", 3)
    async with AsyncProducer(bootstrap(fake1), linger_ms=50, batch_size=400) as producer:
        first = await producer.send("v", b"r0")
        sticky = first.batch
        joined = producer.append_value("v", b"r1")
        assert joined is not None and joined.batch is sticky and joined.index == 1
        keyed = await producer.send("v", b"r2", key=b"k")  # the full path, another batch maybe
        futures = [first, joined, keyed]
        futures += [await producer.send("v", b"r%d" % i) for i in range(3, 40)]
        metas = await asyncio.gather(*futures)
    by_partition: dict[int, list[bytes]] = {}
    for i, meta in enumerate(metas):
        by_partition.setdefault(meta.partition, []).append(b"r%d" % i)
    for partition, values in by_partition.items():
        assert _values(fake1, "v", partition) == values  # each partition in send order
    assert len(by_partition) > 1  # batches filled, the sticky partition moved on


async def test_value_only_records_skip_a_closed_batch(fake1: FakeState) -> None:
    fake1.create_topic("c", 1)
    async with AsyncProducer(bootstrap(fake1), linger_ms=10_000) as producer:
        first = await producer.send("c", b"a")
        with producer._acc.lock:
            producer._acc.close_open(first.batch.tp)  # drained, say
        assert producer.append_value("c", b"b") is None  # the full path opens a new one
        second = await producer.send("c", b"b")
        assert second.batch is not first.batch
        assert producer.append_value("c", b"c").batch is second.batch
        await producer.flush()
    assert _values(fake1, "c", 0) == [b"a", b"b", b"c"]


async def test_requests_reach_a_node_in_drain_order_while_its_connection_opens(
    fake1: FakeState,
) -> None:
    """A batch drained while the first request to a node still waits for the connection to
    open must not be written before it (acks=1, no idempotence: nothing would reorder it)."""
    fake1.create_topic("o", 1)
    async with AsyncProducer(bootstrap(fake1), acks=1, linger_ms=0) as producer:
        await producer.partitions_for("o")
        cluster = producer._cluster
        for conn in cluster._conns.values():
            conn.abort()  # the produce request opens the leader's connection itself
        real_open = cluster._open
        later: list[asyncio.Future[object]] = []

        async def open_then_send_more(target: int | tuple[str, int]) -> object:
            conn = await real_open(target)
            if isinstance(target, int) and not later:
                # the connection is open; the first request's task has not resumed yet
                later.append(producer.append_record("o", b"second", partition=0))
            return conn

        cluster._open = open_then_send_more  # type: ignore[method-assign]
        first = await (await producer.send("o", b"first", partition=0))
        second = await later[0]
    assert (first.offset, second.offset) == (0, 1)
    assert _values(fake1, "o", 0) == [b"first", b"second"]


async def test_a_lone_records_request_is_written_in_the_senders_pass(fake1: FakeState) -> None:
    """linger_ms=0 and the leader's connection open: the sender writes the request in the pass
    that drains it (BrokerConnection.send_now), not from the produce task a loop turn later."""
    fake1.create_topic("n", 1)
    async with AsyncProducer(bootstrap(fake1), acks=1, linger_ms=0) as producer:
        await (await producer.send("n", b"warm", partition=0))  # the connection is open now
        conn = producer._cluster.open_connection(1)
        assert conn is not None
        written_in_pass: list[int] = []
        real_send_ready = producer._sender._send_ready

        def watched() -> int | None:
            before = conn.in_flight
            delay = real_send_ready()
            written_in_pass.append(conn.in_flight - before)
            return delay

        producer._sender._send_ready = watched  # type: ignore[method-assign]
        metas = [await (await producer.send("n", b"lone-%d" % i, partition=0)) for i in range(3)]
    assert written_in_pass.count(1) == 3  # each request went out inside its pass
    assert [m.offset for m in metas] == [1, 2, 3]
    assert _values(fake1, "n", 0) == [b"warm", b"lone-0", b"lone-1", b"lone-2"]


async def test_the_pass_that_sends_a_lone_record_does_not_ask_for_another(fake1: FakeState) -> None:
    """A pass that drained everything there was waits for the next append: it does not ask for
    an immediate second pass (`_send_ready` returning 0), and the answer does not wake it when
    nothing waits behind the batch. Each of those passes found nothing and cost CPU that the
    broker and the consumer could use."""
    fake1.create_topic("p", 1)
    async with AsyncProducer(bootstrap(fake1), acks=1, linger_ms=0) as producer:
        await (await producer.send("p", b"warm", partition=0))
        delays: list[int | None] = []
        real_send_ready = producer._sender._send_ready

        def watched() -> int | None:
            delay = real_send_ready()
            delays.append(delay)
            return delay

        producer._sender._send_ready = watched  # type: ignore[method-assign]
        for i in range(3):
            await (await producer.send("p", b"lone-%d" % i, partition=0))
    assert delays == [None, None, None]  # one pass per record: none after its answer either
    assert _values(fake1, "p", 0) == [b"warm", b"lone-0", b"lone-1", b"lone-2"]


def test_bulk_values_are_cut_where_their_bytes_and_overhead_pass_the_batch_bytes() -> None:
    """send_batch's runs: each as long as its values' lengths plus RECORD_OVERHEAD_BYTES each
    stay within the bulk batch bytes; a value above that goes alone."""
    producer = AsyncProducer("127.0.0.1:1")
    limit = producer._bulk_bytes
    per = limit // 4 - RECORD_OVERHEAD_BYTES  # exactly four of these fill a run
    full = b"d" * (limit - RECORD_OVERHEAD_BYTES)  # fills a run alone
    values = [b"a" * per] * 9 + [b"b" * (limit + 1), b"c", full] + [b"e"] * 3
    runs = [len(run) for run in producer._chunks(values)]
    assert runs == [4, 4, 1, 1, 1, 1, 3]  # the ninth a; b above the limit; c; d; the e's
    assert sum(runs) == len(values)
    assert list(producer._chunks([])) == []
