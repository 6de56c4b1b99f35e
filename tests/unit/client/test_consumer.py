"""AsyncConsumer against the fake cluster: fetch per node, positions, max_poll_records, pause,
offset reset, leader changes."""

import asyncio

import pytest

from client.consumer import AsyncConsumer
from client.types import TopicPartition
from protocol.batch import build_batch
from protocol.errors import OffsetOutOfRangeError, UsageError
from tests.unit.client.fake_broker import FakeState, bootstrap
from transport.connection import _BrokerProtocol

TS = 1_700_000_000_000


def _fill(state: FakeState, topic: str, partition: int, n: int, per_batch: int = 10) -> None:
    start = state.end_offset((topic, partition))
    for i in range(0, n, per_batch):
        rows = [(b"k", b"%s-%d-%d" % (topic.encode(), partition, start + j), None, TS + j)
                for j in range(i, min(n, i + per_batch))]  # fmt: skip
        state.append((topic, partition), build_batch(rows))


async def _poll_all(consumer: AsyncConsumer, want: int, rounds: int = 50) -> list:
    got: list = []
    for _ in range(rounds):
        batch = await consumer.poll(timeout_ms=200)
        for records in batch.values():
            got.extend(records)
        if len(got) >= want:
            break
    return got


async def test_reads_from_beginning_in_order(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    _fill(fake1, "t", 0, 25)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(bootstrap(fake1), auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        got = await _poll_all(consumer, 25)
        assert [r.offset for r in got] == list(range(25))
        assert got[3].value == b"t-0-3" and got[3].key == b"k" and got[3].timestamp == TS + 3
        assert got[0].topic == "t" and got[0].partition == 0
        assert await consumer.position(tp) == 25
        assert consumer.highwater(tp) == 25


async def test_latest_reset_sees_only_new_records(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    _fill(fake1, "t", 0, 5)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(bootstrap(fake1), fetch_max_wait_ms=100) as consumer:
        consumer.assign([tp])
        assert await consumer.position(tp) == 5
        assert await consumer.poll(timeout_ms=50) == {}
        _fill(fake1, "t", 0, 3)
        got = await _poll_all(consumer, 3)
        assert [r.offset for r in got] == [5, 6, 7]


async def test_seek_skips_records_inside_the_first_batch(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    _fill(fake1, "t", 0, 30, per_batch=10)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(bootstrap(fake1)) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 13)
        got = await _poll_all(consumer, 17)
        assert [r.offset for r in got] == list(range(13, 30))


async def test_max_poll_records_is_honoured_without_losing_the_rest(fake1: FakeState) -> None:
    fake1.create_topic("t", 2)
    _fill(fake1, "t", 0, 40)
    _fill(fake1, "t", 1, 40)
    tps = [TopicPartition("t", 0), TopicPartition("t", 1)]
    async with AsyncConsumer(
        bootstrap(fake1), auto_offset_reset="earliest", max_poll_records=7
    ) as consumer:
        consumer.assign(tps)
        seen: dict[TopicPartition, list[int]] = {tp: [] for tp in tps}
        for _ in range(100):
            batch = await consumer.poll(timeout_ms=200)
            assert sum(len(r) for r in batch.values()) <= 7
            for tp, records in batch.items():
                seen[tp].extend(r.offset for r in records)
                assert await consumer.position(tp) == records[-1].offset + 1
            if all(len(v) == 40 for v in seen.values()):
                break
        assert seen == {tp: list(range(40)) for tp in tps}


async def test_undrained_partition_is_not_fetched_again(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    _fill(fake1, "t", 0, 100)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(bootstrap(fake1), auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        await consumer.poll(timeout_ms=500, max_records=1)
        fetches_after_first = len(fake1.fetch_log)
        for _ in range(20):
            await consumer.poll(timeout_ms=10, max_records=1)
        assert len(fake1.fetch_log) == fetches_after_first  # all served from the buffer


async def test_next_fetch_goes_out_ahead_from_where_buffered_data_ends(fake1: FakeState) -> None:
    """Prefetch: on an answer the next fetch is sent at once from the end of the buffered data;
    no third response is held; a seek drops the prefetched data; order is kept throughout."""
    fake1.create_topic("t", 1)
    _fill(fake1, "t", 0, 60)  # 6 batches of 10
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(
        bootstrap(fake1), auto_offset_reset="earliest", max_partition_fetch_bytes=1
    ) as consumer:  # one batch per fetch
        consumer.assign([tp])
        first = await consumer.poll(timeout_ms=1000, max_records=3)
        for _ in range(50):  # the prefetch of offset 10 answers without waiting
            if len(fake1.fetch_log) >= 2:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert [parts[0][2] for _, parts in fake1.fetch_log] == [0, 10]  # two held, no third
        rest = await _poll_all(consumer, 17)
        assert [r.offset for r in first[tp] + rest][:20] == list(range(20))
        consumer.seek(tp, 45)
        after = await _poll_all(consumer, 15)
    assert [r.offset for r in after] == list(range(45, 60))


async def test_a_caught_up_partitions_next_fetch_waits_for_the_next_poll(
    fake1: FakeState,
) -> None:
    """Data that ends at the high watermark is not followed by a prefetch (its long poll would
    cost the returning poll a write and bring nothing yet): the next poll sends it."""
    fake1.create_topic("t", 1)
    _fill(fake1, "t", 0, 10, per_batch=10)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(
        bootstrap(fake1), auto_offset_reset="earliest", fetch_max_wait_ms=50
    ) as consumer:
        consumer.assign([tp])
        got = await _poll_all(consumer, 10)
        await asyncio.sleep(0.1)  # a prefetch, had one been sent, is answered by now
        assert [r.offset for r in got] == list(range(10))
        assert [parts[0][2] for _, parts in fake1.fetch_log] == [0]
        assert await consumer.poll(timeout_ms=20) == {}
        assert [parts[0][2] for _, parts in fake1.fetch_log][:2] == [0, 10]


async def test_empty_answers_do_not_fetch_in_the_background(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(
        bootstrap(fake1), auto_offset_reset="earliest", fetch_max_wait_ms=0
    ) as consumer:
        consumer.assign([tp])
        assert await consumer.poll(timeout_ms=50) == {}
        await asyncio.sleep(0.02)
        fetches = len(fake1.fetch_log)
        await asyncio.sleep(0.1)  # not polling: no fetch goes out on its own
        assert len(fake1.fetch_log) == fetches


async def test_one_fetch_per_node_carrying_all_its_partitions(fake3: FakeState) -> None:
    fake3.create_topic("m", 6)  # leaders 1,2,3,1,2,3
    for p in range(6):
        _fill(fake3, "m", p, 5)
    tps = [TopicPartition("m", p) for p in range(6)]
    async with AsyncConsumer(bootstrap(fake3), auto_offset_reset="earliest") as consumer:
        consumer.assign(tps)
        got = await _poll_all(consumer, 30)
    assert len(got) == 30
    first = {}
    for node, parts in fake3.fetch_log:
        first.setdefault(node, sorted(p for _, p, _ in parts))
    assert first == {1: [0, 3], 2: [1, 4], 3: [2, 5]}


async def test_paused_partitions_are_not_returned(fake1: FakeState) -> None:
    fake1.create_topic("t", 2)
    _fill(fake1, "t", 0, 5)
    _fill(fake1, "t", 1, 5)
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    async with AsyncConsumer(bootstrap(fake1), auto_offset_reset="earliest") as consumer:
        consumer.assign([tp0, tp1])
        consumer.pause(tp1)
        assert consumer.paused() == {tp1}
        got = await _poll_all(consumer, 5, rounds=3)
        assert {r.partition for r in got} == {0}
        assert await consumer.position(tp1) == 0
        consumer.resume(tp1)
        got = await _poll_all(consumer, 5)
        assert [r.offset for r in got if r.partition == 1] == [0, 1, 2, 3, 4]


async def test_out_of_range_resets_per_policy(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    _fill(fake1, "t", 0, 10)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(bootstrap(fake1), auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 500)
        got = await _poll_all(consumer, 10)
        assert [r.offset for r in got] == list(range(10))
    async with AsyncConsumer(bootstrap(fake1), auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 500)
        with pytest.raises(OffsetOutOfRangeError):
            for _ in range(20):
                await consumer.poll(timeout_ms=100)


async def test_seek_to_beginning_and_end(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    _fill(fake1, "t", 0, 10)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(bootstrap(fake1)) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert await consumer.position(tp) == 0
        consumer.seek_to_end()
        assert await consumer.position(tp) == 10
        assert await consumer.beginning_offsets([tp]) == {tp: 0}
        assert await consumer.end_offsets([tp]) == {tp: 10}


async def test_follows_a_leader_change(fake3: FakeState) -> None:
    fake3.create_topic("t", 1, leader=1)
    _fill(fake3, "t", 0, 5)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(
        bootstrap(fake3), auto_offset_reset="earliest", retry_backoff_ms=10
    ) as consumer:
        consumer.assign([tp])
        assert len(await _poll_all(consumer, 5)) == 5
        fake3.leaders[("t", 0)] = 3
        _fill(fake3, "t", 0, 5)
        got = await _poll_all(consumer, 5)
        assert [r.offset for r in got] == [5, 6, 7, 8, 9]
    assert any(node == 3 for node, _ in fake3.fetch_log)


async def test_long_poll_wakes_when_data_arrives(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(bootstrap(fake1), fetch_max_wait_ms=5000) as consumer:
        consumer.assign([tp])
        await consumer.position(tp)
        poll = asyncio.ensure_future(consumer.poll(timeout_ms=3000))
        await asyncio.sleep(0.1)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        _fill(fake1, "t", 0, 1)
        got = await poll
        assert loop.time() - t0 < 1.0
        assert [r.offset for r in got[tp]] == [0]


async def test_usage_errors(fake1: FakeState) -> None:
    with pytest.raises(UsageError):
        AsyncConsumer(bootstrap(fake1), auto_offset_reset="middle")
    consumer = AsyncConsumer(bootstrap(fake1))
    with pytest.raises(UsageError):
        consumer.assign([("t", -1)])  # type: ignore[list-item]
    with pytest.raises(UsageError):
        consumer.seek(TopicPartition("t", 0), 0)  # not assigned
    await consumer.close()
    with pytest.raises(UsageError):
        await consumer.poll()


async def test_fenced_leader_epoch_refreshes_metadata_and_carries_on(fake1: FakeState) -> None:
    fake1.create_topic("t", 1)
    _fill(fake1, "t", 0, 5)
    fake1.fetch_errors.extend([74, 6])  # FENCED_LEADER_EPOCH, NOT_LEADER_FOR_PARTITION
    tp = TopicPartition("t", 0)
    async with AsyncConsumer(
        bootstrap(fake1), auto_offset_reset="earliest", retry_backoff_ms=10
    ) as consumer:
        consumer.assign([tp])
        metadata_before = fake1.requests["Metadata"]
        got = await _poll_all(consumer, 5)
        assert [r.offset for r in got] == [0, 1, 2, 3, 4]
        assert fake1.requests["Metadata"] > metadata_before


async def test_a_fetch_answer_is_buffered_inside_the_read_that_brings_it(
    fake1: FakeState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No task turn between a fetch answer's arrival and the waiting poll: the answer is
    handled in the connection's buffer_updated (an InlineAnswer), a lone record's way shorter."""
    fake1.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    buffered_on_return: list[bool] = []
    async with AsyncConsumer(bootstrap(fake1), fetch_max_wait_ms=5000) as consumer:
        original = _BrokerProtocol.buffer_updated

        def buffer_updated(self: _BrokerProtocol, nbytes: int) -> None:
            original(self, nbytes)
            buffered_on_return.append(tp in consumer._fetcher.buffered())

        monkeypatch.setattr(_BrokerProtocol, "buffer_updated", buffer_updated)
        consumer.assign([tp])
        await consumer.position(tp)
        poll = asyncio.ensure_future(consumer.poll(timeout_ms=3000))
        await asyncio.sleep(0.1)
        _fill(fake1, "t", 0, 1)
        assert [r.offset for r in (await poll)[tp]] == [0]
        assert True in buffered_on_return


async def test_an_unanswered_fetch_times_out_and_the_partition_is_fetched_again(
    fake1: FakeState,
) -> None:
    fake1.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    fake1.drop.add("Fetch")
    async with AsyncConsumer(
        bootstrap(fake1), fetch_max_wait_ms=50, request_timeout_ms=200, retry_backoff_ms=10
    ) as consumer:
        consumer.assign([tp])
        await consumer.position(tp)
        _fill(fake1, "t", 0, 2)
        assert await consumer.poll(timeout_ms=100) == {}  # the fetch is on the wire, unanswered
        fake1.drop.clear()
        got = await _poll_all(consumer, 2)
        assert [r.offset for r in got] == [0, 1]
        assert fake1.requests["Fetch"] >= 2
