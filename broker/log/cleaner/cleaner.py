"""One cleaning pass over one log (Kafka's `Cleaner`), run in a cleaner thread.

The event loop owns the Log; this module never touches it. `CleanTask` is what the loop hands
over: duplicated fds of the closed segments to read (their sizes frozen at hand-over: nothing
below the active segment is ever appended to), the cleanable range, the topic's config and the
last offset of each idempotent producer's last batch. `clean(task)`:

1. builds the offset map (plan.OffsetMap: key -> last offset) over the dirty section, segment
   by segment, skipping control batches and the batches of aborted transactions (plan.TxnWalk
   over the `.txnindex` entries); when the map is full it stops at the start of the segment
   that did not fit, and that is where this pass's cleaning ends (`end_offset`, the next
   checkpoint);
2. groups the segments below `end_offset` (plan.group_segments) and rewrites each group into
   one new segment `<first base>.log.cleaned` (+ `.index.cleaned`, `.timeindex.cleaned`,
   `.txnindex.cleaned`), batch by batch, with a second TxnWalk from the log start: a batch of
   an aborted transaction loses every record; any other batch with nothing to drop and no
   tombstone to stamp is copied as it is; otherwise records.rebuild keeps what plan.retain
   keeps, setting the delete horizon (now + delete.retention.ms) on a batch that keeps a
   tombstone and has none yet. A batch left with no record goes, unless it is its producer's
   last (kept empty, for the producer's state, as Kafka does). A marker stays while its
   transaction had data before it, then is stamped with a delete horizon, then goes
   (plan.marker_fate); the new `.txnindex` holds the aborts the walk kept;
3. fsyncs the new files. The swap (`.cleaned` -> `.swap` -> final names) is the loop's,
   through Log.replace_segments, which also checks that nothing changed the log meanwhile.

I/O is throttled to `io_max_bytes_per_second` (read and written bytes) by sleeping through the
injected `sleep`. `hold(step)` is a test hook: it may block at a named step.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from broker.log import checkpoint
from broker.log.batch_checks import check_stored_batch
from broker.log.cleaner import _compact, plan, records
from broker.log.cleaner.records import (
    H_ATTRIBUTES,
    H_BASE,
    H_COUNT,
    H_FIRST_TS,
    H_LAST_DELTA,
    H_PID,
)
from broker.log.config import LONG_MAX
from broker.log.segment import (
    CLEANED_SUFFIX,
    SWAP_END_SUFFIX,
    Segment,
    segment_name,
)
from broker.log.txn_index import TXN_INDEX_SUFFIX
from broker.txn_state import AbortedTxn
from protocol.batch import (
    CONTROL_BIT,
    DEFAULT_MAX_RECORDS_BYTES,
    DELETE_HORIZON_BIT,
    HEADER,
    HEADER_BYTES,
    LENGTH_PREFIX_BYTES,
    TRANSACTIONAL_BIT,
    InvalidBatchError,
)
from protocol.control import parse_marker

READ_CHUNK_BYTES = 4 << 20


@dataclass(frozen=True, slots=True)
class SegmentToRead:
    base_offset: int
    next_offset: int
    size_bytes: int
    fd: int  # a dup, closed by the task


@dataclass(slots=True)
class CleanTask:
    directory: Path
    segments: list[SegmentToRead]  # every closed segment from the log start, oldest first
    first_dirty: int
    first_uncleanable: int
    now_ms: int
    delete_retention_ms: int
    segment_bytes: int
    segment_index_bytes: int
    index_interval_bytes: int
    max_message_bytes: int
    map_bytes: int
    producer_last_offsets: dict[int, int]  # producer id -> last offset of its last batch
    # the `.txnindex` entries of every segment, the active one's too (an abort whose data is
    # cleaned may have its marker there); a kept one goes to the cleaned segment holding its
    # marker (plan.TxnWalk)
    aborted: list[AbortedTxn] = field(default_factory=list)
    io_max_bytes_per_second: float | None = None
    sleep: Callable[[float], None] = field(default=lambda s: None)
    monotonic: Callable[[], float] = field(default=lambda: 0.0)
    hold: Callable[[str], None] = field(default=lambda step: None)

    def close(self) -> None:
        for seg in self.segments:
            os.close(seg.fd)


@dataclass(slots=True)
class CleanedGroup:
    old_bases: list[int]
    new: Segment  # files under CLEANED_SUFFIX, synced


@dataclass(slots=True)
class CleanResult:
    end_offset: int  # the next first dirty offset
    groups: list[CleanedGroup]
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    delete_horizon_ms: int | None = None  # the latest horizon this pass set


class _Throttle:
    def __init__(self, task: CleanTask) -> None:
        self.task = task
        self.start = task.monotonic()
        self.bytes = 0

    def spent(self, n: int) -> None:
        self.bytes += n
        rate = self.task.io_max_bytes_per_second
        if rate is not None:
            ahead = self.bytes / rate - (self.task.monotonic() - self.start)
            if ahead > 0:
                self.task.sleep(ahead)


def batches(seg: SegmentToRead, throttle: _Throttle) -> Iterator[tuple[int, bytes]]:
    """(position, bytes) of every batch of a segment, read in chunks of READ_CHUNK_BYTES (at
    most a chunk and a batch in memory)."""
    pos = 0
    while pos < seg.size_bytes:
        chunk = os.pread(seg.fd, min(READ_CHUNK_BYTES, seg.size_bytes - pos), pos)
        throttle.spent(len(chunk))
        at = 0
        while len(chunk) - at >= HEADER_BYTES:
            size = LENGTH_PREFIX_BYTES + int.from_bytes(chunk[at + 8 : at + 12], "big")
            if at + size > len(chunk):
                break
            check_stored_batch(chunk, at)  # the loop wrote and checked it; a disk may not keep it
            yield pos + at, chunk[at : at + size]
            at += size
        if at == 0:  # one batch larger than a chunk
            size = LENGTH_PREFIX_BYTES + int.from_bytes(chunk[8:12], "big")
            whole = os.pread(seg.fd, size, pos)
            check_stored_batch(whole)
            yield pos, whole
            at = len(whole)
        pos += at


def clean(task: CleanTask) -> CleanResult:
    try:
        return _clean(task)
    finally:
        task.close()


def _clean(task: CleanTask) -> CleanResult:
    throttle = _Throttle(task)
    offset_map = plan.OffsetMap(task.map_bytes)
    end = task.first_dirty
    walk = plan.TxnWalk(task.aborted, task.first_dirty)
    for seg in task.segments:
        if seg.next_offset <= task.first_dirty:
            continue
        if seg.base_offset >= task.first_uncleanable:
            break
        if not _map_segment(seg, offset_map, task, throttle, walk):
            break
        end = max(end, seg.next_offset)
    end = min(end, task.first_uncleanable)
    result = CleanResult(end, [], bytes_read=throttle.bytes)
    task.hold("mapped")
    to_clean = [s for s in task.segments if s.next_offset <= end]
    infos = [plan.SegmentInfo(s.base_offset, s.next_offset, s.size_bytes, -1, -1)
             for s in to_clean]  # fmt: skip
    walk = plan.TxnWalk(task.aborted, to_clean[0].base_offset if to_clean else end)
    for group in plan.group_segments(infos, task.segment_bytes, task.segment_index_bytes):
        segs = [to_clean[i] for i in group]
        new = _clean_group(segs, offset_map.latest, walk, task, throttle, result)
        result.groups.append(CleanedGroup([s.base_offset for s in segs], new))
    result.bytes_read = throttle.bytes - result.bytes_written
    task.hold("cleaned")
    return result


def _map_segment(
    seg: SegmentToRead,
    offset_map: plan.OffsetMap,
    task: CleanTask,
    throttle: _Throttle,
    walk: plan.TxnWalk,
) -> bool:
    """Add the segment's keys to the map; False (map unchanged) if they do not fit. Neither
    markers nor aborted transactions' records are mapped."""
    found: dict[bytes, int] = {}
    lo, hi = task.first_dirty, task.first_uncleanable
    for _, data in batches(seg, throttle):
        h = HEADER.unpack_from(data, 0)
        last = h[H_BASE] + h[H_LAST_DELTA]
        if last < lo or h[H_BASE] >= hi:
            continue
        if h[H_ATTRIBUTES] & CONTROL_BIT:
            walk.on_marker(h[H_PID], last, _commit(data))
            continue
        if walk.on_batch(h[H_PID], last, bool(h[H_ATTRIBUTES] & TRANSACTIONAL_BIT)):
            continue
        section = records.section(data, _max_section(task))
        _compact.map_keys(section, h[H_COUNT], h[H_BASE], h[H_LAST_DELTA], lo, hi, found)
    new_keys = [k for k in found if k not in offset_map.latest]
    if not offset_map.has_room_for(len(new_keys), sum(len(k) for k in new_keys)):
        if not offset_map.latest:
            raise MemoryError(
                f"segment {seg.base_offset} holds more keys than "
                f"log.cleaner.dedupe.buffer.size ({task.map_bytes} bytes) can map"
            )
        return False
    for key, offset in found.items():
        offset_map.put(key, offset)
    return True


def _clean_group(
    segs: list[SegmentToRead],
    latest: dict[bytes, int],
    walk: plan.TxnWalk,
    task: CleanTask,
    throttle: _Throttle,
    result: CleanResult,
) -> Segment:
    new = Segment.create(task.directory, segs[0].base_offset, suffix=CLEANED_SUFFIX)
    try:
        for seg in segs:
            for _, data in batches(seg, throttle):
                out = _clean_batch(data, latest, walk, task, result)
                if out is None:
                    continue
                h = check_stored_batch(out)
                last = h[0] + h[6]
                new.append((out,), len(out), h[0], last, h[8], task.now_ms,
                           task.index_interval_bytes)  # fmt: skip
                result.bytes_written += len(out)
                throttle.spent(len(out))
        _write_txn_index(new, walk, segs[-1].next_offset, task.directory)
        new.seal()
        os.fdatasync(new.fd)
        # what a restart needs to finish the swap once it is committed (Log.replace_segments)
        end_file = task.directory / (segment_name(new.base_offset) + SWAP_END_SUFFIX)
        checkpoint.write_atomically(end_file, checkpoint.encode_offset(segs[-1].next_offset))
    except BaseException:
        new.unlink()
        raise
    return new


def _write_txn_index(new: Segment, walk: plan.TxnWalk, end: int, directory: Path) -> None:
    """The aborts the walk kept whose marker is in the group. With none, an empty file still
    replaces the first old segment's, if it has one: the swap renames the new files over the
    old ones, and a stale entry left there would outlive its marker."""
    for entry in walk.kept:
        if new.base_offset <= entry.last_offset < end:
            new.txn_index.append(entry)
    old = directory / (segment_name(new.base_offset) + TXN_INDEX_SUFFIX)
    if not new.txn_index.entries and old.exists():
        new.txn_index.file.fd()  # created empty; seal() syncs it


def _commit(data: bytes) -> bool | None:
    """A control batch's marker: True COMMIT, False ABORT, None not a marker (or emptied)."""
    try:
        return parse_marker(data).commit
    except InvalidBatchError:
        return None


def _max_section(task: CleanTask) -> int:
    """The most a batch's records may inflate to: the bound produce accepted them under (a
    smaller one would leave a partition uncleanable for good)."""
    return DEFAULT_MAX_RECORDS_BYTES


def _clean_batch(
    data: bytes,
    latest: dict[bytes, int],
    walk: plan.TxnWalk,
    task: CleanTask,
    result: CleanResult,
) -> bytes | None:
    """The batch as the cleaned segment stores it, or None to drop it. The records are kept
    or dropped in C (_compact.retain: plan.retain for each); only a batch that keeps a
    tombstone and has no delete horizon yet, once per batch, is rebuilt record by record
    in Python (records.rebuild), to restamp its timestamp deltas against the horizon. A
    batch of an aborted transaction keeps no record."""
    h = HEADER.unpack_from(data, 0)
    if h[H_ATTRIBUTES] & CONTROL_BIT:
        return _clean_marker(data, h, walk, task, result)
    count = h[H_COUNT]
    horizon = h[H_FIRST_TS] if h[H_ATTRIBUTES] & DELETE_HORIZON_BIT else None
    pid, last = h[H_PID], h[H_BASE] + h[H_LAST_DELTA]
    if walk.on_batch(pid, last, bool(h[H_ATTRIBUTES] & TRANSACTIONAL_BIT)):
        result.records_read += count
        if not plan.keeps_empty(pid, last, task.producer_last_offsets):
            return None
        return data if count == 0 else records.assemble(data, b"", 0, horizon)
    section = records.section(data, _max_section(task))
    stamp = -1 if horizon is None else horizon
    kept, n, tombstones = _compact.retain(
        section, count, h[H_BASE], h[H_LAST_DELTA], latest, task.now_ms, stamp
    )
    result.records_read += count
    result.records_kept += n
    if n == 0 and not plan.keeps_empty(pid, last, task.producer_last_offsets):
        return None
    if horizon is None and tombstones:
        horizon = _new_horizon(task, result)
        scanned = records.scan(data, _max_section(task))
        now = task.now_ms
        keep = [r for r in scanned.records
                if plan.retain(r.offset, r.key, r.tombstone, latest, None, now)]  # fmt: skip
        return records.rebuild(data, scanned, keep, horizon)
    if n == count:
        return data
    return records.assemble(data, kept, n, horizon)


def _new_horizon(task: CleanTask, result: CleanResult) -> int:
    """The delete horizon a batch gets in this pass (KIP-534), noted for the manager."""
    horizon = min(task.now_ms + task.delete_retention_ms, LONG_MAX)  # an int64 field
    if result.delete_horizon_ms is None or horizon > result.delete_horizon_ms:
        result.delete_horizon_ms = horizon
    return horizon


def _clean_marker(
    data: bytes, h: tuple[int, ...], walk: plan.TxnWalk, task: CleanTask, result: CleanResult
) -> bytes | None:
    """A control batch: kept while its transaction had data before it, then stamped with a
    delete horizon (its one record restamped against it), then dropped once that passes."""
    count = h[H_COUNT]
    result.records_read += count
    empty = walk.on_marker(h[H_PID], h[H_BASE] + h[H_LAST_DELTA], _commit(data))
    horizon = h[H_FIRST_TS] if h[H_ATTRIBUTES] & DELETE_HORIZON_BIT else None
    fate = plan.marker_fate(empty, horizon, task.now_ms)
    if fate == "drop":
        return None
    result.records_kept += count
    if fate == "keep":
        return data
    scanned = records.scan(data, _max_section(task))
    return records.rebuild(data, scanned, scanned.records, _new_horizon(task, result))
