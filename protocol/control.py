"""Transaction markers: the control batches a partition leader writes to end a transaction
(KIP-98; Kafka's EndTransactionMarker, ControlRecordType and
MemoryRecords.withEndTransactionMarker).

A marker is one record batch (protocol/batch.py layout) with attributes TRANSACTIONAL_BIT |
CONTROL_BIT (0x30, never compressed), the transaction's producer id and epoch, base sequence -1
and exactly one record:

    key    int16 version (0)   int16 type (0 ABORT, 1 COMMIT)
    value  int16 version (0)   int32 coordinator epoch

The record itself is an ordinary v2 record (attributes 0, timestamp delta 0, offset delta 0,
no headers), so its 17 bytes are:

    20 00 00 00 08 | 00 00 00 <type> | 0c | 00 00 <epoch, 4 bytes> | 00
    len attrs ts od  key_len=4 key     val_len=6 value                headers

Pure functions: `build_marker` for the leader's WriteTxnMarkers, `parse_marker` for whatever
reads a stored control batch (the log's producer state, recovery, consumers). Parsing reads
only the first record and checks its lengths; a control batch whose key is not a known type
raises InvalidBatchError (Kafka also keeps unknown control types, but has none other than
ABORT and COMMIT for transactions; odradek writes no others).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from protocol.batch import (
    CONTROL_BIT,
    HEADER_BYTES,
    NO_PARTITION_LEADER_EPOCH,
    TRANSACTIONAL_BIT,
    InvalidBatchError,
    _assemble,
    read_header,
)
from protocol.errors import UsageError
from protocol.varint import read_zigzag, write_zigzag

ABORT = 0
COMMIT = 1
CONTROL_VERSION = 0
MARKER_ATTRIBUTES = TRANSACTIONAL_BIT | CONTROL_BIT
NO_SEQUENCE = -1
_KEY = struct.Struct(">hh")  # version, type
_VALUE = struct.Struct(">hi")  # version, coordinator epoch


@dataclass(frozen=True, slots=True)
class Marker:
    """What a control batch says: COMMIT or ABORT, by which coordinator epoch."""

    commit: bool
    coordinator_epoch: int


def is_control(attributes: int) -> bool:
    return bool(attributes & CONTROL_BIT)


def is_transactional(attributes: int) -> bool:
    return bool(attributes & TRANSACTIONAL_BIT)


def build_marker(
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    timestamp_ms: int,
    base_offset: int = 0,
) -> bytes:
    """One end-transaction marker batch, CRC included (the log stamps offset and leader epoch)."""
    if producer_id < 0:
        raise UsageError(f"a transaction marker needs a producer id, not {producer_id}")
    key = _KEY.pack(CONTROL_VERSION, COMMIT if commit else ABORT)
    try:
        value = _VALUE.pack(CONTROL_VERSION, coordinator_epoch)
    except struct.error as exc:
        raise UsageError(f"coordinator epoch out of range: {exc}") from None
    body = (
        b"\x00"  # record attributes
        + write_zigzag(0)  # timestamp delta
        + write_zigzag(0)  # offset delta
        + write_zigzag(len(key)) + key
        + write_zigzag(len(value)) + value
        + write_zigzag(0)  # no headers
    )  # fmt: skip
    record = write_zigzag(len(body)) + body
    batch = _assemble(record, 1, timestamp_ms, timestamp_ms, base_offset, MARKER_ATTRIBUTES,
                      producer_id, producer_epoch, NO_SEQUENCE)  # fmt: skip
    assert read_header(batch).partition_leader_epoch == NO_PARTITION_LEADER_EPOCH
    return batch


def parse_marker(batch: bytes | bytearray | memoryview, pos: int = 0) -> Marker:
    """The marker in the control batch at `pos` (its header already checked by the caller:
    validate / check_stored_batch). Raises InvalidBatchError for anything else."""
    h = read_header(batch, pos)
    if not h.attributes & CONTROL_BIT or h.codec != 0 or h.record_count != 1:
        raise InvalidBatchError("not an uncompressed control batch of one record")
    end = pos + h.size
    view = memoryview(batch)[: min(end, len(batch))]
    try:
        length, at = read_zigzag(view, pos + HEADER_BYTES)
        if length < 0 or at + length > len(view):
            raise ValueError("the control record runs past its batch")
        at += 1  # attributes
        _, at = read_zigzag(view, at)  # timestamp delta
        _, at = read_zigzag(view, at)  # offset delta
        key_len, at = read_zigzag(view, at)
        if key_len < _KEY.size or at + key_len > len(view):
            raise ValueError(f"control key of {key_len} bytes")
        _, kind = _KEY.unpack_from(view, at)
        at += key_len
        value_len, at = read_zigzag(view, at)
        if value_len < _VALUE.size or at + value_len > len(view):
            raise ValueError(f"marker value of {value_len} bytes")
        _, coordinator_epoch = _VALUE.unpack_from(view, at)
    except (ValueError, struct.error) as exc:
        raise InvalidBatchError(f"malformed control record: {exc}") from None
    if kind not in (ABORT, COMMIT):
        raise InvalidBatchError(f"unknown control record type {kind}")
    return Marker(kind == COMMIT, int(coordinator_epoch))
