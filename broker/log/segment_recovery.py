"""A segment's recovery: one job, checking a `<base>.log` file batch by batch and rebuilding
its indexes from what holds (broker/log/recovery.py runs it on every segment not known to be
flushed, and on one whose indexes do not load).

`recover(seg, ...)` reads the whole file in 8 MiB chunks, checks every batch (lengths, magic,
CRC: batch_checks.check_stored_batch; contiguous offsets, or past the previous batch's end
where the cleaner left gaps), cuts the file at the first batch that fails and rebuilds both
indexes and the tail through the segment's own bookkeeping (`Segment.reset`, `account`,
`set_rolling_base`). The base offset is outside the CRC (a leader stamps it), so a bit flip
there looks like the cleaner's gap: a real gap is followed by higher offsets, a flipped one by
an overlap, which cuts the file at the batch that jumped.

`foreign_magic(seg)` tells a segment written in another record format (odradek's pre-Kafka
batches were magic 1, with the same header and CRC) from a torn or corrupt one: a first batch
whose magic is not 2 but whose length and CRC hold is a whole batch of another format, which
the log refuses to open (`LogFormatError`) rather than letting recovery cut it away.
"""

from __future__ import annotations

import os
import struct

import crc32c

from broker.log.batch_checks import check_stored_batch
from broker.log.index import OffsetIndex, TimeIndex
from broker.log.segment import (
    H_BASE,
    H_EPOCH,
    H_LAST_DELTA,
    H_LENGTH,
    H_MAX_TS,
    MAX_RELATIVE_OFFSET,
    MIN_BATCH_LENGTH,
    OnEpoch,
    Segment,
)
from protocol.batch import CRC_START, HEADER, HEADER_BYTES, LENGTH_PREFIX_BYTES, MAGIC
from protocol.errors import OdradekError, UsageError

RECOVERY_CHUNK_BYTES = 8 << 20


class LogFormatError(UsageError):
    """A log directory written in a record format this broker does not read. Never recovered
    (that would cut its data away): the broker refuses to start until an operator acts."""

    name = "UNSUPPORTED_LOG_FORMAT"


def recover(seg: Segment, index_interval_bytes: int, on_epoch: OnEpoch) -> int:
    """Check every batch, cut the file at the first bad one, rebuild the indexes.

    Returns the number of bytes cut off (0 when the whole file is sound).
    """
    file_size = os.fstat(seg.fd).st_size
    seg.reset(OffsetIndex.create, TimeIndex.create)
    seg.txn_index.clear()
    seg.recovered = True
    # The base offset is outside the CRC (a leader stamps it), so a bit flip there looks
    # like the cleaner's gap. A real gap is followed by higher offsets; a flipped one by
    # an overlap, which cuts the file at the batch that jumped.
    jumped_at: int | None = None
    buf = bytearray(RECOVERY_CHUNK_BYTES)
    view = memoryview(buf)
    buf_start = buf_len = 0
    pos = 0
    while pos < file_size:
        off = pos - buf_start
        if off + HEADER_BYTES > buf_len:
            buf_start, buf_len, off = pos, os.preadv(seg.fd, [view], pos), 0
            if buf_len < HEADER_BYTES:
                break
        _, length = struct.unpack_from(">qi", view, off)
        size = LENGTH_PREFIX_BYTES + length
        if length < MIN_BATCH_LENGTH or pos + size > file_size:
            break
        if off + size > buf_len:
            if size > len(buf):
                view.release()
                buf = bytearray(size)
                view = memoryview(buf)
            buf_start, buf_len, off = pos, os.preadv(seg.fd, [view], pos), 0
            if buf_len < size:
                break
        try:
            h = check_stored_batch(view[:buf_len], off)
        except OdradekError:
            break
        gap = h[H_BASE] > seg.next_offset
        if h[H_BASE] < seg.next_offset or (gap and not seg.allow_gaps):
            if jumped_at is not None:
                view.release()
                os.ftruncate(seg.fd, jumped_at)
                return file_size - jumped_at + recover(seg, index_interval_bytes, on_epoch)
            break
        if h[H_BASE] + h[H_LAST_DELTA] - seg.base_offset > MAX_RELATIVE_OFFSET:
            break  # no segment spans more (the log rolls first): a flipped base offset
        jumped_at = pos if gap else None
        on_epoch(h[H_EPOCH], h[H_BASE])
        seg.account(pos, size, h[H_BASE], h[H_BASE] + h[H_LAST_DELTA], h[H_MAX_TS],
                      index_interval_bytes)  # fmt: skip
        pos += size
    view.release()
    if pos < file_size:
        os.ftruncate(seg.fd, pos)
    seg.size_bytes = pos
    seg.last_batch_jumped_at = jumped_at
    seg.set_rolling_base()
    return file_size - pos


def foreign_magic(seg: Segment) -> int | None:
    """The magic of the first batch when it is not MAGIC yet the batch is whole (a length
    that fits the file, a sound CRC): a segment of another record format. None otherwise,
    a torn or corrupt first batch included (recovery's business)."""
    head = os.pread(seg.fd, HEADER_BYTES, 0)
    if len(head) < HEADER_BYTES or head[16] == MAGIC:
        return None
    h = HEADER.unpack_from(head)
    size = LENGTH_PREFIX_BYTES + h[H_LENGTH]
    if h[H_LENGTH] < MIN_BATCH_LENGTH or size > os.fstat(seg.fd).st_size:
        return None
    crc, pos = 0, CRC_START
    while pos < size:  # in chunks: the length is read off the disk, not trusted
        chunk = os.pread(seg.fd, min(RECOVERY_CHUNK_BYTES, size - pos), pos)
        if not chunk:
            return None
        crc = crc32c.crc32c(chunk, crc)
        pos += len(chunk)
    return int(h[3]) if crc == h[4] else None
