"""Kafka's RecordBatch v2 against other implementations: batches built here read there, and
theirs read here, for every codec; the compiled codec is really the compiled one.

kafka-python's record classes are pure Python and were written apart from aiokafka's Cython
ones (which this module uses): agreeing with both is agreeing with Kafka's format, not with
ourselves.
"""

from __future__ import annotations

import array
import importlib.machinery
import struct
import sys

import crc32c
import pytest
from aiokafka.record._crecords import DefaultRecordBatchBuilder as AiokafkaBuilder
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

from protocol import batch
from protocol.errors import UsageError

CODECS = sorted(batch.CODECS.values())
NAMES = [name for name, _ in sorted(batch.CODECS.items(), key=lambda item: item[1])]
T0 = 1_700_000_000_000
RECORDS: list[batch.RecordInput] = [
    (b"key", b"value", [("trace", b"abc"), ("empty", b""), ("null", None)], T0),
    (None, b"no key", None, T0 + 7),
    (b"no value", None, [("h", b"x")], T0 - 3),  # timestamps need not be ordered
    (None, None, None, T0 + 1),
    (b"", b"", None, T0),  # empty is not null
    (b"k" * 300, bytes(range(256)) * 40, [("\u00e9t\u00e9", b"\x00" * 200)], T0 + 2**20),
]


def expected(records: list[batch.RecordInput], base: int = 0) -> list[tuple[object, ...]]:
    return [(base + i, ts, k, v, list(h) if h else None) for i, (k, v, h, ts) in enumerate(records)]


def as_tuples(records: list[batch.Record]) -> list[tuple[object, ...]]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


def test_the_record_codec_is_compiled() -> None:
    codec = batch._codec()
    for cls in (codec.Builder, codec.Reader):
        module = sys.modules[cls.__module__]
        assert isinstance(module.__loader__, importlib.machinery.ExtensionFileLoader), module
        assert module.__name__ == "aiokafka.record._crecords.default_records"


@pytest.mark.parametrize("codec", CODECS, ids=NAMES)
def test_every_codec_builds_and_decodes(codec: int) -> None:
    built = batch.build_batch(RECORDS, base_offset=40, codec=codec)
    header, records = batch.decode_records(built)
    assert (header.codec, header.record_count, header.magic) == (codec, len(RECORDS), 2)
    assert (header.first_timestamp, header.max_timestamp) == (T0, T0 + 2**20)
    assert as_tuples(records) == expected(RECORDS, base=40)
    if codec != batch.CODEC_NONE:
        assert len(built) < len(batch.build_batch(RECORDS))  # the records are compressed


@pytest.mark.parametrize("codec", CODECS, ids=NAMES)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    built = batch.build_batch(RECORDS, codec=codec, producer_id=7, producer_epoch=1,
                              base_sequence=100)  # fmt: skip
    theirs = KafkaPythonBatch(built)
    assert theirs.validate_crc()
    assert (theirs.compression_type, theirs.producer_id, theirs.base_sequence) == (codec, 7, 100)
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers or None) for r in theirs]
    assert got == expected(RECORDS)


@pytest.mark.parametrize("library", ["kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS, ids=NAMES)
def test_batches_built_by_kafka_clients_validate_and_decode(library: str, codec: int) -> None:
    builder_class = KafkaPythonBuilder if library == "kafka-python" else AiokafkaBuilder
    builder = builder_class(2, codec, 0, 12, 3, 0, 1 << 30)
    for i, (key, value, headers, ts) in enumerate(RECORDS):
        builder.append(i, ts, key, value, list(headers or []))
    theirs = bytes(builder.build())
    header = batch.validate(theirs)
    batch.check_client_batch(header)
    assert (header.codec, header.producer_id, header.producer_epoch) == (codec, 12, 3)
    assert as_tuples(batch.decode_records(theirs)[1]) == expected(RECORDS)
    assert [r.value for r in batch.decode_all(theirs + theirs)] == [r[1] for r in RECORDS] * 2


def test_a_transactional_batch_from_a_kafka_client_is_accepted_on_produce() -> None:
    builder = AiokafkaBuilder(2, 0, 1, 5, 0, 0, 1 << 20)  # is_transactional
    builder.append(0, T0, None, b"v", [])
    header = batch.validate(bytes(builder.build()))
    assert header.attributes & batch.TRANSACTIONAL_BIT
    batch.check_client_batch(header)  # the log checks its producer state (KIP-98)


def test_log_append_time_records_carry_the_max_timestamp() -> None:
    built = bytearray(batch.build_batch(RECORDS[:3]))
    attributes = struct.unpack_from(">h", built, 21)[0] | batch.TIMESTAMP_TYPE_BIT
    struct.pack_into(">h", built, 21, attributes)
    struct.pack_into(">I", built, 17, crc32c.crc32c(bytes(built[batch.CRC_START :])))
    _, records = batch.decode_records(bytes(built))
    assert [r.timestamp for r in records] == [T0 + 7] * 3


@pytest.mark.parametrize("stamps", [[-1, 5, -1], [-1], [-1, -1], [5, -1], [0, -(2**40), 2**40]])
def test_unusual_timestamps_round_trip(stamps: list[int]) -> None:
    """-1 first is a special case inside aiokafka's builder (it means "no record yet")."""
    records: list[batch.RecordInput] = [(None, b"v", None, ts) for ts in stamps]
    header, got = batch.decode_records(batch.build_batch(records))
    assert [r.timestamp for r in got] == stamps
    assert (header.first_timestamp, header.max_timestamp) == (stamps[0], max(stamps))


def test_timestamp_spread_beyond_int64_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="timestamps"):
        batch.build_batch([(None, b"a", None, -(2**62)), (None, b"b", None, 2**62)])
    with pytest.raises(UsageError):
        batch.build_batch([(None, b"a", [("\ud800", None)], 0)])  # not encodable as UTF-8


def test_decoding_from_memory_that_is_not_bytes_copies_it_first() -> None:
    built = batch.build_batch(RECORDS)
    words = array.array("B", built)  # a buffer CPython does not NUL-terminate
    for buf in (memoryview(words), memoryview(bytearray(built)), memoryview(built)[0:]):
        assert as_tuples(batch.decode_records(buf)[1]) == expected(RECORDS)


def test_decode_columns_at_a_position_and_sliced() -> None:
    one, two = batch.build_batch(RECORDS[:2]), bytearray(batch.build_batch(RECORDS[2:]))
    batch.stamp(two, base_offset=2, leader_epoch=0)
    data = one + bytes(two)
    (pos_a, a), (pos_b, b) = batch.iter_batches(data)
    columns = batch.decode_columns(data, pos_b, b)
    assert columns.offsets == [2, 3, 4, 5] and columns.keys[0] == b"no value"
    assert columns.headers[1] is None and columns.headers[0] == [("h", b"x")]
    assert columns.sliced(1, 3).offsets == [3, 4]
    assert batch.decode_columns(data, pos_a, a).values == [b"value", b"no key"]


_BYTES = st.none() | st.binary(max_size=300)
_HEADERS = st.none() | st.lists(st.tuples(st.text(max_size=20), _BYTES), max_size=4)
_RECORDS = st.lists(
    st.tuples(_BYTES, _BYTES, _HEADERS, st.integers(-(2**45), 2**45)), min_size=1, max_size=40
)


@settings(max_examples=200, deadline=None)
@given(records=_RECORDS)
def test_our_c_encoder_writes_the_bytes_aiokafkas_builder_writes(
    records: list[batch.RecordInput],
) -> None:
    """protocol/_encoder.c against aiokafka's Cython builder, byte for byte (the header apart:
    aiokafka rebases a first timestamp of -1, so the header is compared through decoding)."""
    ours = batch.build_batch(records)
    builder = AiokafkaBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
    for i, (key, value, headers, ts) in enumerate(records):
        builder.append(i, ts, key, value, list(headers or []))
    theirs = bytes(builder.build())
    if records[0][3] != -1:
        assert ours[batch.HEADER_BYTES :] == theirs[batch.HEADER_BYTES :]
    assert as_tuples(batch.decode_records(ours)[1]) == expected(records)


@pytest.mark.parametrize(
    "record",
    [
        (None, "text", None, T0),  # a str value
        (1, b"v", None, T0),  # an int key
        (None, b"v", [("k", "text")], T0),  # a str header value
        (None, b"v", [(b"k", b"v")], T0),  # a bytes header key
        (None, b"v", [("k",)], T0),  # not a pair
        (None, b"v", None, "soon"),  # a str timestamp
    ],
)
def test_records_of_the_wrong_types_are_usage_errors(record: batch.RecordInput) -> None:
    with pytest.raises(UsageError):
        batch.build_batch([(None, b"fine", None, T0), record])


def test_buffers_other_than_bytes_are_encoded_as_their_bytes() -> None:
    records: list[batch.RecordInput] = [
        (memoryview(b"key"), bytearray(b"value"), [("h", memoryview(b"hv"))], T0)  # type: ignore[list-item]
    ]
    assert as_tuples(batch.decode_records(batch.build_batch(records))[1]) == [
        (0, T0, b"key", b"value", [("h", b"hv")])
    ]
