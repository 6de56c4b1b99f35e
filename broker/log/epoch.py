"""The leader-epoch cache: for each leader epoch, the first offset written in it.

Kept as sorted (epoch, start_offset) pairs, both strictly increasing, and persisted to
`leader-epoch-checkpoint` (see checkpoint.py for the layout) every time it changes. It answers
OffsetsForLeaderEpoch with Kafka's rules (`end_offset_for`), and follows the log when it is
truncated at either end. Changes are rare (one per leader change), so every change is written
through at once.
"""

from __future__ import annotations

import bisect
from pathlib import Path

from broker.log import checkpoint

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, path: Path, entries: list[tuple[int, int]] | None = None) -> None:
        self.path = path
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries or []:
            self._epochs.append(epoch)
            self._starts.append(start)
        self._check()

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
        return cls(path, entries), True

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset` if it is newer than the latest epoch.

        Batches of an older or the same epoch change nothing (Kafka's cache ignores them too).
        Returns whether the cache changed (and was written).
        """
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
        self.flush()
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's OffsetsForLeaderEpoch answer: (epoch found, end offset of that epoch).

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
        self._check()
        checkpoint.write_entries(self.path, self.entries(), 2)

    def _check(self) -> None:
        assert _well_formed(self.entries()), f"epoch cache out of order: {self.entries()}"


def _well_formed(entries: list[tuple[int, int]]) -> bool:
    for i, (epoch, start) in enumerate(entries):
        if epoch < 0 or start < 0:
            return False
        if i and (epoch <= entries[i - 1][0] or start <= entries[i - 1][1]):
            return False
    return True
