"""What a batch must look like to enter a log: one job, the checks on the raw header tuple
that run once per appended, replicated or recovered batch.

`check_batch` is protocol.batch.validate's checks for a producer's batch (magic 2, lengths,
a record count that matches its offset span, known attributes and codec, timestamps, CRC,
max.message.bytes) done on the HEADER tuple, with no BatchHeader object; `check_stored_batch`
takes the shapes a leader's log may hold after its cleaner rewrote a batch (fewer records than
the offsets span, none at all, a delete horizon). Anything unusual goes to `validate`, which
raises the protocol's own error for it: the fast path never accepts what `validate` would
reject. broker/log/appends.py checks appends with them, segment_recovery.py recovered
batches, the cleaner (cleaner/cleaner.py) the batches it rewrites.
"""

from __future__ import annotations

import crc32c

from broker.log.segment import H_COUNT, H_LAST_DELTA, H_LENGTH, H_MAX_TS, MIN_BATCH_LENGTH
from protocol.batch import (
    CODEC_MASK,
    CODECS,
    CRC_START,
    DELETE_HORIZON_BIT,
    HEADER,
    HEADER_BYTES,
    KNOWN_ATTRIBUTE_BITS,
    LENGTH_PREFIX_BYTES,
    MAGIC,
    InvalidBatchError,
    validate,
)

_KNOWN_CODECS = frozenset(CODECS.values())


def check_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0, max_batch_bytes: int | None = None
) -> tuple[int, ...]:
    """protocol.batch.validate's checks on the raw header tuple (no BatchHeader object: this
    runs once per appended and recovered batch). Anything unusual is handed to `validate`,
    which raises the protocol's own error for it; the fast path never accepts what `validate`
    would reject.
    """
    if len(buf) - pos >= HEADER_BYTES:
        h = HEADER.unpack_from(buf, pos)
        size = LENGTH_PREFIX_BYTES + h[H_LENGTH]
        end = pos + size
        if (
            h[3] == MAGIC
            and h[H_LENGTH] >= MIN_BATCH_LENGTH
            and (max_batch_bytes is None or size <= max_batch_bytes)
            and end <= len(buf)
            and h[H_COUNT] >= 1
            and h[H_LAST_DELTA] == h[H_COUNT] - 1
            and not h[5] & ~KNOWN_ATTRIBUTE_BITS
            and h[5] & CODEC_MASK in _KNOWN_CODECS
            and h[H_MAX_TS] >= h[7]
            and crc32c.crc32c(memoryview(buf)[pos + CRC_START : end]) == h[4]
        ):
            return h
    validate(buf, pos, max_batch_bytes)
    # validate takes the log cleaner's shapes too (stored batches); a producer's may not have
    raise InvalidBatchError("a produced batch's record count must match its offset span")


def check_stored_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, ...]:
    """`check_batch` for a batch a leader stamped already (recovery, a follower's copy), which
    the log cleaner may have rewritten: it may hold fewer records than its offsets span, none at
    all (a producer's last batch, kept for its state), and a delete horizon in its
    first_timestamp (then above max_timestamp)."""
    if len(buf) - pos >= HEADER_BYTES:
        h = HEADER.unpack_from(buf, pos)
        end = pos + LENGTH_PREFIX_BYTES + h[H_LENGTH]
        if (
            h[3] == MAGIC
            and h[H_LENGTH] >= MIN_BATCH_LENGTH
            and end <= len(buf)
            and 0 <= h[H_COUNT] <= h[H_LAST_DELTA] + 1
            and not h[5] & ~KNOWN_ATTRIBUTE_BITS  # the cleaner's delete horizon among them
            and h[5] & CODEC_MASK in _KNOWN_CODECS
            and (h[H_MAX_TS] >= h[7] or h[5] & DELETE_HORIZON_BIT)
            and crc32c.crc32c(memoryview(buf)[pos + CRC_START : end]) == h[4]
        ):
            return h
    validate(buf, pos)
    raise InvalidBatchError("the batch's record count exceeds its offset span")
