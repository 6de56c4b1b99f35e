"""What an append to a log checks before anything is written, and what it answers.

A client's batch (`check_client_batch`, for Log.append_as_leader) must be one whole batch of
Kafka's v2 format (batch_checks.check_batch: CRC, lengths, max.message.bytes), with nothing after
it, and not a control batch: markers are written by brokers (Log.append_control). A
follower's fetched batches (`check_replicated`, for Log.append_as_follower) are checked all
before any is written: each must start at or past the offset after the one before (past it
only when the leader's cleaner removed what was between: a gap); they are stored byte for
byte. `PREFIX` is what Log stamps on a leader's batch: its base offset, length and
partition leader epoch. `AppendInfo` is what one append did.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

from broker.log.batch_checks import check_batch, check_stored_batch
from broker.log.segment import H_BASE, H_LAST_DELTA, H_LENGTH
from protocol.batch import CONTROL_BIT, LEADER_EPOCH_AT, LENGTH_PREFIX_BYTES, InvalidBatchError
from protocol.errors import InvalidRecordError, OffsetOutOfRangeError

H_PID, H_PEPOCH, H_SEQ = 9, 10, 11  # producer id, producer epoch, base sequence
H_ATTRIBUTES = 5  # header fields past segment.py's H_*
PREFIX = struct.Struct(">qii")  # base offset, batch length, partition leader epoch
assert PREFIX.size == LEADER_EPOCH_AT + 4

VerifyTxn = Callable[[int, int], None]
"""(producer id, producer epoch) -> None, or raises: the hook `append_as_leader` calls for a
transactional batch, where the partition will check that the transaction coordinator added it
to the producer's transaction (KIP-890's verification; INVALID_TXN_STATE when not)."""


class UnexpectedAppendOffsetError(OffsetOutOfRangeError):
    """A replicated batch does not start at the log end offset."""


class AppendInfo(NamedTuple):
    """What one append did (a NamedTuple: built once per batch, cheaper than a frozen
    dataclass's per-field object.__setattr__)."""

    base_offset: int
    last_offset: int
    record_count: int
    max_timestamp: int
    size_bytes: int
    duplicate: bool = False  # an idempotent producer's retry: nothing appended


def check_client_batch(batch: bytes | bytearray, max_message_bytes: int) -> tuple[int, ...]:
    """The header of a client's one whole batch, or raises."""
    h = check_batch(batch, 0, max_message_bytes)
    size = LENGTH_PREFIX_BYTES + h[H_LENGTH]
    if size != len(batch):
        raise InvalidBatchError(f"{len(batch) - size} bytes follow the batch")
    if h[H_ATTRIBUTES] & CONTROL_BIT:
        raise InvalidRecordError("control batches are written by brokers, not by clients")
    return h


def check_replicated(
    view: memoryview, expected: int
) -> tuple[list[tuple[int, tuple[int, ...]]], int, int, bool]:
    """A follower's batches from the log end `expected` on: ((position, header) of each, the
    offset after the last, their size, whether they leave a gap), or raises."""
    headers = []
    pos = 0
    gap = False
    while pos < len(view):
        h = check_stored_batch(view, pos)  # the leader's cleaner may have rewritten it
        if h[H_BASE] < expected:
            raise UnexpectedAppendOffsetError(
                f"batch at offset {h[H_BASE]}, the log ends at {expected}"
            )
        gap = gap or h[H_BASE] > expected  # the leader's cleaner removed what was between
        headers.append((pos, h))
        expected = h[H_BASE] + h[H_LAST_DELTA] + 1
        pos += LENGTH_PREFIX_BYTES + h[H_LENGTH]
    return headers, expected, pos, gap
