"""Transaction markers (protocol/control.py): Kafka's bytes, built by hand from the spec."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.batch import (
    CONTROL_BIT,
    TRANSACTIONAL_BIT,
    InvalidBatchError,
    build_batch,
    check_client_batch,
    read_header,
    validate,
)
from protocol.control import Marker, build_marker, parse_marker
from protocol.errors import InvalidRecordError


def kafka_marker(pid: int, epoch: int, coordinator_epoch: int, kind: int, ts: int) -> bytes:
    """What Kafka's MemoryRecords.withEndTransactionMarker writes, from the spec by hand."""
    record = bytes.fromhex("2000000008") + struct.pack(">hh", 0, kind)
    record += bytes.fromhex("0c") + struct.pack(">hi", 0, coordinator_epoch) + b"\x00"
    assert len(record) == 17 and record[0] == 16 << 1  # zigzag(16): the bytes after it
    after_crc = struct.pack(">hiqqqhii", 0x30, 0, ts, ts, pid, epoch, -1, 1) + record
    head = struct.pack(">qiib", 0, 49 + len(record), -1, 2)
    return head + struct.pack(">I", crc32c.crc32c(after_crc)) + after_crc


@pytest.mark.parametrize(("commit", "kind"), [(False, 0), (True, 1)])
def test_marker_is_kafkas_bytes(commit: bool, kind: int) -> None:
    got = build_marker(4242, 7, 13, commit, 1_700_000_000_000)
    assert got == kafka_marker(4242, 7, 13, kind, 1_700_000_000_000)
    h = validate(got)
    assert h.attributes == TRANSACTIONAL_BIT | CONTROL_BIT and h.base_sequence == -1
    assert (h.producer_id, h.producer_epoch, h.record_count) == (4242, 7, 1)
    assert parse_marker(got) == Marker(commit, 13)


def test_clients_may_not_write_markers_but_may_write_transactional_batches() -> None:
    with pytest.raises(InvalidRecordError):
        check_client_batch(read_header(build_marker(1, 0, 0, True, 0)))
    txn = bytearray(build_batch([(None, b"v", None, 0)], producer_id=1, producer_epoch=0,
                                base_sequence=0))  # fmt: skip
    txn[22] |= TRANSACTIONAL_BIT  # attributes' low byte (CRC not needed by the check)
    check_client_batch(read_header(txn))


def test_parse_refuses_a_data_batch_and_an_unknown_type() -> None:
    with pytest.raises(InvalidBatchError):
        parse_marker(build_batch([(None, b"v", None, 0)]))
    bad = bytearray(kafka_marker(1, 0, 0, 5, 0))
    with pytest.raises(InvalidBatchError):
        parse_marker(bad)


@given(
    st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.integers(-(2**31), 2**31 - 1),
    st.booleans(), st.integers(0, 2**40), st.integers(0, 100),
)  # fmt: skip
def test_round_trip(pid: int, epoch: int, coord: int, commit: bool, ts: int, cut: int) -> None:
    batch = build_marker(pid, epoch, coord, commit, ts)
    assert parse_marker(batch) == Marker(commit, coord)
    if cut:  # a torn marker never parses as another one
        with pytest.raises(InvalidBatchError):
            parse_marker(batch[: max(61, len(batch) - cut)])
