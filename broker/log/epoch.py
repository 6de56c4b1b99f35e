"""The leader-epoch cache: for each leader epoch, the first offset written in it.

Kept as sorted (epoch, start_offset) pairs, both strictly increasing, and persisted to
`leader-epoch-checkpoint` (see checkpoint.py for the layout) every time it changes. It answers
OffsetForLeaderEpoch with Kafka's rules (`end_offset_for`), and follows the log when it is
truncated at either end. Changes are rare (one per leader change), so every change is written
through at once (Kafka's `assign` does the same: the file never misses an entry the cache has).
The one exception: a LeaderAndIsr that makes this broker leader of many partitions writes each
one's next content ahead, in threads (`assign_job`), before the loop applies it; the loop's
`assign` then finds the file already holding it. A write whose content is already on disk is
skipped (checkpoint.CheckpointFile).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from pathlib import Path

from broker.log import checkpoint

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    def __init__(
        self, path: Path, entries: list[tuple[int, int]] | None = None, on_disk: bool = False
    ) -> None:
        """`on_disk`: the file at `path` holds `entries` already."""
        self.path = path
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries or []:
            self._epochs.append(epoch)
            self._starts.append(start)
        self._check()
        self._file = checkpoint.CheckpointFile(path, _encode(self.entries()) if on_disk else None)

    @classmethod
    def absent(cls, path: Path) -> LeaderEpochCache:
        """The empty cache of a new log, whose file is not written: an absent file loads as
        untrusted, and an untrusted cache is rebuilt from the log's batches (none). Its first
        epoch, if it starts at offset 0, is not written either (`_first_unwritten`)."""
        cache = cls(path, on_disk=True)
        cache._unwritten = True
        return cache

    _unwritten = False  # the file does not exist (a new log's)

    def _first_unwritten(self) -> bool:
        """True when the cache is a new log's first epoch from offset 0 and the file was never
        written: left absent, it loads as untrusted and is rebuilt from the batches, which are
        all of that epoch from 0 (or none: an empty log answers the same either way). Saves a
        new partition's leader two fsyncs and three file operations."""
        return self._unwritten and len(self._epochs) == 1 and self._starts[0] == 0

    @classmethod
    def load(cls, path: Path) -> tuple[LeaderEpochCache, bool]:
        """(cache, trusted). An absent or corrupt file gives an empty, untrusted cache."""
        try:
            raw = checkpoint.read_entries(path, 2)
        except checkpoint.CorruptCheckpointError:
            return cls(path), False
        if raw is None:
            return cls(path), False
        entries = [(e[0], e[1]) for e in raw]
        if not _well_formed(entries):
            return cls(path), False
        return cls(path, entries, on_disk=True), True

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset` if it is newer than the latest epoch.

        Batches of an older or the same epoch change nothing (Kafka's cache ignores them too).
        Returns whether the cache changed (and was written, but for `_first_unwritten`).
        """
        if self._assign(epoch, start_offset):
            if not self._first_unwritten():  # (which a later flush, at close, writes)
                self.flush()
            return True
        return False

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or (self._epochs and epoch <= self._epochs[-1]):
            return False
        if self._starts and start_offset < self._starts[-1]:
            raise AssertionError(
                f"epoch {epoch} starts at {start_offset}, before epoch "
                f"{self._epochs[-1]} at {self._starts[-1]}"
            )
        if self._starts and start_offset == self._starts[-1]:
            # The previous epoch wrote nothing: the new one replaces it.
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def assign_job(self, epoch: int, start_offset: int) -> Callable[[], None] | None:
        """A call that writes the file as `assign(epoch, start_offset)` will leave it (from any
        thread), or None when that assign would change nothing. The cache is not changed."""
        ahead = LeaderEpochCache(self.path, self.entries())
        ahead._unwritten = self._unwritten
        if not ahead._assign(epoch, start_offset) or ahead._first_unwritten():
            return None
        return self._file.write_job(_encode(ahead.entries()))

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's OffsetForLeaderEpoch answer: (epoch found, end offset of that epoch).

        - the latest epoch: (epoch, log end offset)
        - an epoch above the latest, or an empty cache: (-1, -1)
        - an epoch below the first known: (epoch, start offset of the first known epoch)
        - otherwise: (largest known epoch <= epoch, start offset of the next known epoch)
        """
        if epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self._epochs[-1]:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if higher == 0:
            return epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after `end_offset` (the log was truncated there)."""
        keep = bisect.bisect_left(self._starts, end_offset)
        if keep < len(self._starts):
            del self._epochs[keep:], self._starts[keep:]
            self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: the epoch holding it starts there."""
        below = bisect.bisect_left(self._starts, start_offset)  # entries starting before it
        if below == 0:
            return
        if below < len(self._starts) and self._starts[below] == start_offset:
            del self._epochs[:below], self._starts[:below]
        else:
            del self._epochs[: below - 1], self._starts[: below - 1]
            self._starts[0] = start_offset
        self.flush()

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()
        self.flush()

    def flush(self) -> None:
        """Write the file now, on this thread, unless it holds the entries already."""
        self._check()
        self._unwritten = False
        self._file.write(_encode(self.entries()))

    def retire(self) -> None:
        """Write nothing more (the log is closed, deleted or offline)."""
        self._file.retire()

    def _check(self) -> None:
        assert _well_formed(self.entries()), f"epoch cache out of order: {self.entries()}"


def _encode(entries: list[tuple[int, int]]) -> bytes:
    return checkpoint.encode(entries, 2)


def _well_formed(entries: list[tuple[int, int]]) -> bool:
    for i, (epoch, start) in enumerate(entries):
        if epoch < 0 or start < 0:
            return False
        if i and (epoch <= entries[i - 1][0] or start <= entries[i - 1][1]):
            return False
    return True
