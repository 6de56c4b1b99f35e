"""Appends (leader and follower), reads by offset, and bad input that must write nothing."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest

from broker.log.appends import UnexpectedAppendOffsetError
from broker.log.log import Log
from protocol.batch import (
    CONTROL_BIT,
    CRC_START,
    HEADER,
    TRANSACTIONAL_BIT,
    InvalidBatchError,
    build_batch_from_values,
    iter_batches,
    stamp,
)
from protocol.errors import KafkaStorageError, MessageTooLargeError, OffsetOutOfRangeError

from .conftest import T0, OpenLog, batch, read_values, slice_bytes


def test_leader_append_stamps_offsets_and_epoch(open_log: OpenLog) -> None:
    log = open_log()
    first = log.append_as_leader(batch([b"a", b"b", b"c"]), leader_epoch=3)
    second = log.append_as_leader(batch([b"d"], timestamp_ms=T0 + 5), leader_epoch=3)
    assert (first.base_offset, first.last_offset, first.record_count) == (0, 2, 3)
    assert (second.base_offset, second.last_offset, second.max_timestamp) == (3, 3, T0 + 5)
    assert log.log_end_offset == 4
    data = slice_bytes(log.read(0, 1 << 20))
    headers = [h for _, h in iter_batches(data)]  # CRC still valid after stamping
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 3), (3, 3)]
    assert read_values(log) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]
    assert log.size_bytes == first.size_bytes + second.size_bytes


def test_read_returns_whole_batches_within_max_bytes(open_log: OpenLog) -> None:
    log = open_log(index_interval_bytes=0)
    sizes = [log.append_as_leader(batch([bytes([i]) * 50] * 2), 0).size_bytes for i in range(10)]
    result = log.read(5, sizes[2] + sizes[3] + 1)  # offset 5 is in batch 2 (offsets 4, 5)
    assert (result.first_offset, result.next_offset, result.size_bytes) == (4, 8, sizes[2] * 2)
    # At least one batch even when it does not fit, unless told otherwise.
    assert log.read(5, 1).next_offset == 6
    empty = log.read(5, 1, min_one_batch=False)
    assert empty.slice is None and empty.size_bytes == 0 and empty.next_offset == 5


def test_read_stops_below_max_offset(open_log: OpenLog) -> None:
    log = open_log(index_interval_bytes=0)
    for i in range(5):
        log.append_as_leader(batch([bytes([i])] * 3), 0)  # batches of offsets 3i..3i+2
    assert log.read(0, 1 << 20, max_offset=9).next_offset == 9
    assert log.read(0, 1 << 20, max_offset=8).next_offset == 6  # batch 6..8 reaches 8
    assert log.read(7, 1 << 20, max_offset=8).slice is None
    assert log.read(9, 1 << 20, max_offset=9).slice is None


def test_read_at_end_is_empty_and_past_end_is_out_of_range(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch([b"x"]), 0)
    end = log.read(1, 100)
    assert end.slice is None and (end.first_offset, end.next_offset) == (1, 1)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_read_with_small_batches_and_sparse_index(open_log: OpenLog) -> None:
    log = open_log(index_interval_bytes=300)
    for i in range(200):
        log.append_as_leader(batch([str(i).encode()]), 0)
    for offset in (0, 1, 57, 133, 199):
        result = log.read(offset, 250)
        assert result.first_offset == offset
        values = read_values(log, offset)
        assert values[0] == (offset, str(offset).encode())
    assert [v for _, v in read_values(log)] == [str(i).encode() for i in range(200)]


def test_a_read_never_spans_two_segments(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=400)
    for i in range(20):
        log.append_as_leader(batch([bytes([i]) * 40]), 0)
    assert log.segments.count > 1
    second_base = log.segments.base_offsets()[1]
    result = log.read(0, 1 << 20)
    assert result.next_offset == second_base
    assert log.read(second_base, 1 << 20).first_offset == second_base


def _files(log: Log) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log.directory.iterdir()) if p.suffix == ".log"}


def _corrupt(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :]


@pytest.mark.parametrize(
    "make_bad, error",
    [
        (lambda: batch([b"x" * 2000]), MessageTooLargeError),
        (lambda: _corrupt(batch([b"payload"]), 70), InvalidBatchError),  # a record byte
        (lambda: _corrupt(batch([b"payload"]), 30), InvalidBatchError),  # CRC-covered header
        (lambda: _corrupt(batch([b"payload"]), 16), InvalidBatchError),  # magic
        (lambda: batch([b"payload"])[:-1], InvalidBatchError),  # short
        (lambda: batch([b"a"]) + batch([b"b"]), InvalidBatchError),  # two batches
        (lambda: b"", InvalidBatchError),
    ],
)
def test_bad_leader_input_writes_nothing(open_log: OpenLog, make_bad, error) -> None:  # type: ignore[no-untyped-def]
    log = open_log(max_message_bytes=1000)
    log.append_as_leader(batch([b"good"]), 1)
    before = _files(log)
    with pytest.raises(error):
        log.append_as_leader(make_bad(), 1)
    assert _files(log) == before
    assert log.log_end_offset == 1
    assert read_values(log) == [(0, b"good")]
    assert log.append_as_leader(batch([b"next"]), 1).base_offset == 1


def test_follower_append_is_byte_for_byte(open_log: OpenLog, tmp_path) -> None:  # type: ignore[no-untyped-def]
    leader = open_log()
    for epoch, values in ((1, [b"a", b"b"]), (1, [b"c"]), (4, [b"d", b"e", b"f"])):
        leader.append_as_leader(batch(values), epoch)
    data = slice_bytes(leader.read(0, 1 << 20))
    follower = open_log(tmp_path / "topic-1")
    info = follower.append_as_follower(data)
    assert info is not None and (info.base_offset, info.last_offset, info.record_count) == (0, 5, 6)
    assert slice_bytes(follower.read(0, 1 << 20)) == data
    assert follower.end_offset_for_epoch(1) == (1, 3)
    assert follower.epochs.latest_epoch == 4
    assert follower.append_as_follower(b"") is None


def test_follower_append_checks_offsets_and_crc_before_writing(open_log: OpenLog, tmp_path) -> None:  # type: ignore[no-untyped-def]
    leader = open_log()
    leader.append_as_leader(batch([b"a"]), 1)
    leader.append_as_leader(batch([b"b"]), 1)
    data = slice_bytes(leader.read(0, 1 << 20))
    follower = open_log(tmp_path / "topic-1")
    with pytest.raises(InvalidBatchError):
        follower.append_as_follower(_corrupt(data, len(data) - 1))  # second batch's CRC
    assert follower.log_end_offset == 0 and follower.size_bytes == 0
    follower.append_as_follower(data)
    assert read_values(follower) == [(0, b"a"), (1, b"b")]
    with pytest.raises(UnexpectedAppendOffsetError):  # a batch before the log's end
        follower.append_as_follower(_second_batch(data))
    assert follower.log_end_offset == 2


def test_follower_append_takes_a_cleaners_gap(open_log: OpenLog, tmp_path) -> None:  # type: ignore[no-untyped-def]
    leader = open_log()
    leader.append_as_leader(batch([b"a"]), 1)
    leader.append_as_leader(batch([b"b"]), 1)
    data = slice_bytes(leader.read(0, 1 << 20))
    follower = open_log(tmp_path / "topic-1")
    follower.append_as_follower(_second_batch(data))  # offset 0 was cleaned away
    assert follower.log_end_offset == 2
    assert read_values(follower) == [(1, b"b")]
    assert slice_bytes(follower.read(0, 1 << 20)) == _second_batch(data)  # 0 -> the next batch
    follower.close()
    reopened = open_log(tmp_path / "topic-1")
    assert reopened.log_end_offset == 2 and read_values(reopened) == [(1, b"b")]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("bits", [0, TRANSACTIONAL_BIT, CONTROL_BIT])
def test_every_kafka_batch_kind_is_stored_and_served_unread(
    open_log: OpenLog, tmp_path: Path, codec: int, bits: int
) -> None:
    """Codecs and the transactional and control bits are a client's business: the log takes
    them from a follower's fetch as they are (only a client's produce refuses the last two,
    broker/replica_manager.py)."""
    raw = bytearray(build_batch_from_values([b"v" * 50] * 3, T0, codec))
    struct.pack_into(">h", raw, 21, codec | bits)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[CRC_START:])))
    stamp(raw, 0, 2)
    follower = open_log(tmp_path / "topic-1")
    info = follower.append_as_follower(bytes(raw))
    assert info is not None and info.record_count == 3
    assert slice_bytes(follower.read(0, 1 << 20)) == bytes(raw)


def _second_batch(data: bytes) -> bytes:
    (_, first), (second_at, _) = list(iter_batches(data))
    assert second_at == first.size
    return data[second_at:]


def test_unstamped_offsets_in_a_leader_batch_are_overwritten(open_log: OpenLog) -> None:
    log = open_log()
    raw = bytearray(build_batch_from_values([b"v"], T0))
    HEADER.pack_into(raw, 0, 999, *HEADER.unpack_from(raw, 0)[1:])  # a client's base offset
    log.append_as_leader(bytes(raw), 0)
    log.append_as_leader(bytes(raw), 0)
    assert [o for o, _ in read_values(log)] == [0, 1]


def test_slices_point_into_the_segment_file(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch([b"hello"]), 0)
    result = log.read(0, 1000)
    assert result.slice is not None
    assert os.fstat(result.slice.fd).st_size == result.slice.length


def test_a_closed_log_refuses_reads_and_appends(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch([b"x"]), 0)
    log.close()
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(batch([b"y"]), 0)
