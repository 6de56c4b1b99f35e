#!/usr/bin/env python3
"""The two doors' client-side codec CPU per request, without a socket (issue 32).

    python bench/bench_doors_codec.py [--loops N]

bench_doors.py counts each door's codec CPU inside its live runs, where a loaded machine
moves the figures; this times the same work in a loop, best of five, in this one thread: the
client building and encoding a request with `Native.encode` / `Kafka.encode` (bench_doors.py),
and decoding an answer into plain values with `Native.decode` / `Kafka.decode`. The answers
are the frames each door's broker side would send (protocol/codec.py's `encode_response`;
protocol/kafka/codec.py's `encode_response` and fetch_response.py's `encode_fetch_response`,
Produce v11 and Fetch v12), with the same RecordBatch v2 bytes inside:

- Produce of 1 record of 100 B (the send() and latency paths) and of one 256 KiB batch (bulk);
- the Produce answer for one partition;
- Fetch of one partition, and its answer carrying 1 MiB of records (poll) or 4 MiB (Spark);
- the broker's side of a 1-record Produce: decoding its frame, encoding its answer.

Prints microseconds per request for each door and their ratio; the records' own decoding is
left out (it is the same for both doors).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_doors import (  # noqa: E402
    KAFKA_FETCH_VERSION,
    KAFKA_PRODUCE_VERSION,
    SIZE,
    Fetch,
    Kafka,
    Native,
    Produce,
    build_batches,
)

from broker.apis import KAFKA_SERVED as SERVED  # noqa: E402
from protocol.api.fetch import FetchPartitionResponse, FetchResponse, FetchTopicResponse  # noqa: E402
from protocol.api.produce import (  # noqa: E402
    ProducePartitionResponse,
    ProduceResponse,
    ProduceTopicResponse,
)
from protocol.batch import build_batch_from_values  # noqa: E402
from protocol.codec import decode_request as native_request  # noqa: E402
from protocol.codec import encode_response as native_response  # noqa: E402
from protocol.kafka import codec as kcodec  # noqa: E402
from protocol.kafka.fetch_response import FetchedPartition, encode_fetch_response  # noqa: E402
from protocol.schema import Records  # noqa: E402
from transport.connection import _Pending  # noqa: E402

TOPIC = "bench"


def best_us(fn: Callable[[], Any], loops: int) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.thread_time_ns()
        for _ in range(loops):
            fn()
        best = min(best, (time.thread_time_ns() - t0) / loops / 1000)
    return best


def _whole(nbytes: int) -> bytes:
    out, size = [], 0
    for b, _ in build_batches(nbytes // (SIZE + 8) + 5000):
        if size + len(b) > nbytes:
            break
        out.append(b)
        size += len(b)
    return b"".join(out)


def native_answers(records: bytes) -> tuple[bytes, bytes]:
    produce = ProduceResponse(
        [ProduceTopicResponse(TOPIC, [ProducePartitionResponse(0, 0, 5, -1, 0)])]
    )
    part = FetchPartitionResponse(0, 0, 10**6, 0, 10**6, Records(records))
    fetch = FetchResponse(0, [FetchTopicResponse(TOPIC, [part])])
    return native_response(1, produce)[4:], native_response(1, fetch)[4:]


def kafka_answers(records: bytes) -> tuple[bytes, bytes]:
    cls = kcodec.response_class(0, KAFKA_PRODUCE_VERSION)
    part = kcodec.make(kcodec.nested(cls, "PartitionProduceResponse"), index=0, error_code=0,
                       base_offset=5, log_append_time=-1, log_start_offset=0, record_errors=(),
                       error_message=None)  # fmt: skip
    topic = kcodec.make(kcodec.nested(cls, "TopicProduceResponse"), name=TOPIC,
                        partition_responses=(part,))  # fmt: skip
    body = kcodec.make(cls, responses=(topic,), throttle_time=0, node_endpoints=())
    header = kcodec.KafkaHeader(0, KAFKA_PRODUCE_VERSION, 1, "bench")
    produce = kcodec.encode_response(kcodec.KafkaRequest(header, None, True), body)[4:]
    fetched: list[tuple[str | uuid.UUID | None, list[FetchedPartition]]] = [
        (TOPIC, [FetchedPartition(0, 0, 10**6, 0, records)])
    ]
    chunks = encode_fetch_response(KAFKA_FETCH_VERSION, b"\x00\x00\x00\x01\x00", fetched)
    fetch = b"".join(bytes(c) for c in chunks)[4:]  # type: ignore[arg-type]
    return produce, fetch


def rows(loops: int) -> list[tuple[str, float, float]]:
    one = build_batch_from_values([b"x" * SIZE], 0)
    bulk = build_batches(300_000)[0][0]
    out = []
    for what, op in (
        ("encode Produce, 1 record", Produce(TOPIC, one)),
        (f"encode Produce, one {len(bulk) // 1024} KiB batch", Produce(TOPIC, bulk)),
        ("encode Fetch, 1 partition", Fetch(TOPIC, 1000, 1 << 20)),
    ):
        n = best_us(functools.partial(Native.encode, op, 1), loops)
        k = best_us(functools.partial(Kafka.encode, op, 1), loops)
        out.append((what, n, k))
    native_kinds = (ProduceResponse, FetchResponse)
    kafka_kinds = ((0, KAFKA_PRODUCE_VERSION), (1, KAFKA_FETCH_VERSION))
    for mib in (1, 4):
        records = _whole(mib << 20)
        nframes, kframes = native_answers(records), kafka_answers(records)
        names = ("decode Produce answer", f"decode Fetch answer, {mib} MiB of records")
        for i, what in enumerate(names):
            if mib == 4 and i == 0:
                continue
            npend = {1: _Pending(None, native_kinds[i])}
            kpend = {1: _Pending(None, kafka_kinds[i])}  # type: ignore[arg-type]
            times = max(loops // (50 * mib * i or 1), 3)  # a Fetch answer takes ~100x longer
            n = best_us(functools.partial(Native.decode, nframes[i], npend), times)
            k = best_us(functools.partial(Kafka.decode, kframes[i], kpend), times)
            out.append((what, n, k))
    return out + broker_rows(loops)


def broker_rows(loops: int) -> list[tuple[str, float, float]]:
    """The broker's side of a 1-record Produce: decoding the request frame, encoding the
    answer (the door's codec alone: no conversion between the doors, no append)."""
    one = build_batch_from_values([b"x" * SIZE], 0)
    nframe = Native.encode(Produce(TOPIC, one), 1)[0][4:]
    kframe = Kafka.encode(Produce(TOPIC, one), 1)[0][4:]
    kreq = kcodec.decode_request(kframe, SERVED)
    kbody = kcodec.decode_response(0, KAFKA_PRODUCE_VERSION, kafka_answers(b"")[0])[1]
    nbody = ProduceResponse(
        [ProduceTopicResponse(TOPIC, [ProducePartitionResponse(0, 0, 5, -1, 0)])]
    )
    return [
        ("broker: decode Produce request, 1 record",
         best_us(functools.partial(native_request, nframe), loops),
         best_us(functools.partial(kcodec.decode_request, kframe, SERVED), loops)),
        ("broker: encode Produce answer",
         best_us(functools.partial(native_response, 1, nbody), loops),
         best_us(functools.partial(kcodec.encode_response, kreq, kbody), loops)),
    ]  # fmt: skip


def render(table: list[tuple[str, float, float]]) -> str:
    lines = ["| codec work | native us | kafka us | kafka / native |",
             "| --- | --- | --- | --- |"]  # fmt: skip
    for what, n, k in table:
        lines.append(f"| {what} | {n:.2f} | {k:.2f} | {k / n:.2f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--loops", type=int, default=2000)
    print(render(rows(ap.parse_args().loops)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
