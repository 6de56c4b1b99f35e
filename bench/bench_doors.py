#!/usr/bin/env python3
"""The native door beside the Kafka door, for our own client's requests (issue 32).

    python bench/bench_doors.py [--messages N] [--rounds R] [--rate R] [--json PATH]
    make bench-doors BENCH_ARGS="--rounds 5"

Our client library speaks only the native msgpack protocol, so this bench asks what it would
gain or lose by speaking Kafka's: one Python process sends the same requests, with the same
pre-built RecordBatch v2 bytes (protocol/batch.py, the client's bulk batch builder), to one
broker through either door, and nothing else differs:

- both doors ride the client's own transport (transport/connection.py's BrokerConnection: the
  same framing reader, in-flight slots and pending map); `DoorConnection` only swaps the codec.
  `NATIVE` builds the client's request dataclasses and encodes them with protocol/codec.py
  (msgpack), decoding answers with `split_response` + `from_wire` (the client now reads
  `response_head` and then `response_body`, with record views for its fetches).
  `KAFKA` builds kio entities with protocol/kafka/codec.py's `make` and `encode_request`, and
  decodes answers with its `decode_response`, as our client would if it spoke Kafka (Produce
  v11 and Fetch v12: the newest that name topics by name, so no topic-id lookup is needed).
- the codec's own CPU is counted per request: `thread_time_ns` around building and encoding
  each request and around decoding each answer into plain values (error code, offsets, the
  records bytes). The records' own decoding (CRC check, the C record walker) is the same for
  both doors and is counted in the client's CPU, not in the codec's.

One one-broker cluster (deploy/cluster.py's LocalCluster, ZooKeeper on this machine), one
partition, RF 1, acks=1, 100 B records. Each round runs every case on both doors back to back,
alternating which goes first (A B, then B A), so both see the same machine state:

bulk      --messages records in 256 KiB batches (the producer's bulk batch size), one batch
          per Produce, five in flight (max_in_flight_per_partition), each door to its own
          topic: records/s, MB/s.
poll      that topic read from offset 0 with one Fetch at a time (1 MiB per partition, as the
          consumer's default), every record made into a ConsumerRecord (client/fetcher.py's
          decode_fetched): the consumer's poll() path.
spark     the same read with 4 MiB fetches (the Spark connector's default) and batches cut into
          segments for the Arrow walker but no record objects: Spark's read path.
produce-rtt  one 1-record Produce at a time at --rate requests/s: round trip p50/p99.
e2e       a long-poll Fetch parked at the log end on a second connection, then a 1-record
          Produce on the first, at --rate / 2: from the Produce's write to the Fetch's answer,
          p50/p99 (end-to-end latency, the broker's delayed-fetch wake-up included).

Every row has client_cpu_s (this process, getrusage) and broker_cpu_s (/proc/<pid>/stat of
the broker) over the case, and encode_us / decode_us: the codec's CPU per request. Medians
over rounds are printed as a Markdown table; every row goes to --json (default
bench/results/doors-<time>.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client.fetched import decode_fetched, scan_fetched  # noqa: E402
from client.types import TopicPartition  # noqa: E402
from protocol.api.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic  # noqa: E402
from protocol.api.produce import (  # noqa: E402
    ProducePartition,
    ProduceRequest,
    ProduceResponse,
    ProduceTopic,
)
from protocol.batch import build_batch_from_values  # noqa: E402
from protocol.codec import encode_request as native_encode  # noqa: E402
from protocol.codec import split_response  # noqa: E402
from protocol.columns import segments  # noqa: E402
from protocol.kafka import codec as kcodec  # noqa: E402
from protocol.schema import Records, from_wire  # noqa: E402
from transport.connection import BrokerConnection, _Pending  # noqa: E402

SIZE = 100
BULK_BATCH_BYTES = 256 * 1024  # client/producer.py's BULK_BATCH_BYTES
IN_FLIGHT = 5  # the producer's max_in_flight_per_partition
POLL_PARTITION_BYTES = 1 << 20  # client/fetcher.py's max_partition_fetch_bytes
SPARK_FETCH_BYTES = 4 << 20  # spark_connector/options.py's fetchMaxBytes
FETCH_MAX_BYTES = 50 << 20
KAFKA_PRODUCE_VERSION = 11
KAFKA_FETCH_VERSION = 12
_CORR = struct.Struct(">i")
CASES = ("bulk", "poll", "spark", "produce-rtt", "e2e")
DOORS = ("native", "kafka")


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# ----- the two codecs, over the same plain operations --------------------------------------


@dataclass
class Produce:
    topic: str
    records: bytes


@dataclass
class Fetch:
    topic: str
    offset: int
    partition_bytes: int
    max_wait_ms: int = 500


# what a door hands back: (error code, base offset) or (error code, high watermark, records)
ProduceResult = tuple[int, int]
FetchResult = tuple[int, int, bytes]


class Native:
    name = "native"

    @staticmethod
    def encode(op: Produce | Fetch, corr: int) -> tuple[bytes, Any]:
        if isinstance(op, Produce):
            parts = [ProducePartition(0, Records(op.records))]
            req: Any = ProduceRequest(1, 30_000, [ProduceTopic(op.topic, parts)])
            return native_encode(req, corr, "bench"), ProduceResponse
        fparts = [FetchPartition(0, op.offset, op.partition_bytes)]
        req = FetchRequest(-1, op.max_wait_ms, 1, FETCH_MAX_BYTES, [FetchTopic(op.topic, fparts)])
        return native_encode(req, corr, "bench"), FetchResponse

    @staticmethod
    def decode(frame: bytes | bytearray, pending: dict[int, _Pending]) -> tuple[int, Any]:
        corr, code, body = split_response(frame)
        p = pending.get(corr)
        if p is None:
            return corr, None
        if code != 0:
            return corr, (code, -1) if p.response_cls is ProduceResponse else (code, -1, b"")
        resp: Any = from_wire(p.response_cls, body)
        part = resp.topics[0].partitions[0]
        if p.response_cls is ProduceResponse:
            return corr, (part.error_code, part.base_offset)
        return corr, (part.error_code, part.high_watermark, part.records or b"")


class Kafka:
    name = "kafka"
    _produce = kcodec.request_class(0, KAFKA_PRODUCE_VERSION)
    _fetch = kcodec.request_class(1, KAFKA_FETCH_VERSION)
    _pp = kcodec.nested(_produce, "PartitionProduceData")
    _pt = kcodec.nested(_produce, "TopicProduceData")
    _fp = kcodec.nested(_fetch, "FetchPartition")
    _ft = kcodec.nested(_fetch, "FetchTopic")

    @classmethod
    def encode(cls, op: Produce | Fetch, corr: int) -> tuple[bytes, Any]:
        make = kcodec.make
        if isinstance(op, Produce):
            part = make(cls._pp, index=0, records=op.records)
            topic = make(cls._pt, name=op.topic, partition_data=(part,))
            body = make(cls._produce, transactional_id=None, acks=1, timeout=30_000,
                        topic_data=(topic,))  # fmt: skip
            frame = kcodec.encode_request(0, KAFKA_PRODUCE_VERSION, corr, body, "bench")
            return frame, (0, KAFKA_PRODUCE_VERSION)
        fpart = make(cls._fp, partition=0, current_leader_epoch=-1, fetch_offset=op.offset,
                     last_fetched_epoch=-1, log_start_offset=-1,
                     partition_max_bytes=op.partition_bytes)  # fmt: skip
        ftopic = make(cls._ft, topic=op.topic, partitions=(fpart,))
        body = make(cls._fetch, cluster_id=None, replica_id=-1, max_wait=op.max_wait_ms,
                    min_bytes=1, max_bytes=FETCH_MAX_BYTES, isolation_level=0, session_id=0,
                    session_epoch=-1, topics=(ftopic,), forgotten_topics_data=(),
                    rack_id="")  # fmt: skip
        return kcodec.encode_request(1, KAFKA_FETCH_VERSION, corr, body, "bench"), (1, 12)

    @staticmethod
    def decode(frame: bytes | bytearray, pending: dict[int, _Pending]) -> tuple[int, Any]:
        (corr,) = _CORR.unpack_from(frame)
        p = pending.get(corr)
        if p is None:
            return corr, None
        key, version = cast(tuple[int, int], p.response_cls)
        # kio reads only read-only buffers; a large frame is handed out as its own bytearray
        data: Any = frame if type(frame) is bytes else memoryview(frame).toreadonly()
        _, resp = kcodec.decode_response(key, version, data)
        if key == 0:
            part = resp.responses[0].partition_responses[0]
            return corr, (int(part.error_code), int(part.base_offset))
        if resp.error_code:
            return corr, (int(resp.error_code), -1, b"")
        part = resp.responses[0].partitions[0]
        return corr, (int(part.error_code), int(part.high_watermark), part.records or b"")


Door = type[Native] | type[Kafka]


@dataclass
class CodecClock:
    """CPU nanoseconds spent in a door's codec (this thread), and the requests it did."""

    encode_ns: int = 0
    decode_ns: int = 0
    requests: int = 0

    def per_request_us(self) -> tuple[float, float]:
        n = max(self.requests, 1)
        return round(self.encode_ns / n / 1000, 2), round(self.decode_ns / n / 1000, 2)


class DoorConnection(BrokerConnection):
    """The client's BrokerConnection with its codec swapped for a door's (`use`)."""

    door: Door = Native
    clock: CodecClock  # set by `use`, which every connection of this bench goes through

    def use(self, door: Door, clock: CodecClock) -> DoorConnection:
        self.door, self.clock = door, clock
        return self

    async def call(self, op: Produce | Fetch, timeout_ms: float = 30_000) -> Any:
        self._check_open()
        await self._slots.take()
        try:
            await self.wait_writable()
        except BaseException:
            self._slots.give()
            raise
        future = self._write(op, type(op))
        return await self._within(future, type(op).__name__, timeout_ms)

    def _write(self, request: Any, response_cls: type, answer: Any = None) -> Any:
        corr = self._next_correlation_id()
        t0 = time.thread_time_ns()
        frame, kind = self.door.encode(request, corr)
        self.clock.encode_ns += time.thread_time_ns() - t0
        self.clock.requests += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[corr] = _Pending(future, kind)
        future.add_done_callback(lambda _f: self._done(corr))
        assert self._transport is not None
        self._transport.write(frame)
        return future

    def _on_frame(self, frame: bytes | bytearray) -> None:
        t0 = time.thread_time_ns()
        corr, result = self.door.decode(frame, self._pending)
        self.clock.decode_ns += time.thread_time_ns() - t0
        pending = self._pending.pop(corr, None)
        if pending is not None and result is not None and not pending.future.done():
            pending.future.set_result(result)


# ----- the cases -----------------------------------------------------------------------------


def build_batches(n: int) -> list[tuple[bytes, int]]:
    """n records of SIZE bytes as (RecordBatch v2 bytes, record count), BULK_BATCH_BYTES each."""
    per = max(BULK_BATCH_BYTES // (SIZE + 8), 1)  # ~8 bytes of record framing each
    value = b"x" * SIZE
    now = int(time.time() * 1000)
    out = []
    for start in range(0, n, per):
        count = min(per, n - start)
        out.append((build_batch_from_values([value] * count, now), count))
    return out


async def case_bulk(conn: DoorConnection, topic: str, batches: list[tuple[bytes, int]]) -> dict:
    t0 = time.perf_counter()
    results = await asyncio.gather(*(conn.call(Produce(topic, b)) for b, _ in batches))
    seconds = time.perf_counter() - t0
    errors = sum(1 for code, _ in results if code)
    n = sum(c for _, c in batches)
    size = sum(len(b) for b, _ in batches)
    return {"records": n, "seconds": seconds, "records_per_s": n / seconds,
            "MB_per_s": size / seconds / 1e6, "errors": errors}  # fmt: skip


async def case_read(conn: DoorConnection, topic: str, n: int, spark: bool) -> dict:
    tp = TopicPartition(topic, 0)
    offset, got, size, errors = 0, 0, 0, 0
    t0 = time.perf_counter()
    while got < n:
        want = SPARK_FETCH_BYTES if spark else POLL_PARTITION_BYTES
        code, _hw, data = await conn.call(Fetch(topic, offset, want))
        if code:
            errors += 1
            break
        size += len(data)
        if spark:
            batches, next_offset = scan_fetched(data, offset)
            segments(data, batches, offset)  # what Spark's walker is handed; same per door
            got += sum(h.last_offset_delta + 1 for _, h in batches)
        else:
            records, next_offset = decode_fetched(tp, data, offset)
            got += len(records)
        offset = next_offset
    seconds = time.perf_counter() - t0
    return {"records": got, "seconds": seconds, "records_per_s": got / seconds,
            "MB_per_s": size / seconds / 1e6, "errors": errors}  # fmt: skip


def _percentiles(samples_ms: list[float]) -> dict:
    samples_ms.sort()
    at = lambda q: samples_ms[min(int(q * len(samples_ms)), len(samples_ms) - 1)]  # noqa: E731
    return {"p50_ms": round(at(0.50), 3), "p99_ms": round(at(0.99), 3), "samples": len(samples_ms)}


async def case_rtt(conn: DoorConnection, topic: str, count: int, rate: int) -> dict:
    batch = build_batch_from_values([b"x" * SIZE], int(time.time() * 1000))
    samples: list[float] = []
    start = time.perf_counter()
    for i in range(count):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        t0 = time.perf_counter()
        await conn.call(Produce(topic, batch))
        samples.append((time.perf_counter() - t0) * 1000)
    return _percentiles(samples)


async def case_e2e(
    producer: DoorConnection, consumer: DoorConnection, topic: str, count: int, rate: int
) -> dict:
    batch = build_batch_from_values([b"x" * SIZE], int(time.time() * 1000))
    code, offset, _ = await consumer.call(Fetch(topic, 0, POLL_PARTITION_BYTES, 0))
    samples: list[float] = []
    start = time.perf_counter()
    for i in range(count):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        fetched = asyncio.ensure_future(consumer.call(Fetch(topic, offset, POLL_PARTITION_BYTES)))
        await asyncio.sleep(0.001)  # let the fetch park at the log end
        t0 = time.perf_counter()
        await producer.call(Produce(topic, batch))
        code, _hw, data = await fetched
        while not data and not code:  # woken before the record landed: fetch again
            code, _hw, data = await consumer.call(Fetch(topic, offset, POLL_PARTITION_BYTES))
        samples.append((time.perf_counter() - t0) * 1000)
        offset += 1
    return _percentiles(samples)


# ----- rounds --------------------------------------------------------------------------------


def _self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Target:
    native: tuple[str, int]
    kafka: tuple[str, int]
    broker_pid: int


async def _connect(door: Door, target: Target, clock: CodecClock) -> DoorConnection:
    host, port = target.native if door is Native else target.kafka
    conn = await DoorConnection.connect(host, port, client_id="bench", max_in_flight=IN_FLIGHT)
    assert isinstance(conn, DoorConnection)
    return conn.use(door, clock)


async def run_case(
    case: str, door: Door, target: Target, rnd: int, args: argparse.Namespace,
    batches: list[tuple[bytes, int]],
) -> dict:  # fmt: skip
    clock = CodecClock()
    conn = await _connect(door, target, clock)
    second = await _connect(door, target, clock) if case == "e2e" else None
    topic = f"{'bulk' if case in ('bulk', 'poll', 'spark') else case}-{door.name}-{rnd}"
    cpu0, broker0 = _self_cpu_s(), _proc_cpu_s(target.broker_pid)
    try:
        if case == "bulk":
            row = await case_bulk(conn, topic, batches)
        elif case in ("poll", "spark"):
            row = await case_read(conn, topic, args.messages, case == "spark")
        elif case == "produce-rtt":
            row = await case_rtt(conn, topic, args.latency_requests, args.rate)
        else:
            assert second is not None
            row = await case_e2e(conn, second, topic, args.latency_requests // 2, args.rate // 2)
    finally:
        await conn.close()
        if second is not None:
            await second.close()
    enc, dec = clock.per_request_us()
    row.update(case=case, door=door.name, round=rnd, requests=clock.requests,
               encode_us=enc, decode_us=dec,
               client_cpu_s=round(_self_cpu_s() - cpu0, 3),
               broker_cpu_s=round(_proc_cpu_s(target.broker_pid) - broker0, 3))  # fmt: skip
    return row


def run(args: argparse.Namespace, report: Callable[[dict], None] = lambda _r: None) -> list[dict]:
    """Every case on both doors, `args.rounds` times, on a one-broker cluster of its own."""
    from client import Admin, NewTopic
    from deploy.cluster import LocalCluster

    batches = build_batches(args.messages)
    tmp = Path(tempfile.mkdtemp(prefix="odradek-doors-"))
    cluster = LocalCluster(tmp / "cluster", brokers=1, progress=log)
    rows: list[dict] = []
    try:
        bootstrap = cluster.up()
        status = cluster.status()[0]
        host = bootstrap.split(",")[0].rsplit(":", 1)[0]
        target = Target((host, status.port), (host, status.kafka_port), status.pid)
        topics = [f"{c}-{d}-{r}" for r in range(args.rounds) for d in ("native", "kafka")
                  for c in ("bulk", "produce-rtt", "e2e")]  # fmt: skip
        with Admin(bootstrap) as admin:
            admin.create_topics([NewTopic(t, 1, 1) for t in topics])
        for rnd in range(args.rounds):
            doors: list[Door] = [Native, Kafka] if rnd % 2 == 0 else [Kafka, Native]
            for case in args.cases:
                for door in doors:
                    row = asyncio.run(run_case(case, door, target, rnd, args, batches))
                    rows.append(row)
                    report(row)
    finally:
        cluster.down(purge=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


# ----- the table -----------------------------------------------------------------------------


def _median(rows: list[dict], key: str) -> float:
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else float("nan")


def render(rows: list[dict]) -> str:
    """Medians over rounds, per case and door, and native / kafka."""
    out = ["| case | figure | native | kafka | native / kafka | client CPU s (n / k) "
           "| broker CPU s (n / k) | codec us/req enc+dec (n / k) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for case in CASES:
        by = {d: [r for r in rows if (r["case"], r["door"]) == (case, d)] for d in DOORS}
        if not by["native"] or not by["kafka"]:
            continue
        rate = "records_per_s" in by["native"][0]
        figures = ["records_per_s", "MB_per_s"] if rate else ["p50_ms", "p99_ms"]
        for fig in figures:
            n, k = _median(by["native"], fig), _median(by["kafka"], fig)
            cpu = " / ".join(f"{_median(by[d], 'client_cpu_s'):.2f}" for d in by)
            broker = " / ".join(f"{_median(by[d], 'broker_cpu_s'):.2f}" for d in by)
            codec = " / ".join(
                f"{_median(by[d], 'encode_us') + _median(by[d], 'decode_us'):.1f}" for d in by
            )
            out.append(f"| {case} | {fig} | {n:,.3f} | {k:,.3f} | {n / k:.2f} | {cpu} | {broker} "
                       f"| {codec} |")  # fmt: skip
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--messages", type=int, default=500_000, help="bulk and read runs")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    ap.add_argument("--rate", type=int, default=1000, help="produce-rtt requests/s (e2e: half)")
    ap.add_argument("--latency-requests", type=int, default=2000, help="produce-rtt (e2e: half)")
    ap.add_argument("--cases", type=lambda s: [c for c in s.split(",") if c], default=list(CASES),
                    help=f"comma list of {','.join(CASES)}")  # fmt: skip
    ap.add_argument("--json", type=Path, help="where to write the rows")
    return ap


def main() -> int:
    args = build_parser().parse_args()
    started, load_before = time.time(), os.getloadavg()
    rows = run(args, report=lambda r: log(json.dumps(r)))
    out = args.json or ROOT / "bench" / "results" / time.strftime("doors-%Y%m%d-%H%M%S.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    text = render(rows)
    doc = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
           "seconds": round(time.time() - started, 1), "cpus": os.cpu_count(),
           "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
           "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
           "table": text, "results": rows}  # fmt: skip
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(text)
    log(f"load average before {load_before}, after {os.getloadavg()}; results: {out}")
    return 1 if any(r.get("errors") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
