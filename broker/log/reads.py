"""Reads of one partition's log: batches from an offset, and offsets found by timestamp.

`read` returns whole batches from the one holding an offset, within one segment file, as a
`FileSlice` on the segment's fd (the bytes are never copied here). Segments that retention or
truncation removes are renamed `.deleted` and closed only after file.delete.delay.ms
(retention.py), so a slice in flight stays readable; a truncation inside the active segment
shortens the file in place, so a slice past the cut may come up short (a sender must check
what pread/sendfile return).

`TimeLookup` answers ListOffsets by time: `offset_for_timestamp` walks the segments' time
indexes to the first batch that can hold the timestamp and finds the record inside it,
`offset_of_max_timestamp` answers MAX_TIMESTAMP (KIP-734) and keeps its answer until
another batch takes the maximum.

They see the segment list (segment_list.py) and the log start offset (durability.py), never
the log.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from typing import NamedTuple

from broker.log.dir_failure import LogDirIOError
from broker.log.durability import Durability
from broker.log.segment import (
    H_ATTRIBUTES,
    H_BASE,
    H_EPOCH,
    H_LAST_DELTA,
    H_LENGTH,
    H_MAX_TS,
    Segment,
)
from broker.log.segment_list import SegmentList
from protocol.batch import (
    LENGTH_PREFIX_BYTES,
    TIMESTAMP_TYPE_BIT,
    InvalidBatchError,
    Record,
    decode_records,
)
from protocol.codec import FileSlice
from protocol.errors import OdradekError, OffsetOutOfRangeError, UsageError


@dataclass(frozen=True, slots=True)
class ReadResult:
    slice: FileSlice | None  # None (and size 0) when there is nothing to read
    first_offset: int
    next_offset: int  # the offset after the last whole batch included
    size_bytes: int


def read(
    segments: list[Segment],
    bases: list[int],
    log_start_offset: int,
    name: str,
    offset: int,
    max_bytes: int,
    max_offset: int | None,
    min_one_batch: bool,
) -> ReadResult:
    """Whole batches from the one holding `offset`, within one segment file (`name`: the
    partition's, for errors)."""
    leo = segments[-1].next_offset
    if offset < log_start_offset or offset > leo:
        raise OffsetOutOfRangeError(
            f"offset {offset} is outside [{log_start_offset}, {leo}] of {name}"
        )
    if max_bytes < 0:
        raise UsageError(f"max_bytes {max_bytes} is negative")
    if offset == leo or (max_offset is not None and offset >= max_offset):
        return ReadResult(None, offset, offset, 0)
    i = bisect.bisect_right(bases, offset) - 1
    while i < len(segments):
        seg = segments[i]
        try:
            found = seg.read_range(offset, max_bytes, max_offset, min_one_batch)
        except OSError as exc:
            raise LogDirIOError(f"reading {seg.log_path.name}: {exc}") from None
        i += 1
        if found is None:
            continue
        pos, length, first, next_offset = found
        if length == 0:
            break
        return ReadResult(FileSlice(seg.fd, pos, length), first, next_offset, length)
    return ReadResult(None, offset, offset, 0)


class Found(NamedTuple):
    """A ListOffsets answer by time: a record's offset and timestamp, its batch's epoch."""

    offset: int
    timestamp_ms: int
    leader_epoch: int  # -1: the batch carries none


class TimeLookup:
    """Offsets by timestamp in a log's segments (ListOffsets), never below its log start
    offset (durability.py keeps it)."""

    def __init__(self, segments: SegmentList, durability: Durability) -> None:
        self._segments = segments
        self._durability = durability
        # ListOffsets MAX_TIMESTAMP: ((segment base, max ts, batch base), answer), kept
        self._found: tuple[tuple[int, int, int], tuple[int, int]] | None = None

    def offset_for_timestamp(self, timestamp_ms: int) -> Found | None:
        """The first record at or after the log start whose timestamp is >= the given, with
        its batch's leader epoch; None when no record has such a timestamp.

        As Kafka's FileRecords.searchForTimestamp: the time index gives a position, batches are
        walked from there by their headers, and in the first one whose max timestamp is >= the
        given (a batch wholly below the log start is skipped) the records are decoded, so the
        answer is the record's offset and timestamp, not the batch's. Under LogAppendTime every
        record carries the batch's timestamp, so the first record answers. This is the one read
        path that looks inside a (maybe compressed) batch: one batch a lookup, a second only
        when the log start cuts the first."""
        start = self._durability.log_start_offset
        for seg in self._segments.all:
            for pos, header in seg.batches_by_time(timestamp_ms):
                if header[H_BASE] + header[H_LAST_DELTA] < start:
                    continue
                append_time = header[H_ATTRIBUTES] & TIMESTAMP_TYPE_BIT
                records = _records(seg, pos, header)
                if records is None:  # undecodable here: the batch's base offset answers
                    return Found(max(header[H_BASE], start), header[H_MAX_TS], header[H_EPOCH])
                for r in records:
                    ts = header[H_MAX_TS] if append_time else r.timestamp
                    if ts >= timestamp_ms and r.offset >= start:
                        return Found(r.offset, ts, header[H_EPOCH])
        return None

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record holding the log's largest timestamp
        (ListOffsets MAX_TIMESTAMP, KIP-734); None for a log without batches.

        Each segment keeps its max timestamp and the base offset of the batch holding it
        (segment.py, from the batch headers and the time index), so the segment and the batch
        come without a scan; only that one batch is decoded, to find the record within it (as
        Kafka does), and the answer is kept until another batch takes the maximum."""
        log_start_offset = self._durability.log_start_offset
        best: Segment | None = None
        for seg in self._segments.all:  # the first segment with the largest max, as Kafka
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        key = (best.base_offset, best.max_timestamp, best.offset_of_max_timestamp)
        if self._found is not None and self._found[0] == key:
            return self._found[1]
        found = (max(best.offset_of_max_timestamp, log_start_offset), best.max_timestamp)
        located = best.locate(best.offset_of_max_timestamp)
        if located is not None:
            records = _records(best, *located) or []  # undecodable: the batch's base answers
            for r in records:
                if r.timestamp == best.max_timestamp:
                    found = (max(r.offset, log_start_offset), r.timestamp)
                    break
        self._found = (key, found)
        return found


def _records(seg: Segment, pos: int, header: tuple[int, ...]) -> list[Record] | None:
    """The records of the batch at `pos` in `seg` (decompressed), None if they do not decode."""
    data = os.pread(seg.fd, LENGTH_PREFIX_BYTES + header[H_LENGTH], pos)
    try:
        return decode_records(data)[1]
    except (InvalidBatchError, OdradekError):
        return None
