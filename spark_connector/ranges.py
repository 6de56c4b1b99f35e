"""Offset-range decisions, as pure functions (no I/O, no Spark): what each Spark task reads.

- `resolve_ranges` turns per-partition start and end offsets (with -2/-1 still in them) into
  `OffsetRange`s bounded by each partition's [log start, high watermark), and reports the
  stretches that are gone (data loss: retention deleted them, or a truncation moved the end
  below where a range starts) so the caller can fail or warn, per `failOnDataLoss`.
- `split_ranges` is Spark's KafkaOffsetRangeCalculator: a range larger than
  `maxRecordsPerPartition` is first cut into equal pieces no larger than it; then, with
  `minPartitions` above the number of ranges, ranges are cut in proportion to their size
  (small ones stay whole, the last piece of a range takes the rounding), so at least about
  `minPartitions` tasks run.
- `rate_limit` is the Kafka micro-batch source's `maxOffsetsPerTrigger`: the limit is shared
  across partitions in proportion to their backlog; a share below one record rounds up so that
  no partition starves, shares above round down.
- `delay_batch` is its `minOffsetsPerTrigger` / `maxTriggerDelay`: a micro-batch waits while
  fewer new offsets than the minimum are there, until the delay since the last batch passed.
- `offsets_behind` is its source metrics (`avgOffsetsBehindLatest` and the others): how far
  a micro-batch's end is from each partition's latest offset.

A topic-partition is a `(topic, partition)` tuple throughout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from spark_connector.options import EARLIEST, LATEST

TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OffsetRange:
    topic: str
    partition: int
    from_offset: int  # inclusive
    until_offset: int  # exclusive

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset

    @property
    def tp(self) -> TP:
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class DataLoss:
    """Offsets [from_offset, until_offset) of a partition that can no longer be read."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int
    reason: str

    def message(self) -> str:
        return (
            f"{self.topic}/{self.partition}: offsets {self.from_offset}..{self.until_offset - 1}"
            f" are lost ({self.reason})"
        )


def resolve_ranges(
    start: Mapping[TP, int],
    end: Mapping[TP, int],
    earliest: Mapping[TP, int],
    latest: Mapping[TP, int],
) -> tuple[list[OffsetRange], list[DataLoss]]:
    """One range per partition in `end`; -2/-1 resolve to earliest/latest (the high watermark).

    A start below the log start loses [start, log start); a start above the high watermark
    (a truncation) loses [start, end). An end above the high watermark is cut to it.
    """
    ranges: list[OffsetRange] = []
    lost: list[DataLoss] = []
    for tp in sorted(end):
        lo, hi = earliest[tp], latest[tp]
        frm = _resolve(start.get(tp, EARLIEST), lo, hi)
        until = min(_resolve(end[tp], lo, hi), hi)
        if frm < lo:
            lost.append(DataLoss(*tp, frm, min(lo, max(until, frm)), "deleted by retention"))
            frm = lo
        if frm > hi:
            lost.append(DataLoss(*tp, hi, frm, "the log was truncated below this offset"))
            frm = hi
        until = max(until, frm)
        ranges.append(OffsetRange(tp[0], tp[1], frm, until))
    return ranges, [x for x in lost if x.until_offset > x.from_offset]


def _resolve(offset: int, earliest: int, latest: int) -> int:
    if offset == EARLIEST:
        return earliest
    if offset == LATEST:
        return latest
    return offset


def split_ranges(
    ranges: Sequence[OffsetRange], min_partitions: int | None, max_records: int | None = None
) -> list[OffsetRange]:
    """Spark's KafkaOffsetRangeCalculator.getRanges (without executor locations)."""
    nonempty = [r for r in ranges if r.size > 0]
    if max_records is not None:
        nonempty = [piece for r in nonempty for piece in _cut(r, -(-r.size // max_records))]
    if min_partitions is None or len(nonempty) >= min_partitions:
        return nonempty
    total = sum(r.size for r in nonempty)
    unsplit = {i for i, r in enumerate(nonempty)
               if _part_count(r.size, total, min_partitions) == 1}  # fmt: skip
    unsplit_total = sum(nonempty[i].size for i in unsplit)
    split_total = total - unsplit_total
    split_min = max(min_partitions - len(unsplit), 1)
    out: list[OffsetRange] = []
    for i, r in enumerate(nonempty):
        parts = 1 if i in unsplit else _part_count(r.size, split_total, split_min)
        out.extend(_cut(r, parts))
    return out


def _cut(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """`r` in `parts` pieces of about equal size (the last takes the rounding), none empty."""
    out = []
    remaining, frm = r.size, r.from_offset
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        until = min(frm + this, r.until_offset)
        out.append(OffsetRange(r.topic, r.partition, frm, until))
        frm = until
    return [p for p in out if p.size > 0]


def _part_count(size: int, total: int, min_parts: int) -> int:
    # Scala's math.round rounds half up
    return max(math.floor(size / total * min_parts + 0.5), 1)


def rate_limit(
    limit: int, start: Mapping[TP, int], until: Mapping[TP, int], new_earliest: Mapping[TP, int]
) -> dict[TP, int]:
    """End offsets after taking at most about `limit` records, shared by backlog.

    `start` lacks partitions that appeared since; those begin at `new_earliest`.
    """
    sizes: dict[TP, int] = {}
    for tp, end in until.items():
        begin = start.get(tp, new_earliest.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(until)
    out: dict[TP, int] = {}
    for tp, end in until.items():
        if tp not in sizes:
            out[tp] = end
            continue
        begin = start[tp] if tp in start else new_earliest[tp]
        prorate = limit * (sizes[tp] / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end, begin + share)
    return out


def delay_batch(
    min_offsets: int, start: Mapping[TP, int], until: Mapping[TP, int],
    since_last_batch_ms: float, max_delay_ms: int,
) -> bool:  # fmt: skip
    """Whether the next micro-batch waits (KafkaMicroBatchStream.delayBatch): not once the
    delay since the last batch has passed; else while fewer than `min_offsets` offsets are new
    (a partition missing from `start` counts from 0, as Spark counts it)."""
    if since_last_batch_ms >= max_delay_ms:
        return False
    return sum(end - start.get(tp, 0) for tp, end in until.items()) < min_offsets


def offsets_behind(end: Mapping[TP, int], latest: Mapping[TP, int]) -> dict[str, str]:
    """Spark's Kafka source metrics for a micro-batch ending at `end` (KafkaMicroBatchStream
    .metrics): offsets behind each partition's latest, their min, max and average, as strings;
    {} when nothing is known."""
    behind = [max(latest[tp] - offset, 0) for tp, offset in end.items() if tp in latest]
    if not behind:
        return {}
    return {
        "minOffsetsBehindLatest": str(min(behind)),
        "maxOffsetsBehindLatest": str(max(behind)),
        "avgOffsetsBehindLatest": str(float(sum(behind)) / len(behind)),
    }
