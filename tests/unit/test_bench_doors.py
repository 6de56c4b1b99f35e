"""bench_doors.py measures both doors with the same request: each door's client codec makes a
frame its broker door reads back as the same Produce or Fetch (same records bytes), and reads
its broker door's answers into the same plain values. No sockets (the codecs are sans-I/O)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_doors_codec
from bench_doors import KAFKA_PRODUCE_VERSION, Fetch, Kafka, Native, Produce, build_batches, render
from bench_doors_codec import kafka_answers, native_answers

from broker.apis import KAFKA_SERVED as SERVED
from protocol.api.fetch import FetchResponse
from protocol.api.produce import ProduceResponse
from protocol.codec import decode_request as native_request
from protocol.kafka import codec as kcodec
from transport.connection import _Pending


def test_both_doors_carry_the_same_records_in_a_produce() -> None:
    batch, count = build_batches(1000)[0]
    native = native_request(Native.encode(Produce("t", batch), 7)[0][4:])
    kafka = kcodec.decode_request(Kafka.encode(Produce("t", batch), 7)[0][4:], SERVED)
    assert count == 1000
    assert native.body.topics[0].partitions[0].records == batch
    assert kafka.header.api_version == KAFKA_PRODUCE_VERSION
    assert kafka.body.topic_data[0].partition_data[0].records == batch
    assert (native.header.correlation_id, kafka.header.correlation_id) == (7, 7)


def test_both_doors_ask_the_same_fetch() -> None:
    native = native_request(Native.encode(Fetch("t", 42, 1 << 20), 1)[0][4:]).body
    kafka = kcodec.decode_request(Kafka.encode(Fetch("t", 42, 1 << 20), 1)[0][4:], SERVED).body
    n, k = native.topics[0].partitions[0], kafka.topics[0].partitions[0]
    assert (native.topics[0].name, n.fetch_offset, n.partition_max_bytes) == ("t", 42, 1 << 20)
    assert (kafka.topics[0].topic, k.fetch_offset, k.partition_max_bytes) == ("t", 42, 1 << 20)


def test_both_doors_read_their_answers_into_the_same_values() -> None:
    records = b"".join(b for b, _ in build_batches(3000))
    nproduce, nfetch = native_answers(records)
    kproduce, kfetch = kafka_answers(records)
    native = {1: _Pending(None, ProduceResponse)}, {1: _Pending(None, FetchResponse)}
    kafka = {1: _Pending(None, (0, KAFKA_PRODUCE_VERSION))}, {1: _Pending(None, (1, 12))}  # type: ignore[arg-type]
    assert Native.decode(nproduce, native[0]) == Kafka.decode(kproduce, kafka[0]) == (1, (0, 5))
    expected = (1, (0, 10**6, records))
    assert Native.decode(nfetch, native[1]) == expected
    assert Kafka.decode(bytearray(kfetch), kafka[1]) == expected  # a large frame's own buffer


def test_the_codec_bench_and_the_table_run() -> None:
    rows = bench_doors_codec.rows(1)
    assert len(rows) == 8 and all(n > 0 and k > 0 for _, n, k in rows)
    row = {"records_per_s": 2.0, "MB_per_s": 1.0, "client_cpu_s": 1.0, "broker_cpu_s": 1.0,
           "encode_us": 1.0, "decode_us": 1.0, "case": "bulk", "round": 0}  # fmt: skip
    table = render([dict(row, door="native"), dict(row, door="kafka", records_per_s=1.0)])
    assert "| bulk | records_per_s | 2.000 | 1.000 | 2.00 |" in table
