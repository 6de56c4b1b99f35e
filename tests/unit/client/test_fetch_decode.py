"""The consumer's decoding of a fetched partition: every codec, the fetch position inside the
first batch, control batches skipped, broken records named by partition."""

from __future__ import annotations

import struct

import crc32c
import pytest

from client.fetched import decode_fetched
from client.types import ConsumerRecord, TopicPartition
from protocol import batch

TP = TopicPartition("t", 3)
TS = 1_700_000_000_000


def stamped(raw: bytes, base_offset: int, attributes: int | None = None) -> bytes:
    out = bytearray(raw)
    if attributes is not None:
        struct.pack_into(">h", out, 21, attributes)
        struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[batch.CRC_START :])))
    batch.stamp(out, base_offset, 0)
    return bytes(out)


def test_every_codec_and_the_position_inside_the_first_batch() -> None:
    data, expected = b"", []
    for codec in sorted(batch.CODECS.values()):
        base = 3 * codec
        rows: list[batch.RecordInput] = [
            (b"k%d" % codec, b"v" * 40, [("c", bytes([codec]))], TS + codec),
            (None, None, None, TS - 1),
            (b"", b"x", [], TS),
        ]
        data += stamped(batch.build_batch(rows, codec=codec), base)
        expected += [ConsumerRecord("t", 3, base + i, ts, k, v, list(h) if h else None)
                     for i, (k, v, h, ts) in enumerate(rows)]  # fmt: skip
    records, next_offset = decode_fetched(TP, data, 1)
    assert next_offset == 15
    assert records == expected[1:]  # offset 0 is below the position
    assert all(type(r) is ConsumerRecord for r in records)


def test_control_batches_are_skipped() -> None:
    control = stamped(batch.build_batch([(b"\x00\x00\x00\x00", b"", None, TS)]), 1,
                      attributes=batch.CONTROL_BIT | batch.TRANSACTIONAL_BIT)  # fmt: skip
    data = stamped(batch.build_batch([(None, b"a", None, TS)]), 0) + control
    data += stamped(batch.build_batch([(None, b"b", None, TS)]), 2)
    records, next_offset = decode_fetched(TP, data, 0)
    assert [(r.offset, r.value) for r in records] == [(0, b"a"), (2, b"b")]
    assert next_offset == 3  # the position moves past the marker


def test_records_that_do_not_decompress_name_the_partition() -> None:
    raw = bytearray(batch.build_batch([(None, b"v" * 100, None, TS)], codec=batch.CODEC_ZSTD))
    raw[batch.HEADER_BYTES + 8] ^= 0xFF
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[batch.CRC_START :])))
    with pytest.raises(
        batch.InvalidBatchError, match=r"^CORRUPT_MESSAGE: topic t partition 3: records at offset 0"
    ) as info:
        decode_fetched(TP, bytes(raw), 0)
    assert "decompress" in str(info.value) or "decode" in str(info.value)
