"""The synchronous twins (a private loop, run by a thread of its own or by the caller) and
AsyncAdmin, against the fake cluster.

The fake cluster runs on a loop in its own thread here, since the sync clients block."""

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from client import Admin, AsyncAdmin, Consumer, NewTopic, Producer, TopicPartition
from client.fetcher import Fetcher
from client.types import BatchMetadata, RecordMetadata
from protocol.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError, UsageError
from tests.unit.client.fake_broker import FakeState, bootstrap, start_cluster, stop_cluster


@pytest.fixture
def fake_thread() -> Iterator[FakeState]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    state = asyncio.run_coroutine_threadsafe(start_cluster(2), loop).result(5)
    yield state
    asyncio.run_coroutine_threadsafe(stop_cluster(state), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_sync_produce_then_consume(fake_thread: FakeState) -> None:
    with Admin(bootstrap(fake_thread)) as admin:
        admin.create_topics([NewTopic("s", 2)])
        assert admin.list_topics() == ["s"]
    with Producer(bootstrap(fake_thread), linger_ms=5) as producer:
        futures = [producer.send("s", b"v%d" % i, partition=i % 2) for i in range(10)]
        bulk = producer.send_batch("s", [b"b1", b"b2"], partition=1)
        producer.flush()
        metas = [f.result(5) for f in futures]
        assert all(isinstance(f, concurrent.futures.Future) for f in futures)
        assert all(isinstance(m, RecordMetadata) for m in metas)
        assert [m.offset for m in metas if m.partition == 0] == [0, 1, 2, 3, 4]
        (batch_meta,) = bulk.result(5)
        assert batch_meta == BatchMetadata("s", 1, 5, 2, batch_meta.timestamp)
        assert producer.partitions_for("s") == [0, 1]
    tps = [TopicPartition("s", 0), TopicPartition("s", 1)]
    with Consumer(bootstrap(fake_thread), auto_offset_reset="earliest") as consumer:
        consumer.assign(tps)
        assert consumer.assignment() == set(tps)
        got = []
        for _ in range(20):
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(records)
            if len(got) == 12:
                break
        assert sorted(r.value for r in got) == sorted(
            [b"v%d" % i for i in range(10)] + [b"b1", b"b2"]
        )
        assert consumer.position(tps[1]) == 7
        assert consumer.end_offsets(tps) == {tps[0]: 5, tps[1]: 7}
        consumer.seek(tps[0], 3)
        consumer.pause(tps[1])
        polled = consumer.poll(timeout_ms=1000)
        assert [r.offset for r in polled[tps[0]]] == [3, 4] and tps[1] not in polled


def test_sync_errors_surface_and_closed_clients_refuse(fake_thread: FakeState) -> None:
    producer = Producer(bootstrap(fake_thread), max_block_ms=200, retry_backoff_ms=20)
    with pytest.raises(UnknownTopicOrPartitionError):
        producer.send("missing", b"v").get(5)  # errors arrive through the future
    producer.close()
    producer.close()  # idempotent
    with pytest.raises(UsageError):
        producer.send("missing", b"v")
    consumer = Consumer(bootstrap(fake_thread))
    consumer.close()  # never started: nothing to stop
    with pytest.raises(UsageError):
        consumer.poll()


async def test_async_admin(fake1: FakeState) -> None:
    fake1.create_topic("existing", 1)
    async with AsyncAdmin(bootstrap(fake1)) as admin:
        await admin.create_topics([NewTopic("new", 3, 1, {"retention.ms": "1000"})])
        with pytest.raises(TopicAlreadyExistsError, match="existing"):
            await admin.create_topics([NewTopic("existing", 1)])
        assert await admin.list_topics() == ["existing", "new"]
        (desc,) = await admin.describe_topics(["new"])
        assert desc.name == "new" and [p.partition for p in desc.partitions] == [0, 1, 2]
        assert all(p.leader == 1 and p.isr == [1] for p in desc.partitions)
        offsets = await admin.list_offsets({TopicPartition("existing", 0): -1})
        assert offsets[TopicPartition("existing", 0)].offset == 0
        await admin.delete_topics(["new"])
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.delete_topics(["new"])
        with pytest.raises(UsageError):
            await admin.create_topics([NewTopic("bad", 0)])


def test_sync_producer_is_thread_safe_and_keeps_each_threads_order(
    fake_thread: FakeState,
) -> None:
    with Admin(bootstrap(fake_thread)) as admin:
        admin.create_topics([NewTopic("mt", 1)])
    results: dict[int, list[int]] = {}
    with Producer(bootstrap(fake_thread)) as producer:

        def worker(n: int) -> None:
            futures = [producer.send("mt", b"%d-%d" % (n, i), partition=0) for i in range(300)]
            results[n] = [f.get(10).offset for f in futures]

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert sorted(results) == [0, 1, 2, 3]
    all_offsets = sorted(o for offs in results.values() for o in offs)
    assert all_offsets == list(range(1200))  # each record acknowledged exactly once
    assert all(offs == sorted(offs) for offs in results.values())  # per-thread order kept


def test_sync_consumer_reads_its_fetch_answers_in_the_callers_thread(
    fake_thread: FakeState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No loop-thread hand-off on a poll's way back: the answer that a waiting poll() gets is
    read and decoded in the thread that called poll() (client/caller_loop.py)."""
    handled_in: list[threading.Thread] = []
    on_response = Fetcher._on_response

    def recording(self: Fetcher, *args: Any) -> bool:
        handled_in.append(threading.current_thread())
        return on_response(self, *args)

    monkeypatch.setattr(Fetcher, "_on_response", recording)
    fake_thread.create_topic("w", 1)
    tp = TopicPartition("w", 0)
    with Consumer(bootstrap(fake_thread), fetch_max_wait_ms=2000) as consumer:
        consumer.assign([tp])
        assert consumer.position(tp) == 0

        def produce_soon() -> None:
            time.sleep(0.2)  # the poll below is waiting on its fetch by then
            with Producer(bootstrap(fake_thread)) as producer:
                producer.send("w", b"late").get(5)

        sender = threading.Thread(target=produce_soon)
        sender.start()
        got = consumer.poll(timeout_ms=5000)
        sender.join(5)
    assert [r.value for r in got[tp]] == [b"late"]
    assert handled_in and handled_in[-1] is threading.current_thread()
