"""Request builders shared by the broker's socket-level tests."""

from __future__ import annotations

import struct

import crc32c

from protocol.api.fetch import CONSUMER_REPLICA_ID, FetchPartition, FetchRequest, FetchTopic
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
from protocol.batch import CRC_START, build_batch_from_values, stamp
from protocol.schema import Records

TS_MS = 1_700_000_000_000


def batch(count: int = 10, size: int = 100, ts_ms: int = TS_MS, fill: bytes = b"v") -> bytes:
    return build_batch_from_values([fill * size] * count, ts_ms)


def with_attributes(data: bytes, bits: int) -> bytes:
    """`data` with these attribute bits set and its CRC made right again."""
    buf = bytearray(data)
    struct.pack_into(">h", buf, 21, struct.unpack_from(">h", buf, 21)[0] | bits)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[CRC_START:])))
    return bytes(buf)


def stamped(data: bytes, base_offset: int, leader_epoch: int = 0) -> bytes:
    buf = bytearray(data)
    stamp(buf, base_offset, leader_epoch)
    return bytes(buf)


def produce(topic: str, partition: int, data: bytes, acks: int = 1) -> ProduceRequest:
    return ProduceRequest(
        acks, 5000, [ProduceTopic(topic, [ProducePartition(partition, Records(data))])]
    )


def fetch(
    topic: str,
    offsets: dict[int, int],
    partition_max_bytes: int = 1 << 20,
    max_bytes: int = 50 << 20,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
) -> FetchRequest:
    parts = [FetchPartition(p, o, partition_max_bytes) for p, o in offsets.items()]
    return FetchRequest(
        CONSUMER_REPLICA_ID, max_wait_ms, min_bytes, max_bytes, [FetchTopic(topic, parts)]
    )
