"""Batch validation: each header check the broker relies on, one test each, named by its error.

The CRC covers bytes [21, end): a field in that span is changed and the CRC recomputed
(`reseal`), so that the check under test, not the CRC, is what refuses the batch.
"""

from __future__ import annotations

import struct

import crc32c
import pytest

from protocol import batch
from protocol.errors import InvalidRecordError, MessageTooLargeError, UsageError

ONE = batch.build_batch([(b"k", b"v", None, 1000), (None, b"w", [("h", None)], 1001)])


def with_field(fmt: str, at: int, value: int, seal: bool = True) -> bytes:
    out = bytearray(ONE)
    struct.pack_into(fmt, out, at, value)
    if seal:
        struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[batch.CRC_START :])))
    return bytes(out)


def test_valid_batch_passes() -> None:
    header = batch.validate(ONE)
    assert header.size == len(ONE)
    assert batch.peek_offset_and_length(ONE) == (0, len(ONE) - 12)


@pytest.mark.parametrize("magic", [0, 1, 3, -1])
def test_wrong_magic(magic: int) -> None:
    assert ONE[16] == batch.MAGIC == 2
    with pytest.raises(batch.InvalidBatchError, match="magic"):
        batch.validate(with_field(">b", 16, magic, seal=False))


@pytest.mark.parametrize("length", [-1, 0, 48])
def test_length_shorter_than_header(length: int) -> None:
    bad = with_field(">i", 8, length, seal=False)
    with pytest.raises(batch.InvalidBatchError, match="shorter than its header"):
        batch.validate(bad)
    for check_crc in (True, False):  # a scan cannot move on: it must not loop or go back
        with pytest.raises(batch.InvalidBatchError, match="too short"):
            list(batch.iter_batches(bad, check_crc=check_crc))


def test_length_past_the_buffer() -> None:
    with pytest.raises(batch.InvalidBatchError, match="runs past the end"):
        batch.validate(ONE[:-1])
    assert list(batch.iter_batches(ONE[:-1])) == []  # a torn tail is not yielded


def test_above_max_batch_bytes_is_message_too_large() -> None:
    batch.validate(ONE, max_batch_bytes=len(ONE))
    with pytest.raises(MessageTooLargeError):
        batch.validate(ONE, max_batch_bytes=len(ONE) - 1)


@pytest.mark.parametrize(
    ("at", "fmt", "value"),
    [(57, ">i", 3), (57, ">i", -1), (23, ">i", 0), (23, ">i", -1)],
)
def test_record_count_and_last_offset_delta_disagree(at: int, fmt: str, value: int) -> None:
    """More records than the offsets the batch spans, or a negative count or span."""
    with pytest.raises(batch.InvalidBatchError, match="record count"):
        batch.validate(with_field(fmt, at, value))


@pytest.mark.parametrize(("count", "last_delta"), [(0, 1), (1, 1), (0, 0), (2, 9)])
def test_compacted_counts_validate_but_are_refused_on_produce(count: int, last_delta: int) -> None:
    """The log cleaner leaves fewer records than the batch spans (none: an empty batch kept for
    its producer's state): a stored batch, read by followers, recovery and consumers. A
    producer never writes one: check_client_batch (the produce path's) refuses it."""
    out = bytearray(ONE)
    struct.pack_into(">i", out, 23, last_delta)
    struct.pack_into(">i", out, 57, count)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[batch.CRC_START :])))
    header = batch.validate(bytes(out))
    assert (header.record_count, header.next_offset) == (count, last_delta + 1)
    assert list(batch.iter_batches(bytes(out))) == [(0, header)]
    with pytest.raises(InvalidRecordError, match="record count") as info:
        batch.check_client_batch(header)
    assert info.value.name == "INVALID_RECORD"


def test_delete_horizon_bit_is_known_but_refused_on_produce() -> None:
    """KIP-534: the cleaner sets bit 6 and puts the delete horizon, later than the records'
    timestamps, in first_timestamp: max_timestamp may then be below it."""
    out = bytearray(with_field(">h", 21, batch.DELETE_HORIZON_BIT))
    struct.pack_into(">q", out, 27, 5000)  # the horizon, after max_timestamp 1001
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[batch.CRC_START :])))
    header = batch.validate(bytes(out))
    assert header.first_timestamp > header.max_timestamp
    with pytest.raises(InvalidRecordError, match="delete horizon"):
        batch.check_client_batch(header)


@pytest.mark.parametrize("attributes", [0x80, 0x100, 0x05, 0x07, 0x0F, -1])
def test_unknown_attributes(attributes: int) -> None:
    with pytest.raises(batch.InvalidBatchError, match="attributes"):
        batch.validate(with_field(">h", 21, attributes))


def test_log_append_time_bit_is_known() -> None:
    batch.validate(with_field(">h", 21, batch.TIMESTAMP_TYPE_BIT))


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("flags", [0, 0x08, 0x10, 0x20, 0x38, 0x40, 0x78])
def test_kafka_attribute_bits_are_known(codec: int, flags: int) -> None:
    """Kafka's bits 0-6 (codec 0-4, timestamp type, transactional, control, delete horizon)
    all validate."""
    header = batch.validate(with_field(">h", 21, codec | flags))
    assert (header.codec, header.attributes) == (codec, codec | flags)


def test_check_client_batch_refuses_control_and_anonymous_transactional_batches() -> None:
    batch.check_client_batch(batch.validate(ONE))
    batch.check_client_batch(batch.validate(with_field(">h", 21, batch.TIMESTAMP_TYPE_BIT | 4)))
    for bits, message in [
        (batch.TRANSACTIONAL_BIT, "transactional batch needs a producer id"),
        (batch.CONTROL_BIT, "control batches"),
        (batch.TRANSACTIONAL_BIT | batch.CONTROL_BIT, "control batches"),
    ]:
        header = batch.validate(with_field(">h", 21, bits))  # valid on a follower's path
        with pytest.raises(InvalidRecordError, match=message) as info:
            batch.check_client_batch(header)
        assert info.value.code == 87 and info.value.name == "INVALID_RECORD"
        assert not info.value.retriable


def test_max_timestamp_before_first() -> None:
    with pytest.raises(batch.InvalidBatchError, match="timestamp"):
        batch.validate(with_field(">q", 35, 999))


@pytest.mark.parametrize("at", [17, 21, 40, 60, 61, len(ONE) - 1])
def test_any_flip_in_the_crc_span_fails_the_crc(at: int) -> None:
    bad = bytearray(ONE)
    bad[at] ^= 0x01
    with pytest.raises(batch.InvalidBatchError):
        batch.validate(bytes(bad))


def test_crc_names_both_values() -> None:
    bad = bytearray(ONE)
    bad[-1] ^= 0x80
    with pytest.raises(batch.InvalidBatchError, match="does not match"):
        batch.validate(bytes(bad))


def test_short_buffers() -> None:
    for n in (0, 11, 12, 60):
        with pytest.raises(batch.InvalidBatchError):
            batch.validate(ONE[:n])
        with pytest.raises(batch.InvalidBatchError):
            batch.read_header(ONE[:n])
    with pytest.raises(batch.InvalidBatchError):
        batch.peek_offset_and_length(ONE[:11])
    with pytest.raises(batch.InvalidBatchError):
        batch.read_header(ONE, pos=-1)


def test_build_batch_refuses_bad_input() -> None:
    with pytest.raises(UsageError):
        batch.build_batch([])
    with pytest.raises(UsageError):
        batch.build_batch([(b"k", b"v", None, 0)], codec=5)
    with pytest.raises(UsageError):
        batch.build_batch([(b"k", b"v", None, 2**63)])
    with pytest.raises(UsageError):
        batch.build_batch([(b"k", b"v", None, "soon")])  # type: ignore[list-item]
    with pytest.raises(UsageError):
        batch.build_batch([(b"k", object(), None, 0)])  # type: ignore[list-item]
    with pytest.raises(UsageError):
        batch.build_batch_from_values([], 0)
    with pytest.raises(UsageError):
        batch.build_batch_from_values([b"v"], 0, codec=9)


def test_timestamps_out_of_order_round_trip() -> None:
    built = batch.build_batch([(None, b"a", None, 50), (None, b"b", None, 10)])
    header, records = batch.decode_records(built)
    assert (header.first_timestamp, header.max_timestamp) == (50, 50)
    assert [r.timestamp for r in records] == [50, 10]
