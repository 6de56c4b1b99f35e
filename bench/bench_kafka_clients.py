#!/usr/bin/env python3
"""Kafka clients through odradek's Kafka listener: confluent-kafka and kafka-python.

Each case runs in its own process, like `odradek bench`, and prints one JSON line shaped like
its lines (system, mode, api, messages, size, seconds, msgs_per_s, MiB_per_s) plus the client
settings used, so bench_cluster.py puts them in the same table:

    python bench/bench_kafka_clients.py produce|consume --client confluent|kafka-python \
        --bootstrap HOST:PORT --topic T --num-records N [--record-size B]

produce  the plain loop a user writes: confluent `produce()` + `poll(0)` per record, then
         `flush()`; kafka-python `send()` per record, then `flush()`. Timed from the first
         record to the end of the flush. acks=1, the throughput settings below (stated in the
         output). confluent counts delivery errors (a delivery callback), kafka-python checks
         the last send's future; the consume that follows must read every record back.
consume  from the earliest offset by assignment (no group) until N records are read: confluent
         `consume(num_messages=...)` in a loop, kafka-python `poll()`. Timed from the first call.

`run_cases()` (used by bench_cluster.py) creates a 1-partition RF 1 topic per client, size and
run with odradek's own Admin, then runs produce and consume in child processes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import Any

CLIENTS = ("confluent", "kafka-python")
SYSTEM = {"confluent": "confluent-kafka", "kafka-python": "kafka-python"}
API = {  # the calls each loop makes, for the table
    ("confluent", "produce"): "per-record",
    ("confluent", "consume"): "consume(10000)",
    ("kafka-python", "produce"): "per-record",
    ("kafka-python", "consume"): "poll",
}
CONSUME_TIMEOUT_S = 120.0
CHILD_TIMEOUT_S = 600.0

# Settings a user would pick for throughput; everything else is the client's default.
CONFLUENT_PRODUCER: dict[str, Any] = {
    "acks": "1",
    "linger.ms": 5,
    "batch.size": 1 << 20,
    "queue.buffering.max.messages": 10_000_000,
    "compression.type": "none",
    # delivery reports for failed records only: the callback below still counts every error,
    # and poll(0) does not call into Python once per record (1.1x to 2.3x faster, two runs)
    "delivery.report.only.error": True,
}
CONFLUENT_CONSUMER: dict[str, Any] = {
    "group.id": "odradek-bench",  # required by librdkafka; nothing joins or commits (assign)
    "enable.auto.commit": False,
    "enable.partition.eof": False,
    # librdkafka (>= 2.4) waits this long before fetching again once its local queue has passed
    # queued.min.messages (default 1000 ms): here that stalled the loop ~1 s every ~250k records
    # (about 200k records/s); its documentation says to lower it for that.
    "fetch.queue.backoff.ms": 10,
}
CONFLUENT_CONSUME_BATCH = 10_000  # consume(num_messages=...)
KAFKA_PYTHON_PRODUCER: dict[str, Any] = {
    "acks": 1,
    "enable_idempotence": False,  # kafka-python 3 defaults to idempotence, which needs acks=all
    "linger_ms": 5,
    "batch_size": 1 << 20,
}
KAFKA_PYTHON_CONSUMER: dict[str, Any] = {
    "enable_auto_commit": False,
    "max_poll_records": 10_000,
}


def settings(client: str, mode: str) -> dict[str, Any]:
    if client == "confluent":
        return dict(CONFLUENT_PRODUCER if mode == "produce" else CONFLUENT_CONSUMER)
    return dict(KAFKA_PYTHON_PRODUCER if mode == "produce" else KAFKA_PYTHON_CONSUMER)


# ----- one case, in this process ---------------------------------------------------------------


def produce_confluent(bootstrap: str, topic: str, n: int, size: int) -> float:
    from confluent_kafka import Producer

    errors: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    p = Producer({"bootstrap.servers": bootstrap, "on_delivery": on_delivery, **CONFLUENT_PRODUCER})
    value = b"x" * size
    p.list_topics(topic, timeout=10)  # metadata before the timer (not needed, but like below)
    produce, poll = p.produce, p.poll
    start = time.perf_counter()
    for _ in range(n):
        try:
            produce(topic, value)
        except BufferError:  # the local queue is full: serve delivery reports, then retry
            poll(0.1)
            produce(topic, value)
        poll(0)
    left = p.flush(CONSUME_TIMEOUT_S)
    elapsed = time.perf_counter() - start
    if left or errors:
        raise RuntimeError(f"{left} records undelivered, {len(errors)} failed: {errors[:3]}")
    return elapsed


def produce_kafka_python(bootstrap: str, topic: str, n: int, size: int) -> float:
    from kafka import KafkaProducer  # type: ignore[import-untyped]

    p = KafkaProducer(bootstrap_servers=bootstrap, **KAFKA_PYTHON_PRODUCER)
    try:
        value = b"x" * size
        p.partitions_for(topic)  # metadata before the timer: the first send() would wait on it
        send = p.send
        start = time.perf_counter()
        for _ in range(n - 1):
            send(topic, value)
        last = send(topic, value)
        p.flush(timeout=CONSUME_TIMEOUT_S)
        elapsed = time.perf_counter() - start
        last.get(timeout=1)  # raises the last record's error; the consume reads them all back
    finally:
        p.close(timeout=5)
    return elapsed


def consume_confluent(bootstrap: str, topic: str, n: int) -> tuple[float, int, int]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, **CONFLUENT_CONSUMER})
    got = nbytes = 0
    try:
        c.list_topics(topic, timeout=10)  # the leader known before assign: else ~0.5 s waiting
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        start = time.perf_counter()
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        while got < n and time.monotonic() < deadline:
            # consume() waits for num_messages or the timeout: never ask for more than are left
            msgs = c.consume(num_messages=min(CONFLUENT_CONSUME_BATCH, n - got), timeout=1.0)
            if any(map(Message.error, msgs)):
                raise RuntimeError(next(m.error() for m in msgs if m.error()))
            got += len(msgs)
            nbytes += sum(map(len, filter(None, map(Message.value, msgs))))  # C loops
        elapsed = time.perf_counter() - start
    finally:
        c.close()
    return elapsed, got, nbytes


def consume_kafka_python(bootstrap: str, topic: str, n: int) -> tuple[float, int, int]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, **KAFKA_PYTHON_CONSUMER)
    got = nbytes = 0
    value = attrgetter("value")
    try:
        tp = TopicPartition(topic, 0)
        c.partitions_for_topic(topic)  # metadata before the timer, as for confluent
        c.assign([tp])
        c.seek_to_beginning(tp)
        start = time.perf_counter()
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        while got < n and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=1000).values():
                got += len(records)
                nbytes += sum(map(len, map(value, records)))
        elapsed = time.perf_counter() - start
    finally:
        c.close()
    return elapsed, got, nbytes


def run_case(client: str, mode: str, bootstrap: str, topic: str, n: int, size: int) -> dict:
    """One measurement in this process, as a JSON-ready dict."""
    if mode == "produce":
        fn = produce_confluent if client == "confluent" else produce_kafka_python
        elapsed, got = fn(bootstrap, topic, n, size), n
    else:
        consume = consume_confluent if client == "confluent" else consume_kafka_python
        elapsed, got, nbytes = consume(bootstrap, topic, n)
        if got < n:
            raise RuntimeError(f"only {got} of {n} records arrived within {CONSUME_TIMEOUT_S} s")
        size = nbytes // max(got, 1)
    return {
        "system": SYSTEM[client],
        "mode": mode,
        "api": API[client, mode],
        "messages": got,
        "size": size,
        "partitions": 1,
        "acks": "1",
        "seconds": round(elapsed, 3),
        "msgs_per_s": round(got / elapsed, 1),
        "MiB_per_s": round(got * size / elapsed / 2**20, 2),
        "MB_per_s": round(got * size / elapsed / 1e6, 2),
        "settings": settings(client, mode),
    }


# ----- the cases, each in a child process -------------------------------------------------------


def _child(client: str, mode: str, bootstrap: str, topic: str, n: int, size: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), mode, "--client", client,
           "--bootstrap", bootstrap, "--topic", topic, "--num-records", str(n),
           "--record-size", str(size)]  # fmt: skip
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        out = None
    if out is None or out.returncode != 0:
        why = "timed out" if out is None else out.stderr.strip()[-500:]
        return {"system": SYSTEM[client], "mode": mode, "size": size, "error": why}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def run_cases(
    bootstrap: str,
    kafka_bootstrap: str,
    counts: dict[str, int],
    repeat: int = 1,
    sizes: tuple[int, ...] = (100, 1024),
    report: Callable[[dict], None] = lambda _r: None,
) -> list[dict]:
    """Produce then consume for each client and size, `repeat` times; `counts` is records per
    client at 100 B (1 KiB cases send a quarter as many)."""
    from client import Admin, NewTopic

    rows: list[dict] = []
    for client in CLIENTS:
        for size in sizes:
            n = counts[client] if size <= 100 else max(counts[client] // 4, 1000)
            for i in range(repeat):
                topic = f"kafka-{client}-s{size}-{i}"
                with Admin(bootstrap) as admin:
                    admin.create_topics([NewTopic(topic, 1, 1)])
                for mode in ("produce", "consume"):
                    row = _child(client, mode, kafka_bootstrap, topic, n, size)
                    rows.append(row)
                    report(row)
                    if "error" in row:
                        break
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("mode", choices=["produce", "consume"])
    ap.add_argument("--client", choices=CLIENTS, required=True)
    ap.add_argument("--bootstrap", required=True, help="the Kafka listeners (bootstrap.servers)")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--num-records", type=int, default=1_000_000)
    ap.add_argument("--record-size", type=int, default=100)
    a = ap.parse_args()
    row = run_case(a.client, a.mode, a.bootstrap, a.topic, a.num_records, a.record_size)
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
