"""Idempotent producers keep send order through expired batches and epoch bumps (real processes).

Three brokers, a topic of 2 partitions with RF 3 and min.insync.replicas 2, two idempotent
producers (acks=all, delivery_timeout_ms=3000) writing numbered values from threads. Three
times: two brokers are SIGKILLed at once, so the partitions sit below min.insync.replicas
(NOT_ENOUGH_REPLICAS, or their leader gone) long enough for batches to expire and the producers
to bump their epochs; then both come back and the test waits for the ISRs to fill and the
producers to be acknowledged again. Read back: offsets contiguous, every acknowledged value
once at its acknowledged offset, and per producer and partition the stored values (acknowledged
or not) in send order. Among the failed sends, none was fenced by its own producer's newer epoch
(INVALID_PRODUCER_EPOCH: the new epoch overtook a batch that had not settled), and every expiry
names its cause. The seed is printed; replay with ODRADEK_TEST_SEED=<seed>.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

import pytest

from client import Admin, Consumer, NewTopic, Producer, RecordMetadata, TopicPartition
from client.sync_producer import SendFuture
from deploy.cluster import LocalCluster
from protocol.errors import InvalidProducerEpochError, RequestTimedOutError
from tests.fixtures.cluster import ClusterFactory, alive_bootstrap, seeded_rng, wait_until

pytestmark = pytest.mark.integration
T = TypeVar("T")

TOPIC = "ordered"
PARTITIONS = 2
PRODUCERS = 2
KILL_ROUNDS = 3
DOWN_S = 4.0  # longer than delivery_timeout_ms: batches of the partitions expire meanwhile
DELIVERY_TIMEOUT_MS = 3000
WAIT_S = 60.0
SEND_GAP_S = 0.004


def _wait(check: Callable[[], T], what: str, timeout_s: float = WAIT_S) -> T:
    return wait_until(check, what, timeout_s)


def _full_isr(cluster: LocalCluster) -> bool:
    """Every partition has a leader and all three replicas in its ISR (asked of a live broker)."""
    bootstrap = alive_bootstrap(cluster)
    try:
        with Admin(bootstrap, request_timeout_ms=2000) as admin:
            (desc,) = admin.describe_topics([TOPIC])
    except Exception:  # a broker died under the admin: ask again
        return False
    parts = desc.partitions if not desc.error_code else []
    return len(parts) == PARTITIONS and all(p.leader >= 0 and len(p.isr) == 3 for p in parts)


class NumberedProducer:
    """Sends `<tag>-<n>` to partition n % PARTITIONS from a thread; keeps, per partition, the
    values in send order with their futures."""

    def __init__(self, bootstrap: str, tag: str) -> None:
        self.tag = tag
        self.sent: dict[int, list[tuple[bytes, SendFuture[RecordMetadata]]]] = {
            p: [] for p in range(PARTITIONS)
        }
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer(
            bootstrap, acks="all", delivery_timeout_ms=DELIVERY_TIMEOUT_MS, linger_ms=2,
            retry_backoff_ms=50, request_timeout_ms=2000,
        )  # fmt: skip
        self._thread = threading.Thread(target=self._run, name=f"producer-{tag}", daemon=True)

    def start(self) -> None:
        """Send value 0 and wait for it, then go on from a thread. (Starting the producers one
        after another also keeps the first uses of the record codec, which imports aiokafka
        lazily, on one thread at a time: two loops importing it at once fail with ImportError.)"""
        value = b"%s-0" % self.tag.encode()
        future = self._producer.send(TOPIC, value, partition=0)
        self.sent[0].append((value, future))
        future.result(WAIT_S)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 300
        n = 1
        while not self._stop.is_set() and time.monotonic() < deadline:
            p = n % PARTITIONS
            value = b"%s-%d" % (self.tag.encode(), n)
            future = self._producer.send(TOPIC, value, partition=p)
            with self._lock:
                self.sent[p].append((value, future))
            n += 1
            time.sleep(SEND_GAP_S)

    def acked(self) -> int:
        with self._lock:
            futures = [f for items in self.sent.values() for _, f in items]
        return sum(1 for f in futures if f.done() and f.exception() is None)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "the producer thread did not finish"
        self._producer.flush(timeout_ms=WAIT_S * 1000)
        self._producer.close()

    def outcomes(self, p: int) -> list[tuple[bytes, RecordMetadata | BaseException]]:
        """Each value sent to partition p in send order, with its metadata or its error."""
        out: list[tuple[bytes, RecordMetadata | BaseException]] = []
        for value, future in self.sent[p]:
            error = future.exception(WAIT_S)
            out.append((value, error if error is not None else future.result()))
        return out


def _read_partition(bootstrap: str, p: int) -> list[tuple[int, bytes]]:
    """Every record of one partition from offset 0 up to its end offset."""
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        tp = TopicPartition(TOPIC, p)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + WAIT_S
        while (not got or got[-1][0] < end - 1) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend((r.offset, r.value or b"") for r in records)
    assert len(got) == end, f"partition {p}: read {len(got)} of {end} records"
    return got


def _check_partition(
    p: int, log: list[tuple[int, bytes]], producers: list[NumberedProducer]
) -> int:
    """The read-back checks of one partition; returns how many acknowledged values it holds."""
    assert [o for o, _ in log] == list(range(len(log))), f"partition {p}: offsets not contiguous"
    stored_at: dict[bytes, int] = {}
    for offset, value in log:
        assert value not in stored_at, f"partition {p}: {value!r} at {stored_at[value]}, {offset}"
        stored_at[value] = offset
    acked = 0
    for producer in producers:
        outcomes = producer.outcomes(p)
        index = {value: i for i, (value, _) in enumerate(outcomes)}
        for value, outcome in outcomes:
            if isinstance(outcome, RecordMetadata):
                assert stored_at.get(value) == outcome.offset, (
                    f"partition {p}: {value!r} acknowledged at {outcome.offset}, "
                    f"stored at {stored_at.get(value)}"
                )
                acked += 1
        mine = [(offset, index[value]) for offset, value in log if value in index]
        for (o1, i1), (o2, i2) in itertools.pairwise(mine):
            assert i1 < i2, (
                f"partition {p}: {producer.tag}'s value #{i1} at offset {o1} is before #{i2} "
                f"at {o2}: stored out of send order"
            )
    sent = {value for producer in producers for value, _ in producer.sent[p]}
    strangers = [value for value in stored_at if value not in sent]
    assert not strangers, f"partition {p}: values nobody sent: {strangers[:5]}"
    return acked


def _progress(producers: list[NumberedProducer], more: int) -> Callable[[], bool]:
    """A check: every producer has `more` acknowledgements than it has now."""
    before = [producer.acked() for producer in producers]
    return lambda: all(pr.acked() >= b + more for pr, b in zip(producers, before, strict=True))


@pytest.mark.slow  # kills or pauses brokers
def test_expired_batches_and_epoch_bumps_keep_send_order(cluster_factory: ClusterFactory) -> None:
    rng = seeded_rng()
    cluster = cluster_factory(3)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})])
    _wait(lambda: _full_isr(cluster), "full ISRs")
    producers = [NumberedProducer(cluster.bootstrap, f"p{i}") for i in range(PRODUCERS)]
    for producer in producers:
        producer.start()
    try:
        for round_ in range(KILL_ROUNDS):
            _wait(_progress(producers, 50), "acknowledgements")
            time.sleep(rng.uniform(0.2, 1.0))
            victims = sorted(rng.sample([1, 2, 3], 2))
            print(f"round {round_}: killing brokers {victims}")
            for broker in victims:
                cluster.kill(broker, "KILL")
            time.sleep(DOWN_S)  # a duration, not a state: batches expire meanwhile
            for broker in victims:
                cluster.start(broker)
            _wait(lambda: _full_isr(cluster), "full ISRs again")
            _wait(_progress(producers, 20), "acknowledgements after the restart")
    finally:
        for producer in producers:
            producer.stop()
    _wait(lambda: _full_isr(cluster), "full ISRs before reading")
    acked = 0
    for p in range(PARTITIONS):
        log = _read_partition(cluster.bootstrap, p)
        acked += _check_partition(p, log, producers)
    errors = [
        o for pr in producers for p in range(PARTITIONS) for _, o in pr.outcomes(p)
        if not isinstance(o, RecordMetadata)
    ]  # fmt: skip
    print(f"acknowledged {acked}, failed {Counter(type(e).__name__ for e in errors)}")
    assert acked >= 300
    # A fenced batch means a newer epoch reached its partition before it settled.
    fenced = [e for e in errors if isinstance(e, InvalidProducerEpochError)]
    assert not fenced, f"{len(fenced)} batches fenced by their own producer: {fenced[0]}"
    expired = [str(e) for e in errors if isinstance(e, RequestTimedOutError)]
    print("why:", Counter(re.sub(r"\d+", "N", m) for m in expired).most_common(6))
    vague = [m for m in expired if f"delivery timed out after {DELIVERY_TIMEOUT_MS} ms: " not in m]
    assert not vague, f"expiries that do not name their cause: {Counter(vague).most_common(3)}"
