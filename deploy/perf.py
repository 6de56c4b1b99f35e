"""`odradek bench produce|consume|latency`: load generators modelled on kafka-producer-perf-test.

Each run prints one JSON line, shaped like the peers' harness in ../shared/peers so the
benchmark script can put the figures side by side:

    produce  sends --num-records records of --record-size bytes to a topic with acks=1 (or as
             asked), through the bulk API (`send_batch`) or per-record `send()`; reports
             records/s and MB/s from the first send to the last acknowledgement.
    consume  reads --num-records records from the start of a topic with one consumer
             assigned all its partitions; reports records/s and MB/s.
    latency  a consumer in a second process waits on the topic while this process sends one
             record at a time at --rate records/s on an absolute schedule; each value carries
             its send time (CLOCK_MONOTONIC ns, shared by both processes); reports p50/p99/max
             end-to-end latency and the produce round-trip. A few warm-up records go first,
             acknowledged one by one and skipped by the consumer, so the connection set-up
             is not counted (it would delay the first ~100 records of the fixed schedule).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import operator
import struct
import time
from collections import deque
from pathlib import Path
from typing import Any

from client import AsyncConsumer, AsyncProducer, TopicPartition
from client.admin import AsyncAdmin
from protocol.errors import UsageError

_TS = struct.Struct(">q")
_WARMUP = -1  # the send time carried by warm-up records, which the latency consumer skips
WARMUP_RECORDS = 20
_VALUE = operator.attrgetter("value")


def percentile(sorted_values: list[float], pct: float) -> float | None:
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, round(pct / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[k]


# --command-config of the run (`odradek bench MODE --command-config FILE`): read once per
# process (the latency consumer's own process reads it again: an SSLContext does not pickle)
_command_config: Path | None = None
_security_cache: dict[str, Any] | None = None


def _security() -> dict[str, Any]:
    """The clients' TLS/SASL keyword arguments ({} without --command-config)."""
    global _security_cache
    if _security_cache is None:
        from client.command_config import load_command_config

        path = _command_config
        _security_cache = {} if path is None else load_command_config(path).client_options()
    return _security_cache


async def _partitions(bootstrap: str, topic: str) -> list[int]:
    admin = AsyncAdmin(bootstrap, **_security())
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    for desc in described:
        if desc.name == topic and desc.error_code == 0:
            return [p.partition for p in desc.partitions]
    raise UsageError(f"topic {topic!r} does not exist")


async def produce(
    bootstrap: str,
    topic: str,
    num_records: int,
    record_size: int,
    acks: str = "1",
    bulk: bool = True,
    chunk_records: int = 10_000,
) -> dict[str, Any]:
    """Send num_records of record_size bytes; time from the first send to the last ack."""
    value = b"x" * record_size
    producer = AsyncProducer(
        bootstrap, acks=acks, linger_ms=5, batch_size=256 * 1024, buffer_memory=64 * 1024 * 1024,
        **_security(),
    )  # fmt: skip
    await producer.start()
    try:
        start = time.perf_counter()
        window: deque[list[Any]] = deque()  # per chunk, not yet checked
        sent = 0
        while sent < num_records:
            n = min(chunk_records, num_records - sent)
            if bulk:
                window.append([await producer.send_batch(topic, [value] * n)])
            else:
                send = producer.send
                window.append([await send(topic, value) for _ in range(n)])
            sent += n
            while window and window[0][-1].done() and all(f.done() for f in window[0]):
                await _check(window.popleft())
        await producer.flush()
        while window:
            await _check(window.popleft())
        elapsed = time.perf_counter() - start
    finally:
        await producer.close()
    return _throughput("produce", "bulk" if bulk else "send", num_records, record_size, elapsed)


async def _check(futures: list[asyncio.Future[Any]]) -> None:
    """Every send was acknowledged: `result()` raises a record's error.

    Futures are checked a chunk at a time as chunks complete, like the per-record callback of
    kafka-producer-perf-test, so the generator holds a bounded window of them, not millions.
    After a flush every record future is done; a `send_batch` future (a gather) may be one
    loop turn behind, so it is awaited.
    """
    for fut in futures:
        if not fut.done():
            await fut
        fut.result()


async def consume(bootstrap: str, topic: str, num_records: int) -> dict[str, Any]:
    """Read num_records from the beginning of every partition of the topic."""
    parts = await _partitions(bootstrap, topic)
    consumer = AsyncConsumer(
        bootstrap, auto_offset_reset="earliest", max_poll_records=100_000, **_security()
    )
    consumer.assign([TopicPartition(topic, p) for p in parts])
    got = 0
    nbytes = 0
    deadline = time.monotonic() + 300
    try:
        start = time.perf_counter()
        while got < num_records and time.monotonic() < deadline:
            batch = await consumer.poll(timeout_ms=1000)
            for records in batch.values():
                got += len(records)
                nbytes += sum(map(len, filter(None, map(_VALUE, records))))  # C loops
        elapsed = time.perf_counter() - start
    finally:
        await consumer.close()
    if got < num_records:
        raise UsageError(f"only {got} of {num_records} records arrived within 300 s")
    size = nbytes // max(got, 1)
    return _throughput("consume", "poll", got, size, elapsed)


def _throughput(mode: str, api: str, n: int, size: int, elapsed: float) -> dict[str, Any]:
    return {
        "system": "odradek",
        "mode": mode,
        "api": api,
        "messages": n,
        "size": size,
        "seconds": round(elapsed, 3),
        "msgs_per_s": round(n / elapsed, 1),
        "MiB_per_s": round(n * size / elapsed / 2**20, 2),
    }


def _latency_consumer(
    bootstrap: str, topic: str, partitions: list[int], n: int, ready: Any, out: Any,
    command_config: Path | None = None,
) -> None:  # fmt: skip
    global _command_config
    _command_config = command_config

    async def run() -> list[float]:
        consumer = AsyncConsumer(
            bootstrap, auto_offset_reset="latest", fetch_max_wait_ms=500, max_poll_records=1000,
            **_security(),
        )  # fmt: skip
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        for p in partitions:
            await consumer.position(TopicPartition(topic, p))  # pin "latest" before sends start
        ready.set()
        lat: list[float] = []
        deadline = time.monotonic() + 120
        try:
            while len(lat) < n and time.monotonic() < deadline:
                batch = await consumer.poll(timeout_ms=500)
                now = time.monotonic_ns()
                for records in batch.values():
                    for r in records:
                        (sent_ns,) = _TS.unpack_from(r.value or bytes(8))
                        if sent_ns != _WARMUP:
                            lat.append((now - sent_ns) / 1e6)
        finally:
            await consumer.close()
        return lat

    import uvloop

    out.put(uvloop.run(run()))


async def latency(
    bootstrap: str, topic: str, num_records: int, rate: int, record_size: int
) -> dict[str, Any]:
    parts = await _partitions(bootstrap, topic)
    ctx = mp.get_context("spawn")
    ready, out = ctx.Event(), ctx.Queue()
    proc = ctx.Process(
        target=_latency_consumer,
        args=(bootstrap, topic, parts, num_records, ready, out, _command_config),
    )
    proc.start()
    try:
        if not await asyncio.to_thread(ready.wait, 60):
            raise UsageError("the latency consumer did not start within 60 s")
        acks = await _send_paced(bootstrap, topic, num_records, rate, record_size)
        lat = sorted(await asyncio.to_thread(out.get, True, 180))
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
    ack_sorted = sorted(acks)
    return {
        "system": "odradek",
        "mode": "latency",
        "messages": num_records,
        "received": len(lat),
        "rate": rate,
        "size": record_size,
        "e2e_ms_p50": _r(percentile(lat, 50)),
        "e2e_ms_p99": _r(percentile(lat, 99)),
        "e2e_ms_max": _r(lat[-1] if lat else None),
        "ack_ms_p50": _r(percentile(ack_sorted, 50)),
        "ack_ms_p99": _r(percentile(ack_sorted, 99)),
    }


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


async def _send_paced(
    bootstrap: str, topic: str, n: int, rate: int, record_size: int
) -> list[float]:
    producer = AsyncProducer(bootstrap, acks="1", linger_ms=0, **_security())
    await producer.start()
    pad = b"x" * max(0, record_size - _TS.size)
    acks: list[float] = []
    try:
        # Warm-up records (not measured): the first send opens the connection to the leader
        # and the broker's first append touches cold code; the schedule starts after them.
        for _ in range(WARMUP_RECORDS):
            await (await producer.send(topic, _TS.pack(_WARMUP) + pad, partition=0))
        start = time.monotonic()
        for i in range(n):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            sent_ns = time.monotonic_ns()
            fut = await producer.send(topic, _TS.pack(sent_ns) + pad, partition=0)
            fut.add_done_callback(_ack_timer(acks, sent_ns))
        await producer.flush()
    finally:
        await producer.close()
    return acks


def _ack_timer(acks: list[float], sent_ns: int) -> Any:
    def done(_fut: asyncio.Future[Any]) -> None:
        acks.append((time.monotonic_ns() - sent_ns) / 1e6)

    return done


def run(args: Any) -> int:
    """Entry point for the CLI's `bench` subcommand (args from deploy/cli.py)."""
    import uvloop

    global _command_config, _security_cache
    _command_config, _security_cache = getattr(args, "command_config", None), None
    _security()  # a bad file is one UsageError line before anything runs

    if args.bench_mode == "produce":
        coro = produce(
            args.bootstrap, args.topic, args.num_records, args.record_size, args.acks,
            bulk=not args.per_record,
        )  # fmt: skip
    elif args.bench_mode == "consume":
        coro = consume(args.bootstrap, args.topic, args.num_records)
    else:
        coro = latency(args.bootstrap, args.topic, args.num_records, args.rate, args.record_size)
    result = uvloop.run(coro)
    print(json.dumps(result), flush=True)
    return 0


def add_arguments(parser: Any) -> None:
    """The `bench` subcommand's arguments (deploy/cli.py calls this)."""
    sub = parser.add_subparsers(dest="bench_mode", required=True, metavar="MODE")
    for mode, text in (
        ("produce", "records/s for one producer (kafka-producer-perf-test style)"),
        ("consume", "records/s for one consumer reading a topic from the beginning"),
        ("latency", "end-to-end latency at a fixed rate"),
    ):
        p = sub.add_parser(mode, help=text, description=text)
        p.add_argument("--topic", required=True)
        p.add_argument("--num-records", type=_positive, default=1_000_000)
        p.add_argument("--record-size", type=_positive, default=100)
        if mode == "produce":
            p.add_argument("--acks", choices=["0", "1", "all"], default="1")
            p.add_argument(
                "--per-record", action="store_true", help="use send() per record, not send_batch"
            )
        if mode == "latency":
            p.add_argument("--rate", type=_positive, default=1000, help="records per second")


def _positive(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} must be positive")
    return value
