"""One segment of a partition log: `<base>.log` plus its two sparse indexes (index.py) and
its `.txnindex` of aborted transactions (txn_index.py; the log fills it, recovery empties it).

`<base>.log` is record batches back to back, exactly as protocol/batch.py lays them out (the
61-byte header, then the records); `<base>` is the segment's base offset in 20 digits. The file
is opened O_APPEND and written with one `writev` per batch (the stamped 16-byte prefix and the
rest of the caller's buffer, so the batch is never copied). Reads never copy data either: they
resolve an offset to a byte range that the server sends with sendfile.

Finding offset O: bisect the offset index for the last indexed batch at or before O, then walk
batch headers forward (pread of an 8 KiB window, so a walk over small batches is one system
call). Finding where a read of `max_bytes` ends: bisect the index positions for the last batch
that starts within the budget, then walk the few headers after it. The batches after the last
indexed one (index_interval_bytes at most) are also kept in memory (`Tail`), so a read at the
log's end, a caught-up consumer's or follower's fetch answered as the append lands, finds its
batches by bisection, with no read and no walk.

Invariants (asserted where they are established): batches are contiguous in offsets
(`base == previous next offset`), `size_bytes` is the end of the last whole batch, index keys
strictly increase and point at batch starts, and `next_offset` is one past the last offset.

`recover()` reads the whole file in 8 MiB chunks, checks every batch (lengths, magic, CRC,
contiguous offsets), cuts the file at the first batch that fails and rebuilds both indexes.

`foreign_magic()` tells a segment written in another record format (odradek's pre-Kafka
batches were magic 1, with the same header and CRC) from a torn or corrupt one: a first batch
whose magic is not 2 but whose length and CRC hold is a whole batch of another format, which
the log refuses to open rather than letting recovery cut it away.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path

import crc32c

from broker.log.dir_failure import LogDirIOError
from broker.log.index import CorruptIndexError, OffsetIndex, TimeIndex
from broker.log.txn_index import TXN_INDEX_SUFFIX, TxnIndex
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
from protocol.errors import OdradekError, UsageError

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
# The log cleaner's (log.py replace_segments): its output before the swap, a committed swap,
# and, beside it, the end offset of the segments the swap replaces.
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SWAP_END_SUFFIX = ".swap-end"
# Present once the log may hold offset gaps (log.py says when)
GAPS_FILE = "offset-gaps"
WINDOW_BYTES = 8192
RECOVERY_CHUNK_BYTES = 8 << 20
MIN_BATCH_LENGTH = HEADER_BYTES - LENGTH_PREFIX_BYTES
MAX_RELATIVE_OFFSET = (1 << 31) - 1  # offsets in a segment stay within base + this (index)
# Fields of a HEADER.unpack tuple.
H_BASE, H_LENGTH, H_EPOCH, H_LAST_DELTA, H_MAX_TS, H_COUNT = 0, 1, 2, 6, 8, 12
_PEEK = struct.Struct(">qi11xi")  # base offset, batch length, last offset delta
assert _PEEK.size == 27

OnEpoch = Callable[[int, int], object]
"""Called with (leader epoch, base offset) for each batch recovery checks."""


_KNOWN_CODECS = frozenset(CODECS.values())


class LogFormatError(UsageError):
    """A log directory written in a record format this broker does not read. Never recovered
    (that would cut its data away): the broker refuses to start until an operator acts."""

    name = "UNSUPPORTED_LOG_FORMAT"


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


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class _Window:
    """Batch headers of one file, read through a small pread window."""

    __slots__ = ("buf", "end", "fd", "start")

    def __init__(self, fd: int, end: int) -> None:
        self.fd = fd
        self.end = end  # bytes past this are not part of the log
        self.start = 0
        self.buf = b""

    def header(self, pos: int) -> tuple[int, ...] | None:
        """The header tuple of the batch at `pos`, or None if no whole header is there."""
        if pos + HEADER_BYTES > self.end:
            return None
        off = pos - self.start
        if off < 0 or off + HEADER_BYTES > len(self.buf):
            self.buf = os.pread(self.fd, min(WINDOW_BYTES, self.end - pos), pos)
            self.start = pos
            off = 0
            if len(self.buf) < HEADER_BYTES:
                raise LogDirIOError("segment file is shorter than its recorded size")
        return HEADER.unpack_from(self.buf, off)


class Tail:
    """Position, size, base and last offset of every batch appended after the segment's last
    indexed one (bounded by index_interval_bytes: the next indexed batch empties it)."""

    __slots__ = ("bases", "lasts", "positions", "sizes")

    def __init__(self) -> None:
        self.positions, self.sizes = array("q"), array("q")
        self.bases, self.lasts = array("q"), array("q")

    def add(self, pos: int, size: int, base: int, last: int) -> None:
        self.positions.append(pos)
        self.sizes.append(size)
        self.bases.append(base)
        self.lasts.append(last)

    def find(self, offset: int) -> tuple[int, int, int, int] | None:
        """(position, size, base, last) of the first batch ending at or past `offset`."""
        j = bisect.bisect_left(self.lasts, offset)
        if j == len(self.lasts):
            return None
        return self.positions[j], self.sizes[j], self.bases[j], self.lasts[j]


class Segment:
    def __init__(self, directory: Path, base_offset: int, fd: int, suffix: str = "") -> None:
        """`suffix`: the log cleaner's `.cleaned` or `.swap` after every file's name."""
        self.directory = directory
        self.base_offset = base_offset
        self.fd = fd
        name = segment_name(base_offset)
        self.log_path = directory / (name + LOG_SUFFIX + suffix)
        self.index = OffsetIndex(directory / (name + INDEX_SUFFIX + suffix), base_offset)
        self.time_index = TimeIndex(directory / (name + TIME_INDEX_SUFFIX + suffix), base_offset)
        # aborted transactions whose marker is here (txn_index.py); filled by the log
        self.txn_index = TxnIndex(directory / (name + TXN_INDEX_SUFFIX + suffix))
        self.recovered = False  # recover() ran: the log refills txn_index by replay
        self.replaced = False  # its files now belong to a cleaned segment: unlink closes only
        self.size_bytes = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.rolling_base_ms: int | None = None  # when the first batch was appended
        # set by recover(): the position of the last batch when it started past the one
        # before it (a gap, or a flipped base offset if the next segment overlaps it)
        self.last_batch_jumped_at: int | None = None
        # the log may hold offset gaps (the cleaner's, log.py's GAPS_FILE): recovery and the
        # rescan take a batch past the previous one's end; without, that is a broken log
        self.allow_gaps = False
        self.bytes_since_index = 0
        self.tail = Tail()  # the batches after the last indexed one (kept by every writer)
        self.closed = False

    # ----- life cycle ---------------------------------------------------------------------

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, new_directory: bool = False, suffix: str = ""
    ) -> Segment:
        """A new, empty segment. In a `new_directory` its index files are left to their first
        entry (no file to empty: creating a file costs ~0.7 ms on this machine's disk, and an
        absent index makes a load rebuild it from the log, as recovery does)."""
        path = directory / (segment_name(base_offset) + LOG_SUFFIX + suffix)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        seg = cls(directory, base_offset, fd, suffix)
        if not new_directory:
            seg.index = OffsetIndex.create(seg.index.file.path, base_offset)
            seg.time_index = TimeIndex.create(seg.time_index.file.path, base_offset)
        return seg

    @classmethod
    def open_existing(cls, directory: Path, base_offset: int) -> Segment:
        path = directory / (segment_name(base_offset) + LOG_SUFFIX)
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
        seg = cls(directory, base_offset, fd)
        seg.size_bytes = os.fstat(fd).st_size
        return seg

    def load(self) -> None:
        """Trust the log, load the indexes and walk the batches after the last index entry.

        Raises CorruptIndexError when an index or the tail does not check out: the caller
        then runs `recover()`.
        """
        self.index = OffsetIndex.load(self.index.file.path, self.base_offset, self.size_bytes)
        self.time_index = TimeIndex.load(self.time_index.file.path, self.base_offset)
        self.txn_index.load()
        self._rescan_tail()
        last_time = self.time_index.last()
        if last_time is not None and last_time[1] >= self.next_offset:
            raise CorruptIndexError(f"{self.time_index.file.path.name} points past the log")

    def recover(self, index_interval_bytes: int, on_epoch: OnEpoch) -> int:
        """Check every batch, cut the file at the first bad one, rebuild the indexes.

        Returns the number of bytes cut off (0 when the whole file is sound).
        """
        file_size = os.fstat(self.fd).st_size
        self._reset(OffsetIndex.create, TimeIndex.create)
        self.txn_index.clear()
        self.recovered = True
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
                buf_start, buf_len, off = pos, os.preadv(self.fd, [view], pos), 0
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
                buf_start, buf_len, off = pos, os.preadv(self.fd, [view], pos), 0
                if buf_len < size:
                    break
            try:
                h = check_stored_batch(view[:buf_len], off)
            except OdradekError:
                break
            gap = h[H_BASE] > self.next_offset
            if h[H_BASE] < self.next_offset or (gap and not self.allow_gaps):
                if jumped_at is not None:
                    view.release()
                    os.ftruncate(self.fd, jumped_at)
                    return file_size - jumped_at + self.recover(index_interval_bytes, on_epoch)
                break
            if h[H_BASE] + h[H_LAST_DELTA] - self.base_offset > MAX_RELATIVE_OFFSET:
                break  # no segment spans more (the log rolls first): a flipped base offset
            jumped_at = pos if gap else None
            on_epoch(h[H_EPOCH], h[H_BASE])
            self._account(pos, size, h[H_BASE], h[H_BASE] + h[H_LAST_DELTA], h[H_MAX_TS],
                          index_interval_bytes)  # fmt: skip
            pos += size
        view.release()
        if pos < file_size:
            os.ftruncate(self.fd, pos)
        self.size_bytes = pos
        self.last_batch_jumped_at = jumped_at
        self._set_rolling_base()
        return file_size - pos

    def foreign_magic(self) -> int | None:
        """The magic of the first batch when it is not MAGIC yet the batch is whole (a length
        that fits the file, a sound CRC): a segment of another record format. None otherwise,
        a torn or corrupt first batch included (recovery's business)."""
        head = os.pread(self.fd, HEADER_BYTES, 0)
        if len(head) < HEADER_BYTES or head[16] == MAGIC:
            return None
        h = HEADER.unpack_from(head)
        size = LENGTH_PREFIX_BYTES + h[H_LENGTH]
        if h[H_LENGTH] < MIN_BATCH_LENGTH or size > os.fstat(self.fd).st_size:
            return None
        crc, pos = 0, CRC_START
        while pos < size:  # in chunks: the length is read off the disk, not trusted
            chunk = os.pread(self.fd, min(RECOVERY_CHUNK_BYTES, size - pos), pos)
            if not chunk:
                return None
            crc = crc32c.crc32c(chunk, crc)
            pos += len(chunk)
        return int(h[3]) if crc == h[4] else None

    def seal(self) -> None:
        """The segment is no longer active: final time entry, fsync and close the indexes."""
        if self.size_bytes:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.index.file.seal()
        self.time_index.file.seal()
        self.txn_index.seal()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.index.file.close()
            self.time_index.file.close()
            self.txn_index.close()
            os.close(self.fd)

    def rename_deleted(self) -> None:
        """Move the files aside as `<name>.deleted`; the fd stays open for in-flight reads."""
        self.index.file.close()
        self.time_index.file.close()
        for path in (self.index.file.path, self.time_index.file.path):
            if path.exists():
                os.unlink(path)
        self.txn_index.unlink()
        deleted = self.log_path.with_name(self.log_path.name + DELETED_SUFFIX)
        os.replace(self.log_path, deleted)
        self.log_path = deleted

    def rename_suffix(self, suffix: str) -> None:
        """Give every file the suffix `suffix` instead of its own (the cleaner's swap): the
        indexes first, the log last, so a log file under its final name has final indexes."""
        name = segment_name(self.base_offset)
        self.index.file.rename(self.directory / (name + INDEX_SUFFIX + suffix))
        self.time_index.file.rename(self.directory / (name + TIME_INDEX_SUFFIX + suffix))
        self.txn_index.rename(self.directory / (name + TXN_INDEX_SUFFIX + suffix))
        path = self.directory / (name + LOG_SUFFIX + suffix)
        os.replace(self.log_path, path)
        self.log_path = path

    def unlink(self) -> None:
        self.close()
        if self.replaced:
            return
        for path in (self.log_path, self.index.file.path, self.time_index.file.path,
                     self.txn_index.path):  # fmt: skip
            if path.exists():
                os.unlink(path)

    # ----- writes ---------------------------------------------------------------------------

    def append(
        self,
        parts: Sequence[bytes | bytearray | memoryview],
        size: int,
        base_offset: int,
        last_offset: int,
        max_timestamp: int,
        now_ms: int,
        index_interval_bytes: int,
    ) -> None:
        assert base_offset >= self.next_offset, (
            f"append at {base_offset} to a segment ending at {self.next_offset}"
        )  # a gap only where the leader's cleaner removed whole batches
        pos = self.size_bytes
        try:
            written = os.writev(self.fd, parts)
            if written != size:  # a short write (a full disk, say): finish it or fail
                rest = b"".join(bytes(p) for p in parts)[written:]
                if len(rest) != size - written:
                    raise AssertionError("batch parts do not add up to its size")
                while rest:
                    rest = rest[os.write(self.fd, rest) :]
        except OSError as exc:
            # Leave no partial batch behind; if even this fails, the torn tail stays until
            # the next start's recovery cuts it (the failed directory leaves no clean-shutdown
            # marker, so the active segment is recovered).
            os.ftruncate(self.fd, pos)
            raise LogDirIOError(f"append to {self.log_path.name} failed: {exc}") from None
        if self.rolling_base_ms is None:
            self.rolling_base_ms = now_ms
        # _account, inlined: this runs once per appended batch.
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = base_offset
        if self.bytes_since_index >= index_interval_bytes:
            self.index.append(base_offset, pos, last_offset, size)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index = size
            self.tail = Tail()
        else:
            self.bytes_since_index += size
            self.tail.add(pos, size, base_offset, last_offset)
        self.size_bytes = pos + size
        self.next_offset = last_offset + 1

    def _account(
        self, pos: int, size: int, base: int, last: int, max_ts: int, interval: int
    ) -> None:
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.offset_of_max_timestamp = base
        if self.bytes_since_index >= interval:
            self.index.append(base, pos, last, size)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index = 0
            self.tail = Tail()
        else:
            self.tail.add(pos, size, base, last)
        self.bytes_since_index += size
        self.size_bytes = pos + size
        self.next_offset = last + 1

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= offset. Returns the bytes removed."""
        found = self.locate(offset)
        if found is None:
            return 0
        pos, header = found
        removed = self.size_bytes - pos
        os.ftruncate(self.fd, pos)
        self.size_bytes = pos
        self.index.truncate_to(header[H_BASE])
        self.time_index.truncate_to(header[H_BASE])
        self.txn_index.truncate_to(header[H_BASE])
        self._rescan_tail()
        if pos == 0:
            self.rolling_base_ms = None
        return removed

    def truncate_at_position(self, pos: int) -> int:
        """Drop the batch at byte `pos` and every one after it. Returns the bytes removed."""
        header = _Window(self.fd, self.size_bytes).header(pos)
        return 0 if header is None else self.truncate_to(header[H_BASE])

    # ----- reads ----------------------------------------------------------------------------

    def locate(self, offset: int) -> tuple[int, tuple[int, ...]] | None:
        """(position, header) of the first batch whose last offset is >= offset, or None."""
        if offset >= self.next_offset:
            return None
        window = _Window(self.fd, self.size_bytes)
        pos = self.index.lookup(offset)
        while True:
            header = window.header(pos)
            if header is None:
                return None
            if header[H_BASE] + header[H_LAST_DELTA] >= offset:
                return pos, header
            pos += LENGTH_PREFIX_BYTES + header[H_LENGTH]

    def read_range(
        self, offset: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
    ) -> tuple[int, int, int, int] | None:
        """(position, length, first offset, next offset) of whole batches from the one holding
        `offset`; length 0 when none fits. None when `offset` is past this segment.

        The fetch and lookup hot path, written flat: indexed batches are resolved from the
        in-memory index, the others through one shared pread window, with no per-batch objects.
        """
        if offset >= self.next_offset:
            return None
        base_offset, index = self.base_offset, self.index
        offsets, positions, lasts, sizes = index.offsets, index.positions, index.lasts, index.sizes
        relative = offset - base_offset
        i = bisect.bisect_right(offsets, relative) - 1
        if i >= 0 and lasts[i] >= relative:
            start, size, first, last = positions[i], sizes[i], offsets[i], lasts[i]
            first, last = first + base_offset, last + base_offset
        else:
            # past the last indexed batch: in the tail; else walk from entry i's batch
            found = (
                self.tail.find(offset)
                if i == len(offsets) - 1
                else self._walk_to(positions[i] + sizes[i] if i >= 0 else 0, offset)
            )
            if found is None:
                return None
            start, size, first, last = found
        if (max_offset is not None and last >= max_offset) or (
            size > max_bytes and not min_one_batch
        ):
            return start, 0, first, first
        limit = start + max_bytes
        pos, next_offset = start + size, last + 1
        k = bisect.bisect_right(positions, limit) - 1
        if max_offset is not None:
            k = min(k, bisect.bisect_right(offsets, max_offset - base_offset) - 1)
        if k >= 0 and positions[k] > pos:  # every batch before entry k fits both bounds
            pos, next_offset = positions[k], offsets[k] + base_offset
            if pos + sizes[k] > limit or (
                max_offset is not None and lasts[k] + base_offset >= max_offset
            ):
                return start, pos - start, first, next_offset  # and entry k's batch does not
        return self._walk_end(start, pos, next_offset, first, limit, max_offset)

    def _walk_to(self, pos: int, offset: int) -> tuple[int, int, int, int] | None:
        """(position, size, base, last) of the first batch at or after `pos` ending past
        `offset`, reading headers."""
        fd, log_end = self.fd, self.size_bytes
        buf, buf_start = b"", 0
        while pos + _PEEK.size <= log_end:
            off = pos - buf_start
            if off < 0 or off + _PEEK.size > len(buf):
                buf, buf_start, off = os.pread(fd, min(WINDOW_BYTES, log_end - pos), pos), pos, 0
            base, length, delta = _PEEK.unpack_from(buf, off)
            if base + delta >= offset:
                return pos, LENGTH_PREFIX_BYTES + length, base, base + delta
            pos += LENGTH_PREFIX_BYTES + length
        return None

    def _walk_end(
        self, start: int, pos: int, next_offset: int, first: int, limit: int, max_offset: int | None
    ) -> tuple[int, int, int, int]:
        """Extend a read from `pos` over the whole batches that still fit."""
        fd, log_end, base_offset = self.fd, self.size_bytes, self.base_offset
        positions, lasts, sizes = self.index.positions, self.index.lasts, self.index.sizes
        count = len(positions)
        tail = self.tail
        buf, buf_start = b"", 0
        while pos < log_end:
            j = bisect.bisect_left(positions, pos)
            t = bisect.bisect_left(tail.positions, pos) if j == count else -1  # past the index
            if j < count and positions[j] == pos:
                size, last = sizes[j], lasts[j] + base_offset
            elif 0 <= t < len(tail.positions) and tail.positions[t] == pos:
                size, last = tail.sizes[t], tail.lasts[t]
            else:
                off = pos - buf_start
                if off < 0 or off + _PEEK.size > len(buf):
                    buf, buf_start = os.pread(fd, min(WINDOW_BYTES, log_end - pos), pos), pos
                    off = 0
                base, length, delta = _PEEK.unpack_from(buf, off)
                size, last = LENGTH_PREFIX_BYTES + length, base + delta
            if pos + size > limit or (max_offset is not None and last >= max_offset):
                break
            pos, next_offset = pos + size, last + 1
        return start, pos - start, first, next_offset

    def find_by_time(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(base offset, max timestamp) of the first batch with max timestamp >= the given."""
        if self.max_timestamp < timestamp_ms:
            return None
        offset = self.time_index.offset_before(timestamp_ms)
        pos = self.index.lookup(offset) if offset is not None else 0
        window = _Window(self.fd, self.size_bytes)
        while (header := window.header(pos)) is not None:
            if header[H_MAX_TS] >= timestamp_ms:
                return header[H_BASE], header[H_MAX_TS]
            pos += LENGTH_PREFIX_BYTES + header[H_LENGTH]
        return None

    def epochs(self, on_epoch: OnEpoch) -> None:
        """Call on_epoch(epoch, base offset) for every batch (rebuilding the epoch cache)."""
        window = _Window(self.fd, self.size_bytes)
        pos = 0
        while (header := window.header(pos)) is not None:
            on_epoch(header[H_EPOCH], header[H_BASE])
            pos += LENGTH_PREFIX_BYTES + header[H_LENGTH]

    # ----- helpers --------------------------------------------------------------------------

    def _reset(
        self,
        make_index: Callable[[Path, int], OffsetIndex],
        make_time_index: Callable[[Path, int], TimeIndex],
    ) -> None:
        self.index.file.close()
        self.time_index.file.close()
        self.index = make_index(self.index.file.path, self.base_offset)
        self.time_index = make_time_index(self.time_index.file.path, self.base_offset)
        self.size_bytes = 0
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        self.bytes_since_index = 0
        self.tail = Tail()
        self.rolling_base_ms = None

    def _rescan_tail(self) -> None:
        """Recompute next offset, max timestamp and index spacing from the last index entry."""
        start = self.index.last_position()
        pos = start if start is not None else 0
        last_time = self.time_index.last()
        self.max_timestamp, self.offset_of_max_timestamp = last_time or (-1, self.base_offset)
        expected = self.index.offsets[-1] + self.base_offset if start is not None else None
        next_offset = self.base_offset
        end = self.size_bytes
        window = _Window(self.fd, end)
        self.tail = tail = Tail()
        while pos < end:
            header = window.header(pos)
            size = LENGTH_PREFIX_BYTES + header[H_LENGTH] if header else 0
            if header is None or header[H_LENGTH] < MIN_BATCH_LENGTH or pos + size > end:
                raise CorruptIndexError(f"{self.log_path.name}: no whole batch at {pos}")
            if expected is not None and (
                header[H_BASE] < expected or (header[H_BASE] > expected and not self.allow_gaps)
            ):
                raise CorruptIndexError(f"{self.log_path.name}: offsets break at {pos}")
            if header[H_MAX_TS] > self.max_timestamp:
                self.max_timestamp = header[H_MAX_TS]
                self.offset_of_max_timestamp = header[H_BASE]
            next_offset = expected = header[H_BASE] + header[H_LAST_DELTA] + 1
            if pos != start:  # the indexed batch itself is found through the index
                tail.add(pos, size, header[H_BASE], next_offset - 1)
            pos += size
        if start is not None and start >= self.size_bytes:
            raise CorruptIndexError(f"{self.index.file.path.name} points past the log")
        self.next_offset = next_offset
        self.bytes_since_index = self.size_bytes - (start or 0)
        self._set_rolling_base()

    def _set_rolling_base(self) -> None:
        """After a reload, segment.ms counts from the first batch's max timestamp (as Kafka)."""
        if self.size_bytes == 0:
            self.rolling_base_ms = None
            return
        header = _Window(self.fd, self.size_bytes).header(0)
        self.rolling_base_ms = header[H_MAX_TS] if header is not None else None
