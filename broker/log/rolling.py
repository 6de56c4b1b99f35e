"""When a log's active segment rolls (Kafka's LogSegment.shouldRoll).

A non-empty active segment rolls before a batch when the batch would take it past
segment.bytes, when segment.ms less a jitter has passed since its first batch's timestamp
(`rolling_base_ms`), when its offset index is full (segment.index.bytes), or when the batch's
last offset is too far from the base for a relative index entry. A compacted log rolls by
max.compaction.lag.ms too (Kafka's maxSegmentMs), or records in its active segment (which the
cleaner never touches) could outlive that lag.

The jitter (segment.jitter.ms) is drawn once per active segment from `random_below`, injected
so tests can make it deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from broker.log.config import OFFSET_INDEX_ENTRY_BYTES, LogConfig
from broker.log.segment import MAX_RELATIVE_OFFSET, Segment


class RollPolicy:
    def __init__(self) -> None:
        # segment.jitter.ms: random.randrange by default, a test's own to be deterministic
        self.random_below: Callable[[int], int] = random.randrange
        self._jitter: tuple[int, int] | None = None  # (active segment's base, its jitter)

    def should_roll(
        self, cfg: LogConfig, seg: Segment, size: int, last_offset: int, now_ms: int
    ) -> bool:
        # Kafka's maxSegmentMs: a compacted log rolls by max.compaction.lag.ms too, or records
        # in its active segment (which the cleaner never touches) could outlive that lag
        segment_ms = (
            min(cfg.segment_ms, cfg.max_compaction_lag_ms) if cfg.compact else cfg.segment_ms
        )
        roll_ms = segment_ms - self._roll_jitter_ms(cfg, seg)
        return (
            seg.size_bytes + size > cfg.segment_bytes
            or (seg.rolling_base_ms is not None and now_ms - seg.rolling_base_ms >= roll_ms)
            or len(seg.index) >= cfg.segment_index_bytes // OFFSET_INDEX_ENTRY_BYTES
            or last_offset - seg.base_offset > MAX_RELATIVE_OFFSET
        )

    def _roll_jitter_ms(self, cfg: LogConfig, seg: Segment) -> int:
        """segment.jitter.ms: a jitter in [0, min(jitter, segment.ms)) taken off segment.ms,
        drawn once per active segment (Kafka's randomSegmentJitter) from `self.random_below`
        (injected: tests make it deterministic)."""
        jitter_max = min(cfg.segment_jitter_ms, cfg.segment_ms)
        if jitter_max <= 0:
            return 0
        if self._jitter is None or self._jitter[0] != seg.base_offset:
            self._jitter = (seg.base_offset, self.random_below(jitter_max))
        return self._jitter[1]
