"""`<base>.txnindex`: the aborted transactions whose marker lies in a segment (Kafka's
TransactionIndex), so a read_committed fetch can list the aborted ranges it returns.

Entries of 34 bytes, big-endian, in marker-offset order (Kafka's layout, version 0):

    0   2  version             0
    2   8  producer id
   10   8  first offset        the transaction's first data offset (maybe in an older segment)
   18   8  last offset         its ABORT marker's offset (in this segment)
   26   8  last stable offset  the LSO when the abort was appended (Kafka's
                               lastStableOffset(completedTxn): the next other ongoing txn's
                               first offset, else last offset + 1); lets a search stop early

Who writes: the log, when an abort marker is appended (leader or follower) or replayed while
rebuilding producer state; replay appends only entries past the index's last (`append_if_new`),
so replaying a tail the index already covers adds nothing. Recovery of a segment empties its
index (`clear`) and the replay from a snapshot at or before it (broker/log/snapshot.py) fills
it again. Truncation cuts the entries whose marker is at or past the cut. The file is created
with its first entry and written through (aborts are rare); `seal` fsyncs it with the
segment's other indexes. The whole file is held in memory (a list of tuples).

`load` checks the size is a multiple of 34, every version 0 and marker offsets increasing; if
not it raises CorruptIndexError and the segment is recovered (its index rebuilt by replay).
"""

from __future__ import annotations

import itertools
import os
import struct
from pathlib import Path

from broker.log.index import CorruptIndexError, _IndexFile
from broker.txn_state import AbortedTxn, aborted_in_range

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY = struct.Struct(">hqqqq")
ENTRY_BYTES = ENTRY.size
assert ENTRY_BYTES == 34
VERSION = 0
MAX_FILE_BYTES = 1 << 31


class TxnIndex:
    def __init__(self, path: Path) -> None:
        self.file = _IndexFile(path)
        self.entries: list[AbortedTxn] = []

    @property
    def path(self) -> Path:
        return self.file.path

    def load(self) -> None:
        """Read the file (absent: no aborts). Raises CorruptIndexError."""
        try:
            with open(self.path, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            self.entries = []
            return
        if len(data) % ENTRY_BYTES or len(data) > MAX_FILE_BYTES:
            raise CorruptIndexError(f"{self.path.name} has a torn entry ({len(data)} bytes)")
        entries = []
        for version, *fields in ENTRY.iter_unpack(data):
            if version != VERSION:
                raise CorruptIndexError(f"{self.path.name}: entry version {version}")
            entries.append(AbortedTxn(*fields))
        lasts = [e.last_offset for e in entries]
        if any(b <= a for a, b in itertools.pairwise(lasts)):
            raise CorruptIndexError(f"{self.path.name}: marker offsets do not increase")
        self.entries = entries

    @property
    def last_marker_offset(self) -> int:
        return self.entries[-1].last_offset if self.entries else -1

    def append(self, entry: AbortedTxn) -> None:
        assert entry.last_offset > self.last_marker_offset, (entry, self.last_marker_offset)
        assert entry.first_offset <= entry.last_offset
        self.entries.append(entry)
        self.file.append(ENTRY.pack(VERSION, *entry))
        self.file.write_pending()

    def append_if_new(self, entry: AbortedTxn) -> bool:
        """Append unless the index already holds this marker (a replay over indexed batches)."""
        if entry.last_offset <= self.last_marker_offset:
            return False
        self.append(entry)
        return True

    def collect(self, start_offset: int, upper_offset: int) -> tuple[list[tuple[int, int]], bool]:
        """(aborted txns overlapping [start, upper), complete): complete when an entry's LSO
        reaches `upper`, so no later segment can hold more (Kafka's TxnIndexSearchResult)."""
        found = aborted_in_range(self.entries, start_offset, upper_offset)
        done = any(e.last_stable_offset >= upper_offset for e in self.entries)
        return found, done

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or past `offset`."""
        keep = sum(1 for e in self.entries if e.last_offset < offset)
        if keep == len(self.entries):
            return
        del self.entries[keep:]
        if self.path.exists():
            self.file.truncate(keep * ENTRY_BYTES)

    def clear(self) -> None:
        self.truncate_to(-1)
        self.entries = []

    def seal(self) -> None:
        if self.entries or self.path.exists():
            self.file.seal()

    def close(self) -> None:
        self.file.close()

    def rename(self, path: Path) -> None:
        self.file.close()
        self.file.rename(path)

    def unlink(self) -> None:
        self.file.close()
        if self.path.exists():
            os.unlink(self.path)
