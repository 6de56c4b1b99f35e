"""The sparse per-segment indexes, held in memory as arrays and appended to files.

`<base>.index` (OffsetIndex), 16 bytes per entry, big-endian:

    0  4  relative offset   base offset of an indexed batch minus the segment's base offset
    4  4  position          byte position of that batch in `<base>.log`
    8  4  relative last     last offset of that batch minus the segment's base offset
   12  4  size              bytes of that batch

(Kafka's entry stops after the position; the batch's extent lets a read resolve an indexed
batch from memory, with no pread of its header.)

`<base>.timeindex` (TimeIndex), 12 bytes per entry, big-endian:

    0  8  timestamp         the largest batch max-timestamp in the segment so far (ms)
    8  4  relative offset   base offset of the batch that carried it, minus the base offset

An offset entry is written for a batch once `index.interval.bytes` have been appended since
the previous entry. A time entry is written alongside it when the segment's max timestamp has
grown (and once more when the segment is sealed). Both keys strictly increase in each file, so
lookups are a bisect over the in-memory arrays. The file is append-only while the segment is
active; `seal()` fsyncs and closes it when the segment rolls. `load` checks the whole file
(size a multiple of the entry size, keys increasing) and raises CorruptIndexError so that the
caller rebuilds the index from the log.
"""

from __future__ import annotations

import bisect
import operator
import os
import struct
import sys
from array import array
from pathlib import Path

from broker.log.dir_failure import LogDirIOError
from protocol.errors import KafkaStorageError

OFFSET_ENTRY = struct.Struct(">IIII")
TIME_ENTRY = struct.Struct(">qI")
MAX_INDEX_FILE_BYTES = 1 << 31


class CorruptIndexError(KafkaStorageError):
    """An index file that fails its checks; it is rebuilt from the segment's log."""


def _strictly_increasing(values: list[int]) -> bool:
    return len(set(values)) == len(values) and values == sorted(values)


def _read_file(path: Path, entry_bytes: int) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_INDEX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise CorruptIndexError(f"{path.name} is missing") from None
    if len(data) % entry_bytes or len(data) > MAX_INDEX_FILE_BYTES:
        raise CorruptIndexError(f"{path.name} has a torn entry ({len(data)} bytes)")
    return data


class _IndexFile:
    """The append-only file behind an index; opened on demand, closed when sealed.

    Entries are buffered (up to PENDING_BYTES) and written in one system call: an index that
    lags its log after a crash is either still correct (sparser) or fails its checks and is
    rebuilt, and the active segment is recovered from its log anyway.
    """

    PENDING_BYTES = 4096

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._pending = bytearray()

    def fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def append(self, data: bytes) -> None:
        self._pending += data
        if len(self._pending) >= self.PENDING_BYTES:
            self.write_pending()

    def write_pending(self) -> None:
        if self._pending:
            written = os.write(self.fd(), self._pending)
            if written != len(self._pending):
                raise LogDirIOError(f"short write to {self.path.name}")
            self._pending.clear()

    def truncate(self, size: int) -> None:
        self.write_pending()
        os.ftruncate(self.fd(), size)

    def seal(self) -> None:
        """Write what is buffered, fsync and close (creating the file if no entry ever came:
        a sealed segment always has its indexes)."""
        self.write_pending()
        if self._fd is None and self.path.exists():
            return  # nothing written since it was loaded
        fd = self.fd()
        os.fdatasync(fd)
        os.close(fd)
        self._fd = None

    def close(self) -> None:
        """Close without writing what is buffered (as a crash would)."""
        self._pending.clear()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path


class OffsetIndex:
    """Sparse: one entry per indexed batch, keys strictly increasing.

    Besides Kafka's (relative offset, position), an entry holds the indexed batch's last offset
    and size, so that a read can resolve an indexed batch without touching the log file.
    """

    def __init__(self, path: Path, base_offset: int) -> None:
        self.base_offset = base_offset
        self.file = _IndexFile(path)
        self.offsets = array("q")  # relative base offsets
        self.positions = array("q")
        self.lasts = array("q")  # relative last offsets
        self.sizes = array("q")  # batch sizes in bytes

    @classmethod
    def create(cls, path: Path, base_offset: int) -> OffsetIndex:
        index = cls(path, base_offset)
        index.file.truncate(0)
        return index

    @classmethod
    def load(cls, path: Path, base_offset: int, log_size: int) -> OffsetIndex:
        data = _read_file(path, OFFSET_ENTRY.size)
        flat = array("I")
        assert flat.itemsize == 4, "array('I') must hold 4-byte items"
        flat.frombytes(data)
        if sys.byteorder == "little":
            flat.byteswap()
        index = cls(path, base_offset)
        index.offsets = array("q", flat[0::4])
        index.positions = array("q", flat[1::4])
        index.lasts = array("q", flat[2::4])
        index.sizes = array("q", flat[3::4])
        if not index._well_formed(log_size):
            raise CorruptIndexError(f"{path.name}: entries out of order or past the log")
        return index

    def _well_formed(self, log_size: int) -> bool:
        offsets, positions, lasts = self.offsets, self.positions, self.lasts
        ends = array("q", map(operator.add, positions, self.sizes))
        return (
            all(map(operator.ge, lasts, offsets))
            and all(map(operator.gt, offsets[1:], lasts[:-1]))
            and all(map(operator.le, ends[:-1], positions[1:]))
            and all(map(operator.gt, ends, positions))
            and (not ends or ends[-1] <= log_size)
        )

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def size_bytes(self) -> int:
        return len(self.offsets) * OFFSET_ENTRY.size

    def append(self, offset: int, position: int, last_offset: int, size: int) -> None:
        relative, last = offset - self.base_offset, last_offset - self.base_offset
        # OFFSET_ENTRY.pack checks that each field fits in 32 bits.
        assert 0 <= relative <= last and size > 0
        assert not self.offsets or (
            relative > self.lasts[-1] and position >= self.positions[-1] + self.sizes[-1]
        ), f"index entry ({relative}, {position}) does not follow the last one"
        self.file.append(OFFSET_ENTRY.pack(relative, position, last, size))
        self.offsets.append(relative)
        self.positions.append(position)
        self.lasts.append(last)
        self.sizes.append(size)

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch with base offset <= offset (0 if none)."""
        i = bisect.bisect_right(self.offsets, offset - self.base_offset) - 1
        return self.positions[i] if i >= 0 else 0

    def last_position(self) -> int | None:
        return self.positions[-1] if self.positions else None

    def truncate_to(self, offset: int) -> None:
        """Drop entries for batches with base offset >= offset."""
        keep = bisect.bisect_left(self.offsets, offset - self.base_offset)
        if keep < len(self.offsets):
            del self.offsets[keep:], self.positions[keep:], self.lasts[keep:], self.sizes[keep:]
            self.file.truncate(keep * OFFSET_ENTRY.size)


class TimeIndex:
    """Max timestamp so far -> relative offset of the batch carrying it."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.base_offset = base_offset
        self.file = _IndexFile(path)
        self.timestamps = array("q")
        self.offsets = array("q")

    @classmethod
    def create(cls, path: Path, base_offset: int) -> TimeIndex:
        index = cls(path, base_offset)
        index.file.truncate(0)
        return index

    @classmethod
    def load(cls, path: Path, base_offset: int) -> TimeIndex:
        """Checked for order here; the caller checks the last entry against the log."""
        data = _read_file(path, TIME_ENTRY.size)
        index = cls(path, base_offset)
        for ts, rel in TIME_ENTRY.iter_unpack(data):
            index.timestamps.append(ts)
            index.offsets.append(rel)
        offsets = index.offsets.tolist()
        if not _strictly_increasing(index.timestamps.tolist()) or offsets != sorted(offsets):
            raise CorruptIndexError(f"{path.name}: entries out of order")
        return index

    def __len__(self) -> int:
        return len(self.timestamps)

    def last(self) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry."""
        if not self.timestamps:
            return None
        return self.timestamps[-1], self.offsets[-1] + self.base_offset

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add (timestamp, offset) if the timestamp is above the last entry's."""
        if self.timestamps and timestamp <= self.timestamps[-1]:
            return
        relative = offset - self.base_offset
        assert 0 <= relative < 1 << 32
        assert not self.offsets or relative >= self.offsets[-1]
        self.file.append(TIME_ENTRY.pack(timestamp, relative))
        self.timestamps.append(timestamp)
        self.offsets.append(relative)

    def offset_before(self, timestamp: int) -> int | None:
        """Offset of the last entry whose timestamp is < `timestamp` (None if none): every
        batch before that offset has a max timestamp below `timestamp` too."""
        i = bisect.bisect_left(self.timestamps, timestamp) - 1
        return self.offsets[i] + self.base_offset if i >= 0 else None

    def truncate_to(self, offset: int) -> None:
        keep = bisect.bisect_left(self.offsets, offset - self.base_offset)
        if keep < len(self.offsets):
            del self.timestamps[keep:], self.offsets[keep:]
            self.file.truncate(keep * TIME_ENTRY.size)
