"""The chaos run's workload: idempotent acks=all producers and a committing consumer group.

Producers (threads) send "<producer>-<partition>-<n>" round-robin over the topic's partitions at
a total rate, and record every send in send order with its outcome (the acknowledged offset, or
the error) and, per partition, when acknowledgements arrived (to time availability after a
fault). The consumer group (one member per thread, in one group) polls, records every value it
received, then commits synchronously what it processed, and records each commit that succeeded;
a sampler reads the group's committed offsets from the coordinator now and then, so that a
commit lost in a coordinator failover shows as an offset going backwards.

Two clients do this: the native client (`--workload native`), or Kafka clients through the
Kafka listener (`--workload kafka`: confluent-kafka, librdkafka's idempotent producer, and its
consumer group with manual commits). The delivery timeout is long (two minutes) so sends
outlive every fault rather than expire: an expired send is not retried, and librdkafka
renumbers the rest after its epoch bump (see the tests of issue 10), which a checker of
exactly-once would then report as duplicates that no broker could have prevented.

Bounds: each producer keeps at most MAX_IN_FLIGHT sends unanswered (it waits for the oldest
before sending more), so memory stays bounded whatever the faults do.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from client import Consumer, Producer, TopicPartition
from deploy.chaos import security
from deploy.chaos.checker import Send

DELIVERY_TIMEOUT_MS = 120_000
MAX_IN_FLIGHT = 2000
POLL_MS = 200
SAMPLE_EVERY_S = 0.5


class AckClock:
    """Per partition, (send time, ack time) of every acknowledged record (monotonic clock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.acks: dict[int, list[tuple[float, float]]] = {}

    def ack(self, partition: int, sent_at: float) -> None:
        now = time.monotonic()
        with self._lock:
            self.acks.setdefault(partition, []).append((sent_at, now))

    def first_after(self, partitions: list[int], t: float) -> float | None:
        """When the first record sent at or after `t` to one of `partitions` was acknowledged:
        a write the fault could not have let through before it (an ack of an earlier send may
        still arrive from the dying leader)."""
        best: float | None = None
        with self._lock:
            for p in partitions:
                acks = sorted(self.acks.get(p, []))
                i = bisect.bisect_left(acks, (t, 0.0))
                first = min((acked for _, acked in acks[i:]), default=None)
                if first is not None and (best is None or first < best):
                    best = first
        return best


class ProducerThread:
    """One producer sending to every partition in turn; `sends[p]` in send order."""

    def __init__(
        self, name: str, send: Callable[[int, str, Callable[[int | None, str | None], None]], None],
        flush: Callable[[], None], close: Callable[[], None], partitions: int,
        rate: float, clock: AckClock,
    ) -> None:  # fmt: skip
        self.name = name
        self.partitions = partitions
        self.sends: dict[int, list[Send]] = {p: [] for p in range(partitions)}
        self._send, self._flush, self._close = send, flush, close
        self._gap = 1.0 / rate if rate > 0 else 0.0
        self._clock = clock
        self._stop = threading.Event()
        self._outstanding = threading.Semaphore(MAX_IN_FLIGHT)
        self._thread = threading.Thread(target=self._run, name=f"chaos-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            p = n % self.partitions
            record = Send(f"{self.name}-{p}-{n // self.partitions}")
            self.sends[p].append(record)
            while not self._outstanding.acquire(timeout=0.2):
                if self._stop.is_set():
                    record.error = "not sent: the run ended while the producer was full"
                    return
            self._send(p, record.value, self._callback(p, record, time.monotonic()))
            n += 1
            next_at += self._gap
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_at = time.monotonic()

    def _callback(
        self, p: int, record: Send, sent_at: float
    ) -> Callable[[int | None, str | None], None]:
        def done(offset: int | None, error: str | None) -> None:
            record.offset, record.error = offset, error
            if offset is not None:
                self._clock.ack(p, sent_at)
            self._outstanding.release()

        return done

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        self._flush()
        self._close()

    def acked(self) -> int:
        return sum(1 for sends in self.sends.values() for s in list(sends) if s.acked)


def native_producer(
    bootstrap: str, name: str, topic: str, partitions: int, rate: float, clock: AckClock
) -> ProducerThread:
    producer = Producer(
        bootstrap, acks="all", enable_idempotence=True, linger_ms=2,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS, request_timeout_ms=5000, retry_backoff_ms=50,
        **security.native(),
    )  # fmt: skip

    def send(p: int, value: str, done: Callable[[int | None, str | None], None]) -> None:
        future = producer.send(topic, value.encode(), partition=p)

        def settle(f: Any) -> None:
            exc = f.exception()
            done(None, f"{type(exc).__name__}: {exc}") if exc else done(f.result().offset, None)

        future.add_done_callback(settle)

    return ProducerThread(name, send, lambda: producer.flush(DELIVERY_TIMEOUT_MS),
                          producer.close, partitions, rate, clock)  # fmt: skip


def kafka_producer(
    bootstrap: str, name: str, topic: str, partitions: int, rate: float, clock: AckClock
) -> ProducerThread:
    from confluent_kafka import Producer as KafkaProducer  # optional: --workload kafka

    producer = KafkaProducer({
        "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
        "linger.ms": 2, "message.timeout.ms": DELIVERY_TIMEOUT_MS, "log_level": 0,
        **security.librdkafka(),
    })  # fmt: skip
    lock = threading.Lock()
    stop = threading.Event()

    def poller() -> None:  # delivery callbacks run inside poll()
        while not stop.is_set():
            with lock:
                producer.poll(0)
            stop.wait(0.005)

    thread = threading.Thread(target=poller, name=f"chaos-{name}-poll", daemon=True)
    thread.start()

    def send(p: int, value: str, done: Callable[[int | None, str | None], None]) -> None:
        def cb(err: Any, msg: Any) -> None:
            done(None, str(err)) if err is not None else done(msg.offset(), None)

        with lock:
            producer.produce(topic, value=value.encode(), partition=p, on_delivery=cb)

    def flush() -> None:
        stop.set()
        thread.join(5)
        producer.flush(DELIVERY_TIMEOUT_MS / 1000)

    return ProducerThread(name, send, flush, lambda: None, partitions, rate, clock)


class GroupMember:
    """One consumer of the group: poll, record, commit what was processed (synchronously)."""

    def __init__(
        self, name: str, poll: Callable[[], list[tuple[int, int, str]]],
        commit: Callable[[dict[int, int]], None], close: Callable[[], None],
    ) -> None:  # fmt: skip
        self.name = name
        self.consumed: dict[int, list[str]] = {}
        # (start, end, partition, offset, who) of each commit that succeeded
        self.commits: deque[tuple[float, float, int, int, str]] = deque()
        self.errors: list[str] = []
        self._poll, self._commit, self._close = poll, commit, close
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"chaos-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                records = self._poll()
            except Exception as exc:  # a fault under the consumer: poll again
                self.errors.append(f"poll: {type(exc).__name__}: {exc}")
                time.sleep(0.2)
                continue
            if not records:
                continue
            ends: dict[int, int] = {}
            for p, offset, value in records:
                self.consumed.setdefault(p, []).append(value)
                ends[p] = max(ends.get(p, 0), offset + 1)
            started = time.monotonic()
            try:
                self._commit(ends)
            except Exception as exc:  # not committed: the records come again after a rebalance
                self.errors.append(f"commit: {type(exc).__name__}: {exc}")
                continue
            ended = time.monotonic()
            self.commits.extend((started, ended, p, o, self.name) for p, o in ends.items())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._close()


def native_member(bootstrap: str, name: str, group: str, topic: str) -> GroupMember:
    consumer = Consumer(
        bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
        session_timeout_ms=10_000, client_id=name, **security.native(),
    )  # fmt: skip
    consumer.subscribe([topic])

    def poll() -> list[tuple[int, int, str]]:
        batch = consumer.poll(timeout_ms=POLL_MS)
        return [(tp.partition, r.offset, (r.value or b"").decode())
                for tp, records in batch.items() for r in records]  # fmt: skip

    def commit(ends: dict[int, int]) -> None:
        consumer.commit({TopicPartition(topic, p): o for p, o in ends.items()})

    return GroupMember(name, poll, commit, consumer.close)


def kafka_member(bootstrap: str, name: str, group: str, topic: str) -> GroupMember:
    from confluent_kafka import Consumer as KafkaConsumer
    from confluent_kafka import TopicPartition as KafkaTP

    consumer = KafkaConsumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "client.id": name, "log_level": 0,
        **security.librdkafka(),
    })  # fmt: skip
    consumer.subscribe([topic])

    def poll() -> list[tuple[int, int, str]]:
        out: list[tuple[int, int, str]] = []
        for msg in consumer.consume(num_messages=500, timeout=POLL_MS / 1000):
            if msg.error() is None:
                p, offset = msg.partition(), msg.offset()
                out.append((int(p or 0), int(offset or 0), (msg.value() or b"").decode()))
        return out

    def commit(ends: dict[int, int]) -> None:
        consumer.commit(offsets=[KafkaTP(topic, p, o) for p, o in ends.items()],
                        asynchronous=False)  # fmt: skip

    return GroupMember(name, poll, commit, consumer.close)


class CommitSampler:
    """Reads the group's committed offsets every SAMPLE_EVERY_S (a fresh native consumer of
    the group that never joins: OffsetFetch only)."""

    def __init__(self, bootstrap: Callable[[], str], group: str, topic: str, partitions: int):
        # (start, end, partition, offset, "sample") of each committed offset read back
        self.samples: deque[tuple[float, float, int, int, str]] = deque()
        self._bootstrap, self._group, self._topic = bootstrap, group, topic
        self._partitions = partitions
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            try:
                with Consumer(self._bootstrap(), group_id=self._group,
                              request_timeout_ms=3000, **security.native()) as c:  # fmt: skip
                    for p in range(self._partitions):
                        started = time.monotonic()
                        offset = c.committed(TopicPartition(self._topic, p))
                        if offset is not None:
                            ended = time.monotonic()
                            self.samples.append((started, ended, p, offset, "sample"))
            except Exception:  # a fault under the sampler: sample again later
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
