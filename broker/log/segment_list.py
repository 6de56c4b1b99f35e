"""A log's segments, oldest first, and what the log cleaner sees of them.

`SegmentList` keeps the segments (`all`; the last is the active one) with their base offsets
(`bases`, for bisect), the offsets the log was truncated to (`truncations`; their count is the
`generation`, which a cleaning planned before a truncation must not be swapped in across), the
segments waiting out file.delete.delay.ms (`deletes`, retention.py), and whether the log may
hold offset gaps (`has_gaps`).

GAPS_FILE (segment.py) is present once the log may hold an offset gap: the cleaner wrote it
before its first swap here, or a follower before appending a batch past its end (its leader's
cleaner). Without it a gap is a torn or broken log (recovery cuts there), as before compaction;
with it, offsets need only increase.

`replace` swaps a cleaned segment in for the consecutive closed segments it replaces, by
Kafka's suffix protocol (see there). The cleaner (cleaner/) reads `closed()`, `active`,
`generation` and `truncated_below`; Log owns the list and changes it.
"""

from __future__ import annotations

from pathlib import Path

from broker.log import checkpoint
from broker.log.cleaner import hold as cleaner_hold
from broker.log.retention import DeferredDeletes
from broker.log.segment import GAPS_FILE, SWAP_END_SUFFIX, SWAP_SUFFIX, Segment, segment_name
from protocol.clock import Clock


class SegmentList:
    def __init__(self, directory: Path, clock: Clock) -> None:
        self.directory = directory
        self.all: list[Segment] = []
        self.bases: list[int] = []  # base offsets of `all`, for bisect
        self.deletes = DeferredDeletes(clock)  # .deleted segments (retention.py)
        self.truncations: list[int] = []  # offsets truncated to; len() is the generation
        self.has_gaps = (directory / GAPS_FILE).exists()

    @property
    def active(self) -> Segment:
        return self.all[-1]

    @property
    def count(self) -> int:
        return len(self.all)

    def base_offsets(self) -> list[int]:
        return list(self.bases)

    def closed(self) -> list[Segment]:
        """Every segment but the active one, oldest first (the cleaner reads these)."""
        return self.all[:-1]

    @property
    def generation(self) -> int:
        """Changes whenever batches are removed (a truncation): a cleaning planned before
        must not be swapped in."""
        return len(self.truncations)

    def truncated_below(self, generation: int) -> int | None:
        """The lowest offset truncated to since `generation` (None: no truncation since)."""
        since = self.truncations[generation:]
        return min(since) if since else None

    def purge_deleted(self) -> int:
        """Close and unlink `.deleted` segments whose delay has passed. Returns how many."""
        return self.deletes.purge()

    def replace(self, old: list[Segment], new: Segment, generation: int, delay_ms: int) -> bool:
        """Swap the cleaner's `new` segment (files under `.cleaned`, synced, with its
        `.swap-end` file and GAPS_FILE written and synced by the cleaner's thread) in for the
        consecutive closed segments `old`, by Kafka's suffix protocol:

        1. `.cleaned` -> `.swap`: from here a restart finishes the swap (recovery.py);
        2. the old segments but the first renamed `.deleted` (deferred, for reads in flight);
        3. `.swap` -> the final names, over the first old segment's files.

        Renames only: nothing here waits for the disk (the caller fsyncs the directory off the
        loop afterwards; a crash before that finds either the old names or the swap, which
        recovery finishes). False (and nothing done) when the log changed since the cleaning
        was planned: a truncation or the old segments gone (retention)."""
        if generation != self.generation:
            return False
        try:
            i = next(k for k, seg in enumerate(self.all) if seg is old[0])
        except StopIteration:
            return False
        if i + len(old) >= len(self.all) or any(
            a is not b for a, b in zip(self.all[i : i + len(old)], old, strict=True)
        ):
            return False
        assert new.base_offset == old[0].base_offset and new.next_offset <= old[-1].next_offset
        self.mark_gaps()
        new.allow_gaps = True
        end_file = self.directory / (segment_name(new.base_offset) + SWAP_END_SUFFIX)
        assert checkpoint.read_offset(end_file) == old[-1].next_offset, "no swap-end file"
        new.rename_suffix(SWAP_SUFFIX)
        self.hold("swap")
        due = self.deletes.due_ms(delay_ms)
        for seg in old[1:]:
            seg.rename_deleted()
            self.deletes.add(due, seg)
        self.hold("deleted")
        new.rename_suffix("")
        old[0].replaced = True
        self.deletes.add(due, old[0])
        end_file.unlink()
        self.all[i : i + len(old)] = [new]
        self.bases[i : i + len(old)] = [new.base_offset]
        return True

    def mark_gaps(self) -> None:
        """From now on the log may hold offset gaps (GAPS_FILE), durably, before any does."""
        if self.has_gaps:
            return
        if not (self.directory / GAPS_FILE).exists():  # the cleaner's thread writes it first
            checkpoint.write_atomically(self.directory / GAPS_FILE, b"")
        self.has_gaps = True
        for seg in self.all:
            seg.allow_gaps = True

    def hold(self, step: str) -> None:
        """A test hook (cleaner/hold.py): may block at a named step of a swap."""
        cleaner_hold.hold(self.directory.parent, step)
