"""Transactions through the native protocol against three real brokers: the Python client's
transactional producer (commit, abort, fencing, offsets in a transaction) and its
read_committed / read_uncommitted consumer, sync and async."""

from __future__ import annotations

import asyncio
import time

import pytest

from client import Admin, AsyncConsumer, AsyncProducer, Consumer, NewTopic, Producer, TopicPartition
from client.types import ConsumerRecord
from deploy.cluster import LocalCluster
from protocol.errors import ProducerFencedError, UsageError

pytestmark = pytest.mark.integration

COMMITTED = [b"c1", b"c2", b"c3", b"c4"]
ABORTED = [b"a1", b"a2"]


def _topic(bootstrap: str, name: str, partitions: int = 2) -> list[TopicPartition]:
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(name, partitions, 3)])
        deadline = time.monotonic() + 30
        while True:
            (desc,) = admin.describe_topics([name])
            if (
                not desc.error_code
                and desc.partitions
                and all(p.leader >= 0 for p in desc.partitions)
            ):
                break
            assert time.monotonic() < deadline, desc
            time.sleep(0.2)
    return [TopicPartition(name, p) for p in range(partitions)]


def _read(bootstrap: str, tps: list[TopicPartition], isolation: str, want: int,
          linger_s: float = 1.0) -> list[bytes]:  # fmt: skip
    """Every value of `tps` from the start: until `want` arrived, then `linger_s` more."""
    got: list[bytes] = []
    with Consumer(bootstrap, isolation_level=isolation, auto_offset_reset="earliest") as c:
        c.assign(tps)
        deadline = time.monotonic() + 30
        while len(got) < want and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                got.extend(r.value or b"" for r in records)
        end = time.monotonic() + linger_s
        while time.monotonic() < end:
            for records in c.poll(timeout_ms=200).values():
                got.extend(r.value or b"" for r in records)
    return got


def test_sync_commit_and_abort(cluster3: LocalCluster) -> None:
    bootstrap = cluster3.bootstrap
    tps = _topic(bootstrap, "txn-sync")
    with Producer(bootstrap, transactional_id="txn-sync-producer") as producer:
        with pytest.raises(UsageError, match="init_transactions"):
            producer.begin_transaction()
        producer.init_transactions()
        with pytest.raises(UsageError, match="begin_transaction"):
            producer.send("txn-sync", b"early")
        producer.begin_transaction()
        for i, value in enumerate(COMMITTED[:2]):
            producer.send("txn-sync", value, partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        for i, value in enumerate(ABORTED):
            producer.send("txn-sync", value, partition=i % 2)
        producer.flush()  # on the brokers before the abort: the consumer must drop them
        producer.abort_transaction()
        producer.begin_transaction()
        for i, value in enumerate(COMMITTED[2:]):
            producer.send("txn-sync", value, partition=i % 2)
        producer.commit_transaction()
    assert sorted(_read(bootstrap, tps, "read_committed", 4)) == COMMITTED
    assert sorted(_read(bootstrap, tps, "read_uncommitted", 6)) == sorted(COMMITTED + ABORTED)
    with Consumer(bootstrap, isolation_level="read_committed") as c:
        ends = c.end_offsets(tps)
    # 6 records and a marker per partition per transaction; all ended: LSO = HW
    assert sum(ends.values()) == 6 + 2 + 2 + 2


async def test_async_commit_and_abort(cluster3: LocalCluster) -> None:
    bootstrap = cluster3.bootstrap
    tps = await asyncio.to_thread(_topic, bootstrap, "txn-async", 1)
    async with AsyncProducer(bootstrap, transactional_id="txn-async-producer") as producer:
        await producer.init_transactions()
        producer.begin_transaction()
        for value in ABORTED:
            await producer.send("txn-async", value)
        await producer.flush()
        await producer.abort_transaction()
        producer.begin_transaction()
        futures = [await producer.send("txn-async", value) for value in COMMITTED]
        await producer.commit_transaction()
        assert [f.result().offset for f in futures] == [3, 4, 5, 6]  # after 2 and a marker
    async with AsyncConsumer(bootstrap, isolation_level="read_committed",
                             auto_offset_reset="earliest") as consumer:  # fmt: skip
        consumer.assign(tps)
        got: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while len(got) < 4 and time.monotonic() < deadline:
            for records in (await consumer.poll(timeout_ms=500)).values():
                got.extend(r.value for r in records)
        assert got == COMMITTED
        assert await consumer.position(tps[0]) == 8  # past the last marker
    assert _read(bootstrap, tps, "read_uncommitted", 6) == ABORTED + COMMITTED


def test_a_second_producer_with_the_same_id_fences_the_first(cluster3: LocalCluster) -> None:
    bootstrap = cluster3.bootstrap
    tps = _topic(bootstrap, "txn-fence", 1)
    with Producer(bootstrap, transactional_id="fenced-id") as first:
        first.init_transactions()
        first.begin_transaction()
        first.send("txn-fence", b"from-the-first").get(timeout=10)
        with Producer(bootstrap, transactional_id="fenced-id") as second:
            second.init_transactions()  # aborts the first's open transaction
            with pytest.raises(ProducerFencedError, match=r"'fenced-id'.*newer producer"):
                first.commit_transaction()
            with pytest.raises(ProducerFencedError, match="'fenced-id'"):
                first.begin_transaction()
            second.begin_transaction()
            second.send("txn-fence", b"from-the-second")
            second.commit_transaction()
    assert _read(bootstrap, tps, "read_committed", 1) == [b"from-the-second"]


def test_offsets_commit_only_with_the_transaction(cluster3: LocalCluster) -> None:
    bootstrap = cluster3.bootstrap
    (source,) = _topic(bootstrap, "ctp-in", 1)
    sink = _topic(bootstrap, "ctp-out", 1)
    with Producer(bootstrap, acks="all") as plain:
        for i in range(5):
            plain.send("ctp-in", b"%d" % i)
    group = "ctp-group"

    def committed() -> int | None:
        with Consumer(bootstrap, group_id=group, enable_auto_commit=False) as c:
            return c.committed(source)

    with (
        Producer(bootstrap, transactional_id="ctp-producer") as producer,
        Consumer(bootstrap, isolation_level="read_committed", auto_offset_reset="earliest") as c,
    ):
        producer.init_transactions()
        c.assign([source])
        records: list[ConsumerRecord] = []
        while len(records) < 5:
            for batch in c.poll(timeout_ms=500).values():
                records.extend(batch)
        for outcome in ("abort", "commit"):
            producer.begin_transaction()
            for r in records:
                producer.send("ctp-out", b"out-" + (r.value or b""))
            producer.send_offsets_to_transaction({source: records[-1].offset + 1}, group)
            if outcome == "abort":
                producer.abort_transaction()
                assert committed() is None
            else:
                producer.commit_transaction()
    deadline = time.monotonic() + 30
    while committed() != 5:
        assert time.monotonic() < deadline, committed()
        time.sleep(0.2)
    assert _read(bootstrap, sink, "read_committed", 5) == [b"out-%d" % i for i in range(5)]


def test_many_batches_in_flight_per_partition_transaction_after_transaction(
    cluster3: LocalCluster,
) -> None:
    """Small batches with no linger put several of a transaction's first batches to a partition
    in flight at once; each is verified with the coordinator (KIP-890) before it is appended,
    and the first appended must not void the others' verification (it did: the later ones
    were refused INVALID_TXN_STATE, retried, and the flush never ended)."""
    bootstrap = cluster3.bootstrap
    tps = _topic(bootstrap, "txn-pipelined")
    committed: list[bytes] = []
    with Producer(bootstrap, transactional_id="txn-pipelined", linger_ms=0,
                  batch_size=200) as producer:  # fmt: skip
        producer.init_transactions()
        for txn in range(4):
            producer.begin_transaction()
            values = [b"v%d-%d" % (txn, i) for i in range(300)]
            futures = [producer.send(tps[0].topic, v, partition=i % 2)
                       for i, v in enumerate(values)]  # fmt: skip
            if txn % 2:
                producer.abort_transaction()
                continue
            producer.commit_transaction()
            for f in futures:
                f.get(timeout=10)
            committed += values
    assert sorted(_read(bootstrap, tps, "read_committed", len(committed))) == sorted(committed)
