"""Kafka transactions (KIP-98) through real Kafka clients against a real odradek cluster.

Each of confluent-kafka, kafka-python and aiokafka runs a transactional producer over several
partitions of two topics: a committed transaction, an aborted one, a committed one. A
read_committed consumer of each client reads exactly the committed records, in order per
partition; a read_uncommitted one (and odradek's own consumer, which reads uncommitted) reads
every data record; none ever hands out a marker, so offsets have a gap where each marker is.
Two producers interleaving on the same partitions, one aborting, are told apart. Then:
ListOffsets stops at the last stable offset while a transaction is open; a second producer
with the same transactional.id fences the first and aborts its open transaction; the
coordinator aborts a transaction past its transaction.timeout.ms; a timeout above
transaction.max.timeout.ms is refused at once; kafka-python's admin lists and describes an
ongoing transaction and its producers; and kafka-python's own two transactional integration
tests (dpkp/kafka-python test/integration/test_producer_integration.py), ported.

Expected offsets are computed, not read, where one producer writes each partition: a transaction's
records on a partition take consecutive offsets and its marker takes the next one.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from client import Admin, Consumer
from client.types import NewTopic, TopicPartition
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterFactory, wait_until

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0
CLIENT_NAMES = ["confluent-kafka", "kafka-python", "aiokafka"]
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


@dataclass(frozen=True)
class Sent:
    topic: str
    partition: int
    value: bytes


# (topic, partition, offset, value) as a consumer handed it out
Read = tuple[str, int, int, bytes | None]
# a transaction: its records in the order sent, and whether it is committed
Txn = tuple[list[Sent], bool]


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create_topics(cluster: LocalCluster, topics: dict[str, int]) -> None:
    """Create `topics` (name: partitions, three replicas) and wait until every broker's
    metadata has each with a leader for every partition."""
    with Admin(cluster.bootstrap) as admin:
        rf = min(3, cluster.num_brokers)
        admin.create_topics([NewTopic(t, n, rf) for t, n in topics.items()])
    for address in cluster.bootstrap.split(","):
        with Admin(address) as admin:

            def ready() -> bool:
                descs = admin.describe_topics(list(topics))
                return all(
                    d.error_code == 0
                    and len(d.partitions) == topics[d.name]
                    and all(p.leader >= 0 for p in d.partitions)
                    for d in descs
                )

            wait_until(ready, f"{sorted(topics)} led on {address}", TIMEOUT_S)


Expected = dict[tuple[str, int], list[tuple[int, bytes]]]  # (topic, partition): [(offset, value)]


def _expected(txns: list[Txn], committed_only: bool) -> Expected:
    """(topic, partition): [(offset, value)] a consumer should read, from offset 0: each
    transaction's records on a partition in the order sent, then one offset for its marker."""
    next_offset: dict[tuple[str, int], int] = {}
    out: Expected = {}
    for recs, commit in txns:
        touched = []
        for r in recs:
            tp = (r.topic, r.partition)
            offset = next_offset.setdefault(tp, 0)
            next_offset[tp] = offset + 1
            touched.append(tp)
            if commit or not committed_only:
                out.setdefault(tp, []).append((offset, r.value))
        for tp in set(touched):
            next_offset[tp] += 1  # the marker
    return out


def _by_partition(got: list[Read]) -> dict[tuple[str, int], list[tuple[int, bytes | None]]]:
    out: dict[tuple[str, int], list[tuple[int, bytes | None]]] = {}
    for topic, partition, offset, value in got:
        out.setdefault((topic, partition), []).append((offset, value))
    return out


def _spread(topics: dict[str, int], tag: str, per_partition: int) -> list[Sent]:
    """`per_partition` records on every partition of every topic, interleaved across them."""
    return [
        Sent(t, p, f"{tag}-{t[-8:]}-{p}-{i}".encode())
        for i in range(per_partition)
        for t, n in topics.items()
        for p in range(n)
    ]


# ----- transactional producers, one function per client --------------------------------------


def _confluent_producer(bootstrap: str, txn_id: str, **config: Any) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                     "linger.ms": 5, **config})  # fmt: skip


def _confluent_send(p: Any, recs: list[Sent]) -> None:
    for r in recs:
        p.produce(r.topic, value=r.value, partition=r.partition)
        p.poll(0)
    # before an abort: librdkafka purges what is unsent when aborting
    assert p.flush(TIMEOUT_S) == 0, "confluent-kafka did not deliver everything in time"


def _run_confluent(bootstrap: str, txn_id: str, txns: list[Txn]) -> None:
    p = _confluent_producer(bootstrap, txn_id)
    p.init_transactions(TIMEOUT_S)
    for recs, commit in txns:
        p.begin_transaction()
        _confluent_send(p, recs)
        if commit:
            p.commit_transaction(TIMEOUT_S)
        else:
            p.abort_transaction(TIMEOUT_S)


def _run_kafka_python(bootstrap: str, txn_id: str, txns: list[Txn]) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    try:
        p.init_transactions()
        for recs, commit in txns:
            p.begin_transaction()
            futures = [p.send(r.topic, value=r.value, partition=r.partition) for r in recs]
            for f in futures:
                f.get(timeout=TIMEOUT_S)
            if commit:
                p.commit_transaction()
            else:
                p.abort_transaction()
    finally:
        p.close(timeout=5)


def _run_aiokafka(bootstrap: str, txn_id: str, txns: list[Txn]) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        await p.start()  # InitProducerId
        try:
            for recs, commit in txns:
                await p.begin_transaction()
                futures = [
                    await p.send(r.topic, value=r.value, partition=r.partition) for r in recs
                ]
                for f in futures:
                    await f
                if commit:
                    await p.commit_transaction()
                else:
                    await p.abort_transaction()
        finally:
            await p.stop()

    asyncio.run(run())


RUN_TXNS: dict[str, Callable[[str, str, list[Txn]], None]] = {
    "confluent-kafka": _run_confluent,
    "kafka-python": _run_kafka_python,
    "aiokafka": _run_aiokafka,
}


# ----- consumers by assignment, one function per client --------------------------------------

Tps = list[tuple[str, int]]
Until = dict[tuple[str, int], int]  # stop once each partition has handed out this offset


def _done(got: list[Read], until: Until, deadline: float) -> bool:
    seen = {(t, p, o) for t, p, o, _ in got}
    return time.monotonic() >= deadline or all((t, p, o) in seen for (t, p), o in until.items())


def _read_confluent(bootstrap: str, tps: Tps, isolation: str, until: Until) -> list[Read]:
    from confluent_kafka import OFFSET_BEGINNING
    from confluent_kafka import Consumer as CConsumer
    from confluent_kafka import TopicPartition as CTp

    c = CConsumer({"bootstrap.servers": bootstrap, "group.id": _name("assign"),
                   "enable.auto.commit": False, "isolation.level": isolation})  # fmt: skip
    try:
        c.assign([CTp(t, p, OFFSET_BEGINNING) for t, p in tps])
        got: list[Read] = []
        deadline = time.monotonic() + TIMEOUT_S
        while not _done(got, until, deadline):
            msg = c.poll(0.2)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append((msg.topic(), msg.partition(), msg.offset(), msg.value()))
        return got
    finally:
        c.close()


def _read_kafka_python(bootstrap: str, tps: Tps, isolation: str, until: Until) -> list[Read]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTp

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                      isolation_level=isolation)  # fmt: skip
    try:
        parts = [KTp(t, p) for t, p in tps]
        c.assign(parts)
        c.seek_to_beginning(*parts)
        got: list[Read] = []
        deadline = time.monotonic() + TIMEOUT_S
        while not _done(got, until, deadline):
            for records in c.poll(timeout_ms=200).values():
                got += [(r.topic, r.partition, r.offset, r.value) for r in records]
        return got
    finally:
        c.close()


def _read_aiokafka(bootstrap: str, tps: Tps, isolation: str, until: Until) -> list[Read]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATp

    async def run() -> list[Read]:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             isolation_level=isolation)  # fmt: skip
        await c.start()
        try:
            parts = [ATp(t, p) for t, p in tps]
            c.assign(parts)
            await c.seek_to_beginning(*parts)
            got: list[Read] = []
            deadline = time.monotonic() + TIMEOUT_S
            while not _done(got, until, deadline):
                for records in (await c.getmany(timeout_ms=200)).values():
                    got += [(r.topic, r.partition, r.offset, r.value) for r in records]
            return got
        finally:
            await c.stop()

    return asyncio.run(run())


READ: dict[str, Callable[[str, Tps, str, Until], list[Read]]] = {
    "confluent-kafka": _read_confluent,
    "kafka-python": _read_kafka_python,
    "aiokafka": _read_aiokafka,
}


def _read_native(bootstrap: str, tps: Tps, until: Until) -> list[Read]:
    """odradek's own consumer (read_uncommitted)."""
    got: list[Read] = []
    with Consumer(bootstrap) as c:
        parts = [TopicPartition(t, p) for t, p in tps]
        c.assign(parts)
        c.seek_to_beginning(*parts)
        deadline = time.monotonic() + TIMEOUT_S
        while not _done(got, until, deadline):
            for records in c.poll(timeout_ms=200).values():
                got += [(r.topic, r.partition, r.offset, r.value) for r in records]
    return got


def _until(expected: Expected) -> Until:
    return {tp: recs[-1][0] for tp, recs in expected.items()}


# ----- 1. commit and abort, read both ways -----------------------------------------------------


@pytest.mark.parametrize("client_name", CLIENT_NAMES)
def test_committed_and_aborted_transactions_read_both_ways(
    cluster3: LocalCluster, client_name: str
) -> None:
    topics = {_name("txa"): 3, _name("txb"): 2}
    _create_topics(cluster3, topics)
    txns: list[Txn] = [
        (_spread(topics, "c1", 3), True),
        (_spread(topics, "a2", 2), False),
        (_spread(topics, "c3", 2), True),
    ]
    RUN_TXNS[client_name](cluster3.kafka_bootstrap, _name(f"tx-{client_name}"), txns)
    committed = _expected(txns, committed_only=True)
    everything = _expected(txns, committed_only=False)
    tps = sorted(everything)
    for reader, read in READ.items():
        for isolation, want in ((READ_COMMITTED, committed), (READ_UNCOMMITTED, everything)):
            got = read(cluster3.kafka_bootstrap, tps, isolation, _until(want))
            assert _by_partition(got) == want, f"{reader} {isolation}, written by {client_name}"
    native = _read_native(cluster3.bootstrap, tps, _until(everything))
    assert _by_partition(native) == everything, f"native, written by {client_name}"


def test_interleaved_producers_one_aborting(cluster3: LocalCluster) -> None:
    """Two transactional producers write the same partitions batch by batch: A's transaction
    commits; B's first aborts while A's is still open, its second commits. Every client's
    read_committed consumer skips exactly B's aborted records (the fetch's aborted
    transactions are per producer id), wherever they fall between A's."""
    topic = _name("interleave")
    _create_topics(cluster3, {topic: 2})
    bootstrap = cluster3.kafka_bootstrap
    a = _confluent_producer(bootstrap, _name("tx-a"))
    b = _confluent_producer(bootstrap, _name("tx-b"))
    a.init_transactions(TIMEOUT_S)
    b.init_transactions(TIMEOUT_S)
    a.begin_transaction()
    b.begin_transaction()
    committed: set[bytes] = set()

    def rounds(tag: str, n: int, keep_a: bool, keep_b: bool) -> None:
        for i in range(n):
            for part in (0, 1):
                av, bv = f"a-{tag}-{i}-{part}".encode(), f"b-{tag}-{i}-{part}".encode()
                _confluent_send(a, [Sent(topic, part, av)])  # one batch each, interleaved
                _confluent_send(b, [Sent(topic, part, bv)])
                committed.update([av] * keep_a + [bv] * keep_b)

    rounds("1", 3, True, False)
    b.abort_transaction(TIMEOUT_S)
    b.begin_transaction()
    rounds("2", 2, True, True)
    a.commit_transaction(TIMEOUT_S)
    b.commit_transaction(TIMEOUT_S)
    # on each partition: 10 records and B's abort marker in offsets 0-10 (the marker is written
    # after EndTxn is answered, so A's next record may come first), then A's and B's commit
    # markers (11, 12)
    tps = [(topic, 0), (topic, 1)]
    everything = _by_partition(_read_native(cluster3.bootstrap, tps, {tp: 10 for tp in tps}))
    assert [len(everything[tp]) for tp in tps] == [10, 10], everything
    want = {tp: [(o, v) for o, v in recs if v in committed] for tp, recs in everything.items()}
    assert all(o <= 10 for tp in tps for o, _ in everything[tp]), everything
    assert sum(len(r) for r in want.values()) == len(committed) == 6 + 8
    until = {tp: recs[-1][0] for tp, recs in want.items()}
    for reader, read in READ.items():
        got = read(bootstrap, tps, READ_COMMITTED, until)
        assert _by_partition(got) == want, f"{reader} read_committed"


# ----- 2. ListOffsets per isolation level ------------------------------------------------------


def _end_offsets(bootstrap: str, topic: str, isolation: str, partition: int = 0) -> dict[str, int]:
    """`partition`'s end offset as each client's consumer with `isolation` sees it."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATp
    from confluent_kafka import Consumer as CConsumer
    from confluent_kafka import TopicPartition as CTp
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTp

    c = CConsumer({"bootstrap.servers": bootstrap, "group.id": _name("wm"),
                   "isolation.level": isolation})  # fmt: skip
    try:
        _, confluent_end = c.get_watermark_offsets(CTp(topic, partition), TIMEOUT_S, cached=False)
    finally:
        c.close()
    k = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
    try:
        kafka_python_end = k.end_offsets([KTp(topic, partition)])[KTp(topic, partition)]
    finally:
        k.close()

    async def aio() -> int:
        a = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
        await a.start()
        try:
            return int((await a.end_offsets([ATp(topic, partition)]))[ATp(topic, partition)])
        finally:
            await a.stop()

    return {"confluent-kafka": confluent_end, "kafka-python": kafka_python_end,
            "aiokafka": asyncio.run(aio())}  # fmt: skip


def _all(offset: int) -> dict[str, int]:
    return dict.fromkeys(CLIENT_NAMES, offset)


def test_read_committed_end_offset_stops_at_the_open_transaction(cluster3: LocalCluster) -> None:
    topic = _name("lso")
    _create_topics(cluster3, {topic: 1})
    bootstrap = cluster3.kafka_bootstrap
    p = _confluent_producer(bootstrap, _name("tx-lso"))
    p.init_transactions(TIMEOUT_S)
    p.begin_transaction()
    _confluent_send(p, [Sent(topic, 0, f"c-{i}".encode()) for i in range(3)])
    p.commit_transaction(TIMEOUT_S)  # offsets 0-2, its marker 3
    p.begin_transaction()
    _confluent_send(p, [Sent(topic, 0, f"o-{i}".encode()) for i in range(5)])  # offsets 4-8
    assert _end_offsets(bootstrap, topic, READ_UNCOMMITTED) == _all(9), "the high watermark"
    assert _end_offsets(bootstrap, topic, READ_COMMITTED) == _all(4), "the open one's first"
    p.commit_transaction(TIMEOUT_S)  # its marker 9
    # the marker is written after EndTxn is answered, and the LSO moves with the HW
    wait_until(lambda: _end_offsets(bootstrap, topic, READ_COMMITTED) == _all(10),
               "the LSO past the commit marker", TIMEOUT_S)  # fmt: skip
    assert _end_offsets(bootstrap, topic, READ_UNCOMMITTED) == _all(10)


# ----- 3. fencing --------------------------------------------------------------------------------


def _committed_values(bootstrap: str, topic: str, until_offset: int) -> list[bytes | None]:
    got = _read_kafka_python(bootstrap, [(topic, 0)], READ_COMMITTED, {(topic, 0): until_offset})
    return [v for _, _, _, v in got]


def test_confluent_producer_is_fenced_by_a_second_with_its_id(cluster3: LocalCluster) -> None:
    from confluent_kafka import KafkaError, KafkaException

    topic = _name("fence-c")
    _create_topics(cluster3, {topic: 1})
    bootstrap, txn_id = cluster3.kafka_bootstrap, _name("tx-fence-c")
    first = _confluent_producer(bootstrap, txn_id, log_level=0)
    first.init_transactions(TIMEOUT_S)
    first.begin_transaction()
    _confluent_send(first, [Sent(topic, 0, b"fenced-0"), Sent(topic, 0, b"fenced-1")])
    second = _confluent_producer(bootstrap, txn_id)
    second.init_transactions(TIMEOUT_S)  # bumps the epoch; the open transaction is aborted
    with pytest.raises(KafkaException) as exc:
        first.produce(topic, value=b"fenced-2", partition=0)
        first.flush(TIMEOUT_S)
        first.commit_transaction(TIMEOUT_S)
    err = exc.value.args[0]
    assert err.fatal(), err
    assert err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED), err
    second.begin_transaction()
    _confluent_send(second, [Sent(topic, 0, b"second")])
    second.commit_transaction(TIMEOUT_S)
    # offsets: fenced-0, fenced-1, the abort marker, second, its commit marker
    assert _committed_values(bootstrap, topic, 3) == [b"second"]


def test_kafka_python_producer_is_fenced_by_a_second_with_its_id(cluster3: LocalCluster) -> None:
    from kafka import KafkaProducer
    from kafka.errors import InvalidProducerEpochError, KafkaError, ProducerFencedError

    topic = _name("fence-k")
    _create_topics(cluster3, {topic: 1})
    bootstrap, txn_id = cluster3.kafka_bootstrap, _name("tx-fence-k")
    first = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    second = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    try:
        first.init_transactions()
        first.begin_transaction()
        first.send(topic, value=b"fenced-0", partition=0).get(timeout=TIMEOUT_S)
        second.init_transactions()
        # a stale epoch's produce is INVALID_PRODUCER_EPOCH (Kafka since 2.7, KIP-588: abortable);
        # the client's KIP-360 epoch bump is then refused with PRODUCER_FENCED, which is fatal
        with pytest.raises(InvalidProducerEpochError):
            first.send(topic, value=b"fenced-1", partition=0).get(timeout=TIMEOUT_S)
        # (the client is still bumping when the send fails; commit_transaction then would be
        # an "invalid transition" of its own state machine, so wait for its verdict)
        manager = first._transaction_manager
        wait_until(manager.has_fatal_error, "kafka-python's fatal error", TIMEOUT_S)
        assert isinstance(manager.last_error, ProducerFencedError), manager.last_error
        with pytest.raises(KafkaError, match="ProducerFencedError"):
            first.commit_transaction()
        second.begin_transaction()
        second.send(topic, value=b"second", partition=0).get(timeout=TIMEOUT_S)
        second.commit_transaction()
    finally:
        first.close(timeout=5)
        second.close(timeout=5)
    assert _committed_values(bootstrap, topic, 2) == [b"second"]


def test_aiokafka_producer_is_fenced_by_a_second_with_its_id(cluster3: LocalCluster) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import ProducerFenced

    topic = _name("fence-a")
    _create_topics(cluster3, {topic: 1})
    bootstrap, txn_id = cluster3.kafka_bootstrap, _name("tx-fence-a")

    async def run() -> None:
        first = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        second = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        await first.start()
        try:
            await first.begin_transaction()
            await first.send_and_wait(topic, value=b"fenced-0", partition=0)
            await second.start()
            with pytest.raises(ProducerFenced):
                await first.send_and_wait(topic, value=b"fenced-1", partition=0)
                await first.commit_transaction()
            await second.begin_transaction()
            await second.send_and_wait(topic, value=b"second", partition=0)
            await second.commit_transaction()
        finally:
            await first.stop()
            await second.stop()

    asyncio.run(run())
    assert _committed_values(bootstrap, topic, 2) == [b"second"]


# ----- 4. the coordinator aborts a transaction past its timeout -------------------------------

TXN_TIMEOUT_MS = 2000
ABORT_SWEEP_MS = 300


def test_a_stalled_transaction_is_aborted_at_its_timeout(cluster_factory: ClusterFactory) -> None:
    from confluent_kafka import KafkaError, KafkaException

    cluster = cluster_factory(brokers=3, broker_settings={
        "transaction_abort_timed_out_transaction_cleanup_interval_ms": ABORT_SWEEP_MS,
    })  # fmt: skip
    topic = _name("stall")
    _create_topics(cluster, {topic: 2})
    bootstrap, txn_id = cluster.kafka_bootstrap, _name("tx-stall")
    p = _confluent_producer(bootstrap, txn_id, log_level=0,
                            **{"transaction.timeout.ms": TXN_TIMEOUT_MS})  # fmt: skip
    p.init_transactions(TIMEOUT_S)
    p.begin_transaction()
    started = time.monotonic()
    _confluent_send(p, [Sent(topic, i % 2, f"stalled-{i}".encode()) for i in range(6)])
    # the producer stalls; the coordinator's sweep aborts it: both partitions get an abort
    # marker (offset 3) and the last stable offset moves past it
    admin = _kafka_python_admin(bootstrap)
    try:
        wait_until(lambda: admin.describe_transactions([txn_id])[txn_id].state.value
                   == "CompleteAbort", "the timed-out transaction aborted", TIMEOUT_S)  # fmt: skip
    finally:
        admin.close()
    assert time.monotonic() - started >= TXN_TIMEOUT_MS / 1000 - 0.5, "not before its timeout"
    for part in (0, 1):
        wait_until(lambda: _end_offsets(bootstrap, topic, READ_COMMITTED, part) == _all(4),  # noqa: B023
                   f"partition {part}'s LSO past the abort marker", TIMEOUT_S)  # fmt: skip
    with pytest.raises(KafkaException) as exc:
        p.commit_transaction(TIMEOUT_S)
    err = exc.value.args[0]
    assert err.fatal(), err  # librdkafka: "This instance has been fenced by a newer instance"
    assert err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED), err
    # a new producer with the id commits one record on each (offsets 4, their markers 5)
    _run_confluent(
        bootstrap, txn_id, [([Sent(topic, 0, b"after"), Sent(topic, 1, b"after")], True)]
    )
    got = _read_kafka_python(bootstrap, [(topic, 0), (topic, 1)], READ_COMMITTED,
                             {(topic, 0): 4, (topic, 1): 4})  # fmt: skip
    assert _by_partition(got) == {(topic, 0): [(4, b"after")], (topic, 1): [(4, b"after")]}


# ----- 5. a timeout above transaction.max.timeout.ms -----------------------------------------

ABOVE_MAX_MS = 900_001  # transaction.max.timeout.ms defaults to 900000 (15 minutes)


def test_a_timeout_above_the_maximum_is_refused_at_once(cluster3: LocalCluster) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import InvalidTransactionTimeout
    from confluent_kafka import KafkaError, KafkaException
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as KError

    bootstrap = cluster3.kafka_bootstrap
    started = time.monotonic()
    p = _confluent_producer(bootstrap, _name("tx-max-c"), log_level=0,
                            **{"transaction.timeout.ms": ABOVE_MAX_MS})  # fmt: skip
    with pytest.raises(KafkaException) as exc:
        p.init_transactions(TIMEOUT_S)
    assert exc.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT, exc.value.args[0]
    assert time.monotonic() - started < 5, "at once"

    started = time.monotonic()
    k = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=_name("tx-max-k"),
                      transaction_timeout_ms=ABOVE_MAX_MS)  # fmt: skip
    try:
        # kafka-python wraps it: "Unexpected error in InitProducerIdResponse: [Error 50] ..."
        with pytest.raises(KError, match=r"\[Error 50\] InvalidTransactionTimeoutError"):
            k.init_transactions()
    finally:
        k.close(timeout=5)
    assert time.monotonic() - started < 5, "at once"

    async def aio() -> None:
        a = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=_name("tx-max-a"),
                             transaction_timeout_ms=ABOVE_MAX_MS)  # fmt: skip
        try:
            with pytest.raises(InvalidTransactionTimeout):
                await a.start()
        finally:
            await a.stop()

    started = time.monotonic()
    asyncio.run(aio())
    assert time.monotonic() - started < 5, "at once"


# ----- 6. kafka-python's admin: ListTransactions, DescribeTransactions, DescribeProducers -----


def _kafka_python_admin(bootstrap: str) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap)


def test_admin_shows_an_ongoing_transaction(cluster3: LocalCluster) -> None:
    from kafka import TopicPartition as KTp
    from kafka.errors import TransactionalIdNotFoundError

    topic = _name("adm")
    _create_topics(cluster3, {topic: 3})
    bootstrap, txn_id = cluster3.kafka_bootstrap, _name("tx-adm")
    p = _confluent_producer(bootstrap, txn_id)
    p.init_transactions(TIMEOUT_S)
    admin = _kafka_python_admin(bootstrap)
    try:
        desc = admin.describe_transactions([txn_id])[txn_id]  # no transaction yet
        assert (desc.state.value, desc.transaction_start_time_ms) == ("Empty", -1)
        assert desc.topic_partitions == set()
        p.begin_transaction()
        before_ms = int(time.time() * 1000)
        _confluent_send(p, [Sent(topic, 0, b"a"), Sent(topic, 2, b"b"), Sent(topic, 2, b"c")])
        desc = admin.describe_transactions([txn_id])[txn_id]
        assert desc.state.value == "Ongoing"
        assert desc.topic_partitions == {KTp(topic, 0), KTp(topic, 2)}
        assert desc.transaction_timeout_ms == 60_000  # librdkafka's default
        assert before_ms - 5000 <= desc.transaction_start_time_ms <= int(time.time() * 1000)
        assert desc.producer_epoch >= 0
        pid = desc.producer_id
        with pytest.raises(TransactionalIdNotFoundError):
            admin.describe_transactions([_name("tx-never")])

        def listed(**filters: Any) -> list[tuple[int, str]]:
            return [(t.producer_id, t.state.value)
                    for rows in admin.list_transactions(**filters).values()
                    for t in rows if t.transactional_id == txn_id]  # fmt: skip

        assert listed() == [(pid, "Ongoing")]
        assert listed(state_filters=["Ongoing"], producer_id_filters=[pid]) == [(pid, "Ongoing")]
        assert listed(state_filters=["CompleteCommit"]) == []
        assert listed(producer_id_filters=[pid + 1]) == []
        assert listed(duration_filter_ms=0) == [(pid, "Ongoing")]  # ListTransactions v1
        assert listed(duration_filter_ms=3_600_000) == [], "open for less than an hour"

        def producers(partition: int, broker_id: int | None = None) -> list[tuple[int, int, int]]:
            states = admin.describe_producers([KTp(topic, partition)], broker_id=broker_id)
            return [(s.producer_epoch, s.last_sequence, s.current_transaction_start_offset)
                    for s in states[KTp(topic, partition)].active_producers
                    if s.producer_id == pid]  # fmt: skip

        epoch = desc.producer_epoch
        assert producers(0) == [(epoch, 0, 0)]
        assert producers(2) == [(epoch, 1, 0)]
        assert producers(1) == [], "partition 1 never had it"
        # any replica answers (Kafka's Partition.activeProducerState; KIP-664's broker_id)
        with Admin(cluster3.bootstrap) as native:
            (described,) = native.describe_topics([topic])
        for replica in described.partitions[2].replicas:
            wait_until(lambda: producers(2, replica) == [(epoch, 1, 0)],  # noqa: B023
                       f"broker {replica}'s producer state", TIMEOUT_S)  # fmt: skip
        p.commit_transaction(TIMEOUT_S)
        wait_until(lambda: admin.describe_transactions([txn_id])[txn_id].state.value
                   == "CompleteCommit", "the commit complete", TIMEOUT_S)  # fmt: skip
        assert admin.describe_transactions([txn_id])[txn_id].topic_partitions == set()
        assert listed(state_filters=["Ongoing"]) == []
        assert listed(state_filters=["CompleteCommit"]) == [(pid, "CompleteCommit")]
        wait_until(lambda: producers(0) == [(epoch, 0, -1)] and producers(2) == [(epoch, 1, -1)],
                   "no open transaction on the leaders", TIMEOUT_S)  # fmt: skip
    finally:
        admin.close()


def test_an_admin_abort_ends_a_partitions_open_transaction(cluster3: LocalCluster) -> None:
    """kafka-transactions.sh abort (here kafka-python's admin abort_transaction): the partition
    leader takes WriteTxnMarkers on its Kafka port and writes the ABORT marker, so the
    partition's last stable offset moves on; what a hanging transaction is ended with.
    About 30 s (31 s measured on a loaded 2-core machine): a transactional confluent-kafka
    producer, kafka-python's admin and a committed read each start and connect (which step
    takes the most is not measured yet)."""
    from kafka import TopicPartition as KTp
    from kafka.admin._transactions import AbortTransactionSpec

    topic = _name("admin-abort")
    _create_topics(cluster3, {topic: 1})
    bootstrap = cluster3.kafka_bootstrap
    p = _confluent_producer(bootstrap, _name("tx-admin-abort"))
    p.init_transactions(TIMEOUT_S)
    p.begin_transaction()
    _confluent_send(p, [Sent(topic, 0, f"o-{i}".encode()) for i in range(3)])  # offsets 0-2
    assert _end_offsets(bootstrap, topic, READ_COMMITTED) == _all(0)
    admin = _kafka_python_admin(bootstrap)
    try:
        tp = KTp(topic, 0)
        (state,) = admin.describe_producers([tp])[tp].active_producers
        assert state.current_transaction_start_offset == 0
        admin.abort_transaction(AbortTransactionSpec(
            tp, state.producer_id, state.producer_epoch, state.coordinator_epoch))  # fmt: skip
        wait_until(lambda: _end_offsets(bootstrap, topic, READ_COMMITTED) == _all(4),
                   "the LSO past the admin's abort marker", TIMEOUT_S)  # fmt: skip
        (state,) = admin.describe_producers([tp])[tp].active_producers
        assert state.current_transaction_start_offset == -1
    finally:
        admin.close()
    assert _committed_values(bootstrap, topic, 4) == [], "the aborted records are not read"
    p.abort_transaction(TIMEOUT_S)


# ----- 8. kafka-python's own transactional integration tests, ported ------------------------
# From dpkp/kafka-python test/integration/test_producer_integration.py: their fixtures'
# producer and consumer factories are plain clients on the cluster's Kafka listener, and the
# topic (auto-created there) is created here; the assertions are theirs.


def test_kafka_python_transactional_producer_messages(cluster3: LocalCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTp

    topic = _name("transactional_test_topic")
    _create_topics(cluster3, {topic: 1})
    bootstrap = cluster3.kafka_bootstrap
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=_name("testing"))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, partition=0, value=b"msg1").get()
        producer.send(topic, partition=0, value=b"msg2").get()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, partition=0, value=b"msg3").get()
        producer.send(topic, partition=0, value=b"msg4").get()
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)

    messages = set()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             consumer_timeout_ms=10000, auto_offset_reset="earliest",
                             isolation_level="read_committed")  # fmt: skip
    try:
        consumer.assign([KTp(topic, 0)])
        for msg in consumer:
            assert msg.value in {b"msg3", b"msg4"}
            messages.add(msg.value)
            if messages == {b"msg3", b"msg4"}:
                break
    finally:
        consumer.close()
    assert messages == {b"msg3", b"msg4"}


def test_kafka_python_transactional_producer_offsets(cluster3: LocalCluster) -> None:
    from kafka import KafkaProducer, OffsetAndMetadata
    from kafka import TopicPartition as KTp

    leader_epoch = 0  # their broker >= 2.1 case
    topic = _name("transactional_test_topic")
    group = _name("txn-test-group")
    _create_topics(cluster3, {topic: 2})
    tp0 = KTp(topic, 0)
    tp1 = KTp(topic, 1)
    offsets = {tp0: OffsetAndMetadata(0, "metadata", leader_epoch)}
    bootstrap = cluster3.kafka_bootstrap
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=_name("testing"))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, partition=0, value=b"msg1").get()
        producer.send_offsets_to_transaction(offsets, group)
        producer.commit_transaction()

        producer.begin_transaction()
        producer.send_offsets_to_transaction({tp1: OffsetAndMetadata(1, "bad", 1)}, group)
        producer.abort_transaction()
    finally:
        producer.close(timeout=5)

    admin = _kafka_python_admin(bootstrap)
    try:
        result = {tp0: OffsetAndMetadata(offset=0, metadata="metadata", leader_epoch=leader_epoch)}
        got = admin.list_group_offsets(group)[group]  # kafka-python 3.0 keys it by group
    finally:
        admin.close()
    assert got == result
