"""Retention and the deferred deletion of a log's segments.

`retained_count`: how many of the oldest closed segments retention.ms and retention.bytes
delete (Kafka's deletableSegments). retention.ms counts from a segment's largest timestamp;
retention.bytes deletes whole segments, oldest first, while the log stays above it. The caller
(Log.delete_retained_segments) passes only the segments it may delete: below the high
watermark and the first unstable offset, and only when cleanup.policy has delete.

`DeferredDeletes`: segments removed by retention, truncation or a cleaner's swap are renamed
`.deleted` and kept open until file.delete.delay.ms has passed, so a read in flight (a
`FileSlice` on the segment's fd) stays readable; `purge` closes and unlinks those that are due.
"""

from __future__ import annotations

from broker.log.config import LogConfig
from broker.log.segment import Segment
from protocol.clock import Clock


def retained_count(closed: list[Segment], cfg: LogConfig, now_ms: int, size_bytes: int) -> int:
    """How many of `closed` (oldest first) retention deletes; `size_bytes`: the log's size."""
    count = 0
    if cfg.retention_ms is not None:
        while count < len(closed) and now_ms - closed[count].max_timestamp > cfg.retention_ms:
            count += 1
    if cfg.retention_bytes is not None:
        excess = size_bytes - cfg.retention_bytes
        by_size = 0
        while by_size < len(closed) and closed[by_size].size_bytes <= excess:
            excess -= closed[by_size].size_bytes
            by_size += 1
        count = max(count, by_size)
    return count


class DeferredDeletes:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._pending: list[tuple[int, Segment]] = []  # (delete at monotonic ms, seg)

    def due_ms(self, delay_ms: int) -> int:
        return self.clock.monotonic_ms() + delay_ms

    def add(self, due: int, seg: Segment) -> None:
        """Delete `seg` (renamed already) at monotonic `due`."""
        self._pending.append((due, seg))

    def defer(self, segments: list[Segment], delay_ms: int) -> None:
        """Rename `segments` `.deleted` and delete them in `delay_ms`."""
        due = self.due_ms(delay_ms)
        for seg in segments:
            seg.rename_deleted()
            self._pending.append((due, seg))

    def purge(self) -> int:
        """Close and unlink `.deleted` segments whose delay has passed. Returns how many."""
        now = self.clock.monotonic_ms()
        due = [seg for at, seg in self._pending if at <= now]
        self._pending = [(at, s) for at, s in self._pending if at > now]
        for seg in due:
            seg.unlink()
        return len(due)

    def unlink_all(self) -> None:
        """Close and unlink every one now (the log closes)."""
        for _, seg in self._pending:
            seg.unlink()
        self._pending.clear()
