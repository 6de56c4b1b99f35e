"""Golden bytes: the frame, envelope and record batch layouts, spelled out byte by byte.

If one of these fails, the wire format changed: every peer and every stored segment would
disagree with this code. Change the expected bytes only with a format version bump.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import crc32c
import msgpack
import pytest

from protocol import batch
from protocol.api.fetch import FetchPartitionResponse, FetchResponse, FetchTopicResponse
from protocol.api.metadata import MetadataRequest
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
from protocol.codec import (
    FileSlice,
    decode_request,
    decode_response,
    encode_error_response,
    encode_request,
    encode_response,
    encode_response_chunks,
    split_response,
)
from protocol.errors import NotLeaderForPartitionError
from protocol.framing import FrameDecoder, encode_frame
from protocol.schema import Records, to_wire


def unhex(annotated: str) -> bytes:
    """Hex bytes, one group per line, with `#` comments."""
    return bytes.fromhex("".join(line.split("#")[0] for line in annotated.splitlines()))


# ----- frames and envelopes ---------------------------------------------------------------

METADATA_FRAME = unhex("""
    00 00 00 12               # frame length: 18 bytes follow
    95                        # array(5): [api_key, api_version, correlation_id, client_id, body]
    03                        # api_key 3: Metadata
    00                        # api_version 0
    07                        # correlation_id 7
    a3 63 6c 69               # client_id "cli"
    92                        # body: MetadataRequest as array(2)
    91 a6 6f 72 64 65 72 73   #   topics: ["orders"]
    c2                        #   allow_auto_topic_creation: false
""")

PRODUCE_FRAME = unhex("""
    00 00 00 18               # frame length: 24 bytes follow
    95                        # array(5)
    00                        # api_key 0: Produce
    00                        # api_version 0
    cd 01 02                  # correlation_id 258 (uint16)
    c0                        # client_id nil
    94                        # body: ProduceRequest as array(4)
    ff                        #   acks -1
    cd 75 30                  #   timeout_ms 30000
    91                        #   topics: array(1)
    92 a1 74                  #     ProduceTopic: name "t"
    91                        #     partitions: array(1)
    92 00                     #       ProducePartition: partition 0
    c4 02 01 02               #       records: bin8(2) 01 02
    c0                        #   transactional_id nil
""")

METADATA_REQUEST = MetadataRequest(topics=["orders"], allow_auto_topic_creation=False)
PRODUCE_REQUEST = ProduceRequest(
    acks=-1,
    timeout_ms=30000,
    topics=[ProduceTopic("t", [ProducePartition(0, Records(b"\x01\x02"))])],
)


def test_metadata_request_frame_golden() -> None:
    assert encode_request(METADATA_REQUEST, correlation_id=7, client_id="cli") == METADATA_FRAME
    request = decode_request(METADATA_FRAME[4:])
    assert (request.header.api_key, request.header.api_version) == (3, 0)
    assert (request.header.correlation_id, request.header.client_id) == (7, "cli")
    assert request.spec.name == "Metadata"
    assert request.body == METADATA_REQUEST


def test_produce_request_frame_golden() -> None:
    assert encode_request(PRODUCE_REQUEST, correlation_id=258) == PRODUCE_FRAME
    request = decode_request(PRODUCE_FRAME[4:])
    assert request.header.correlation_id == 258
    assert request.header.client_id is None
    assert request.body == PRODUCE_REQUEST


def test_frame_decoder_splits_golden_frames() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(METADATA_FRAME + PRODUCE_FRAME) == [METADATA_FRAME[4:], PRODUCE_FRAME[4:]]
    assert decoder.buffered_bytes == 0
    assert encode_frame(b"\xab") == unhex("00 00 00 01 ab")


def test_error_response_golden() -> None:
    frame = encode_error_response(correlation_id=9, error_code=6)
    assert frame == unhex("00 00 00 04  93 09 06 c0")  # [9, 6, nil]
    assert split_response(frame[4:]) == (9, 6, None)
    with pytest.raises(NotLeaderForPartitionError):
        decode_response(frame[4:], FetchResponse)


# ----- record batch -----------------------------------------------------------------------

T0_MS = 1_700_000_000_000  # 0x0000018bcfe56800
BATCH_RECORDS: list[batch.RecordInput] = [
    (b"k1", b"v1", [("h", b"x")], T0_MS),
    (None, b"v2", None, T0_MS + 5),
]
BATCH_CRC = 0x97F4442A
BATCH_HEADER = unhex("""
    00 00 00 00 00 00 00 00   #  0 base_offset 0
    00 00 00 49               #  8 batch_length 73 = 49 header bytes after it + 24 of records
    ff ff ff ff               # 12 partition_leader_epoch -1 (not stamped yet)
    02                        # 16 magic 2
    97 f4 44 2a               # 17 crc: CRC32C of bytes [21, 85)
    00 00                     # 21 attributes: codec none, CreateTime
    00 00 00 01               # 23 last_offset_delta 1
    00 00 01 8b cf e5 68 00   # 27 first_timestamp 1_700_000_000_000
    00 00 01 8b cf e5 68 05   # 35 max_timestamp 1_700_000_000_005
    ff ff ff ff ff ff ff ff   # 43 producer_id -1
    ff ff                     # 51 producer_epoch -1
    ff ff ff ff               # 53 base_sequence -1
    00 00 00 02               # 57 record_count 2
""")
BATCH_RECORDS_BYTES = unhex("""
    1c                        # 61 record 0: length 14 (varint: zigzag 28)
    00                        #    attributes
    00                        #    timestamp_delta 0
    00                        #    offset_delta 0
    04 6b 31                  #    key: length 2, b"k1"
    04 76 31                  #    value: length 2, b"v1"
    02                        #    header count 1
    02 68 02 78               #    header: key length 1 "h", value length 1 b"x"
    10                        # 76 record 1: length 8 (zigzag 16)
    00                        #    attributes
    0a                        #    timestamp_delta 5 (zigzag 10)
    02                        #    offset_delta 1
    01                        #    key: length -1 (zigzag 1), null
    04 76 32                  #    value: length 2, b"v2"
    00                        #    header count 0
""")


def test_crc32c_is_castagnoli() -> None:
    assert crc32c.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


def test_batch_golden() -> None:
    built = batch.build_batch(BATCH_RECORDS)
    assert len(BATCH_HEADER) == batch.HEADER_BYTES == 61
    assert built == BATCH_HEADER + BATCH_RECORDS_BYTES
    assert crc32c.crc32c(built[batch.CRC_START :]) == BATCH_CRC
    header = batch.validate(built)
    assert header.crc == BATCH_CRC
    assert (header.base_offset, header.size, header.record_count) == (0, len(built), 2)
    assert (header.first_timestamp, header.max_timestamp) == (T0_MS, T0_MS + 5)
    assert header.next_offset == 2


def test_batch_golden_matches_an_independent_kafka_implementation() -> None:
    """kafka-python's pure-Python v2 builder writes the same bytes (it leaves the leader epoch
    at 0 where a producer's batch here says -1, unstamped: outside the CRC either way)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for i, (key, value, headers, ts) in enumerate(BATCH_RECORDS):
        builder.append(i, ts, key, value, list(headers or []))
    theirs, ours = bytes(builder.build()), BATCH_HEADER + BATCH_RECORDS_BYTES
    assert theirs[12:16] == bytes(4)  # partition_leader_epoch 0
    assert theirs[:12] + theirs[16:] == ours[:12] + ours[16:]


def test_stamp_changes_offset_and_epoch_and_keeps_crc() -> None:
    stamped = bytearray(BATCH_HEADER + BATCH_RECORDS_BYTES)
    batch.stamp(stamped, base_offset=0x0102030405060708, leader_epoch=7)
    assert stamped[0:8] == unhex("01 02 03 04 05 06 07 08")
    assert stamped[12:16] == unhex("00 00 00 07")
    assert stamped[8:12] == BATCH_HEADER[8:12]  # batch_length untouched
    assert stamped[16:] == (BATCH_HEADER + BATCH_RECORDS_BYTES)[16:]  # CRC and its span
    header = batch.validate(stamped)
    assert (header.base_offset, header.partition_leader_epoch, header.crc) == (
        0x0102030405060708,
        7,
        BATCH_CRC,
    )
    _, records = batch.decode_records(bytes(stamped))
    assert [r.offset for r in records] == [0x0102030405060708, 0x0102030405060709]


def test_stamp_at_position_in_a_larger_buffer() -> None:
    one = BATCH_HEADER + BATCH_RECORDS_BYTES
    buf = bytearray(one + one)
    batch.stamp(buf, base_offset=10, leader_epoch=3, pos=len(one))
    assert buf[: len(one)] == one
    assert [(pos, h.base_offset) for pos, h in batch.iter_batches(buf)] == [(0, 0), (85, 10)]


def test_gzip_batch_is_a_gzip_stream() -> None:
    built = batch.build_batch(BATCH_RECORDS, codec=batch.CODEC_GZIP)
    header = batch.validate(built)
    assert header.attributes == batch.CODEC_GZIP
    payload = built[batch.HEADER_BYTES :]
    assert payload[:2] == b"\x1f\x8b"  # gzip magic
    assert gzip.decompress(payload) == BATCH_RECORDS_BYTES
    _, records = batch.decode_records(built)
    assert [(r.key, r.value, r.headers) for r in records] == [
        (b"k1", b"v1", [("h", b"x")]),
        (None, b"v2", None),
    ]


# ----- responses with file slices ---------------------------------------------------------


@pytest.fixture
def segment_fd(tmp_path: Path) -> Iterator[tuple[int, bytes]]:
    data = bytes(range(256)) * 300  # 76,800 bytes: room for bin8, bin16 and bin32 slices
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd, data
    finally:
        os.close(fd)


def fetch_response(records: object) -> FetchResponse:
    partition = FetchPartitionResponse(0, 0, 10, 0, 12, records)  # type: ignore[arg-type]
    return FetchResponse(0, [FetchTopicResponse("t", [partition, partition])])


@pytest.mark.parametrize("length", [0, 1, 255, 256, 65535, 65536, 70000])
def test_file_slice_chunks_equal_in_memory_response(
    segment_fd: tuple[int, bytes], length: int
) -> None:
    fd, data = segment_fd
    position = 100
    file_slice = FileSlice(fd, position, length)
    chunks = encode_response_chunks(42, fetch_response(file_slice))
    assert sum(1 for c in chunks if isinstance(c, FileSlice)) == 2
    wire = b"".join(
        os.pread(fd, c.length, c.position) if isinstance(c, FileSlice) else c for c in chunks
    )
    in_memory = data[position : position + length]
    expected = fetch_response(in_memory)
    assert wire == encode_response(42, expected)
    assert msgpack.unpackb(wire[4:]) == [42, 0, to_wire(expected)]
    assert FrameDecoder().feed(wire) == [wire[4:]]
    assert decode_response(wire[4:], FetchResponse) == (42, expected)


def test_chunks_without_slices_are_one_frame() -> None:
    response = fetch_response(b"abc")
    chunks = encode_response_chunks(5, response)
    assert all(isinstance(c, bytes) for c in chunks)
    assert b"".join(c for c in chunks if isinstance(c, bytes)) == encode_response(5, response)


@dataclass(frozen=True, slots=True)
class SlicesInAMap:
    by_name: dict[str, Records]
    tail: list[Records | None]


def test_file_slices_inside_maps_and_optionals(segment_fd: tuple[int, bytes]) -> None:
    fd, data = segment_fd
    sliced = SlicesInAMap(
        {"a": FileSlice(fd, 0, 3), "b": Records(b"mem")},  # type: ignore[dict-item]
        [None, FileSlice(fd, 10, 300)],  # type: ignore[list-item]
    )
    chunks = encode_response_chunks(1, sliced)
    wire = b"".join(
        os.pread(fd, c.length, c.position) if isinstance(c, FileSlice) else c for c in chunks
    )
    in_memory = SlicesInAMap(
        {"a": Records(data[0:3]), "b": Records(b"mem")}, [None, Records(data[10:310])]
    )
    assert wire == encode_response(1, in_memory)
    assert decode_response(wire[4:], SlicesInAMap) == (1, in_memory)
