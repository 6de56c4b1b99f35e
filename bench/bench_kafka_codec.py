"""What the Kafka door's codec costs per request (kio decode/encode, and the hand-laid Fetch
response), so it can be weighed against the per-record work it stays off.

    python bench/bench_kafka_codec.py

Prints microseconds per request for each case. Records inside a Produce request are one opaque
`bytes` field to kio: the cost does not grow with the number of records, only with partitions.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

from protocol.kafka import codec
from protocol.kafka.codec import KafkaRequest, encode_request, make, nested
from protocol.kafka.fetch_response import FetchedPartition, encode_fetch_response
from protocol.kafka.versions import FETCH, METADATA, PRODUCE, SERVED


def _time(fn: Callable[[], Any], n: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def _produce_frame(partitions: int) -> bytes:
    cls = codec.request_class(PRODUCE, 9)
    parts = tuple(
        make(nested(cls, "PartitionProduceData"), index=i, records=b"r" * 16384)
        for i in range(partitions)
    )
    topic = make(nested(cls, "TopicProduceData"), name="bench", partition_data=parts)
    body = make(cls, transactional_id=None, acks=1, timeout=30000, topic_data=(topic,))
    return encode_request(PRODUCE, 9, 1, body)[4:]


def _fetch_frame(partitions: int) -> bytes:
    cls = codec.request_class(FETCH, 11)
    parts = tuple(
        make(
            nested(cls, "FetchPartition"),
            partition=i,
            current_leader_epoch=-1,
            fetch_offset=1000,
            log_start_offset=-1,
            partition_max_bytes=1 << 20,
        )
        for i in range(partitions)
    )
    topic = make(nested(cls, "FetchTopic"), topic="bench", partitions=parts)
    body = make(cls, replica_id=-1, max_wait=500, min_bytes=1, max_bytes=50 << 20,
                isolation_level=0, session_id=0, session_epoch=-1, topics=(topic,),
                forgotten_topics_data=(), rack_id="")  # fmt: skip
    return encode_request(FETCH, 11, 1, body)[4:]


def _produce_response(request: KafkaRequest, partitions: int) -> Any:
    cls = codec.response_class(PRODUCE, 9)
    parts = tuple(
        make(
            nested(cls, "PartitionProduceResponse"),
            index=i,
            error_code=0,
            base_offset=5,
            log_append_time=-1,
            log_start_offset=0,
            record_errors=(),
            error_message=None,
        )
        for i in range(partitions)
    )
    topic = make(nested(cls, "TopicProduceResponse"), name="bench", partition_responses=parts)
    return make(cls, responses=(topic,), throttle_time=0)


def main() -> None:
    n = 20_000
    print(f"{'case':<48} {'us/request':>10}")
    for partitions in (1, 10):
        frame = _produce_frame(partitions)
        request = codec.decode_request(frame, SERVED)
        response = _produce_response(request, partitions)
        fetch = _fetch_frame(partitions)
        header = struct.pack(">i", 1)
        fetched = [
            ("bench", [FetchedPartition(i, 0, 100, 0, b"x" * 100) for i in range(partitions)])
        ]
        cases: list[tuple[str, Callable[[], Any]]] = [
            (f"decode Produce v9, {partitions} partition(s) x 16 KiB",
             lambda f=frame: codec.decode_request(f, SERVED)),
            (f"encode Produce v9 response, {partitions} partition(s)",
             lambda r=request, b=response: codec.encode_response(r, b)),
            (f"decode Fetch v11, {partitions} partition(s)",
             lambda f=fetch: codec.decode_request(f, SERVED)),
            (f"encode Fetch v11 response, {partitions} partition(s)",
             lambda t=fetched, h=header: encode_fetch_response(11, h, t)),
        ]  # fmt: skip
        for name, fn in cases:
            print(f"{name:<48} {_time(fn, n):>10.2f}")
    meta = codec.request_class(METADATA, 9)
    frame = encode_request(METADATA, 9, 1, make(meta, topics=None, allow_auto_topic_creation=False,
                           include_cluster_authorized_operations=False,
                           include_topic_authorized_operations=False))[4:]  # fmt: skip
    print(f"{'decode Metadata v9 (all topics)':<48} "
          f"{_time(lambda: codec.decode_request(frame, SERVED), n):>10.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
