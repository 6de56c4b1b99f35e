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

Recovery (checking the file batch by batch, cutting a torn tail, rebuilding the indexes) and
telling a segment of another record format are segment_recovery.py's; the checks a batch must
pass are batch_checks.py's. The segment keeps the bookkeeping both rely on (`reset`, `account`,
`set_rolling_base`).
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from broker.log.dir_failure import LogDirIOError
from broker.log.index import CorruptIndexError, OffsetIndex, TimeIndex
from broker.log.txn_index import TXN_INDEX_SUFFIX, TxnIndex
from protocol.batch import HEADER, HEADER_BYTES, LENGTH_PREFIX_BYTES

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
MIN_BATCH_LENGTH = HEADER_BYTES - LENGTH_PREFIX_BYTES
MAX_RELATIVE_OFFSET = (1 << 31) - 1  # offsets in a segment stay within base + this (index)
# Fields of a HEADER.unpack tuple.
H_BASE, H_LENGTH, H_EPOCH, H_ATTRIBUTES, H_LAST_DELTA, H_MAX_TS, H_COUNT = 0, 1, 2, 5, 6, 8, 12
_PEEK = struct.Struct(">qi11xi")  # base offset, batch length, last offset delta
assert _PEEK.size == 27

OnEpoch = Callable[[int, int], object]
"""Called with (leader epoch, base offset) for each batch recovery checks."""


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
        # account(), inlined: this runs once per appended batch.
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

    def account(
        self, pos: int, size: int, base: int, last: int, max_ts: int, interval: int
    ) -> None:
        """Take in a checked batch at `pos` that is already in the file (recovery's)."""
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

    def batches_by_time(self, timestamp_ms: int) -> Iterator[tuple[int, tuple[int, ...]]]:
        """(position, header) of each batch whose max timestamp is >= the given, in offset
        order, from the time index's entry for it (ListOffsets by time looks inside them)."""
        if self.max_timestamp < timestamp_ms:
            return
        offset = self.time_index.offset_before(timestamp_ms)
        pos = self.index.lookup(offset) if offset is not None else 0
        window = _Window(self.fd, self.size_bytes)
        while (header := window.header(pos)) is not None:
            if header[H_MAX_TS] >= timestamp_ms:
                yield pos, header
            pos += LENGTH_PREFIX_BYTES + header[H_LENGTH]

    def epochs(self, on_epoch: OnEpoch) -> None:
        """Call on_epoch(epoch, base offset) for every batch (rebuilding the epoch cache)."""
        window = _Window(self.fd, self.size_bytes)
        pos = 0
        while (header := window.header(pos)) is not None:
            on_epoch(header[H_EPOCH], header[H_BASE])
            pos += LENGTH_PREFIX_BYTES + header[H_LENGTH]

    # ----- helpers --------------------------------------------------------------------------

    def reset(
        self,
        make_index: Callable[[Path, int], OffsetIndex],
        make_time_index: Callable[[Path, int], TimeIndex],
    ) -> None:
        """Forget every batch and start both indexes anew (recovery's first step)."""
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
        self.set_rolling_base()

    def set_rolling_base(self) -> None:
        """After a reload, segment.ms counts from the first batch's max timestamp (as Kafka)."""
        if self.size_bytes == 0:
            self.rolling_base_ms = None
            return
        header = _Window(self.fd, self.size_bytes).header(0)
        self.rolling_base_ms = header[H_MAX_TS] if header is not None else None
