"""The log cleaner's decisions, as pure functions of a log's shape (Kafka's LogCleanerManager
and Cleaner): which range of a log may be cleaned, how dirty it is, which log goes first, how
segments are grouped, and which records a pass keeps.

A compacted log has a clean head (already cleaned: each key at most once... per pass) and a
dirty tail:

    log start            first dirty              first uncleanable          log end
       |---- clean ---------|------- dirty -----------|---- never touched ------|

`first_dirty` is the cleaner's checkpoint (cleaner-offset-checkpoint), clamped to the log.
`first_uncleanable` is the least of: the active segment's base (never cleaned), the base of
the segment holding the high watermark (nothing a consumer cannot see yet), and the base of
the first segment holding a record younger than min.compaction.lag.ms: always a segment base,
so a pass maps exactly the segments it rewrites.

The dirty ratio is dirty bytes / (clean + dirty bytes). A log is cleanable when the ratio
reaches min.cleanable.dirty.ratio, or when its first dirty segment's oldest record is older
than max.compaction.lag.ms (it must be cleaned, whatever the ratio). The filthiest goes first:
a must-clean log before the others, then the highest ratio.

A record is kept (`retain`) when it has a key, it is the latest of its key in the offset map
(or its key is not in the map: the map covers only the dirty section it was built over), and
it is not a tombstone past its batch's delete horizon. Keyless records are dropped, as Kafka's
cleaner drops them (a compacted topic refuses them on produce).

Transactions (KIP-98; Kafka's CleanedTransactionMetadata): `TxnWalk` is fed every batch of a
pass in offset order and knows, from the `.txnindex` entries, which producers are inside an
aborted transaction: their transactional batches lose every record (and never enter the
offset map, so an aborted value never shadows a committed one). It also says whether a
marker's transaction still had data in the log when the marker was reached: a marker is kept
as it is while it does; once it does not, `marker_fate` stamps it with a delete horizon (the
tombstones' KIP-534 horizon: now + delete.retention.ms) and a later pass past the horizon drops
it, so a consumer that read up to the marker still sees it. An abort's `.txnindex` entry is
rewritten only while its transaction still has data (the walk's `kept`): it goes in the pass
that finds the transaction empty, before its marker, and never outlives it (an entry without
its marker would make a read_committed consumer skip the producer's later transactions).
Nothing at or past the first unstable offset is cleanable, so every transaction a walk meets
has its marker below the high watermark.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from broker.txn_state import AbortedTxn

NO_LIMIT = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What the plan needs of one segment."""

    base_offset: int
    next_offset: int  # one past its last batch
    size_bytes: int
    first_timestamp_ms: int  # its first batch's max timestamp (Kafka's: for max.compaction.lag)
    max_timestamp_ms: int  # its largest timestamp (-1: none)
    index_bytes: int = 0


@dataclass(frozen=True, slots=True)
class CleanableRange:
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    must_clean: bool  # max.compaction.lag.ms has passed for its first dirty record

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def cleanable_range(
    segments: Sequence[SegmentInfo],
    log_start_offset: int,
    checkpoint: int | None,
    high_watermark: int,
    now_ms: int,
    min_compaction_lag_ms: int,
    max_compaction_lag_ms: int,
    first_unstable_offset: int | None = None,
) -> CleanableRange:
    """The clean and dirty sections of a log whose segments (oldest first, the last active)
    are `segments`. Nothing from the first unstable offset on is cleanable (Kafka's
    firstUncleanableOffset): an open transaction's records may yet be aborted."""
    log_end = segments[-1].next_offset if segments else log_start_offset
    first_dirty = checkpoint if checkpoint is not None else log_start_offset
    if not log_start_offset <= first_dirty <= log_end:
        first_dirty = log_start_offset  # a stale checkpoint (truncation, DeleteRecords)
    uncleanable = min(segments[-1].base_offset if segments else log_end, high_watermark)
    if first_unstable_offset is not None:
        uncleanable = min(uncleanable, first_unstable_offset)
    # whole segments only: a pass maps and rewrites the same segments, so a high watermark
    # inside a closed segment makes that segment's base the limit (else records mapped there
    # would count as clean without ever being rewritten)
    uncleanable = max((s.base_offset for s in segments if s.base_offset <= uncleanable),
                      default=uncleanable)  # fmt: skip
    for seg in segments:
        if seg.base_offset >= uncleanable:
            break
        if min_compaction_lag_ms > 0 and seg.max_timestamp_ms > now_ms - min_compaction_lag_ms:
            uncleanable = seg.base_offset
            break
    uncleanable = max(uncleanable, first_dirty)
    clean = dirty = 0
    must = False
    for i, seg in enumerate(segments[:-1]):
        end = segments[i + 1].base_offset
        if end <= first_dirty:
            clean += seg.size_bytes
        elif end <= uncleanable:
            if not dirty and max_compaction_lag_ms < NO_LIMIT:
                must = seg.first_timestamp_ms >= 0 and (
                    now_ms - seg.first_timestamp_ms > max_compaction_lag_ms
                )
            dirty += seg.size_bytes
    return CleanableRange(first_dirty, uncleanable, clean, dirty, must)


def is_cleanable(r: CleanableRange, min_cleanable_ratio: float) -> bool:
    return r.dirty_bytes > 0 and (r.must_clean or r.dirty_ratio >= min_cleanable_ratio)


def filthiest(candidates: Iterable[tuple[object, CleanableRange]]) -> object | None:
    """The key of the candidate to clean first (must-clean first, then by dirty ratio)."""
    best = max(candidates, key=lambda c: (c[1].must_clean, c[1].dirty_ratio), default=None)
    return None if best is None else best[0]


def group_segments(
    segments: Sequence[SegmentInfo], max_bytes: int, max_index_bytes: int
) -> list[list[int]]:
    """Consecutive segments (indexes into `segments`) rewritten into one file each: a group
    stays within segment.bytes, the index size limit and a 2^31 offset span (Kafka's
    groupSegmentsBySize)."""
    groups: list[list[int]] = []
    i = 0
    while i < len(segments):
        group = [i]
        size, index = segments[i].size_bytes, segments[i].index_bytes
        while i + 1 < len(segments):
            nxt = segments[i + 1]
            if (
                size + nxt.size_bytes > max_bytes
                or index + nxt.index_bytes > max_index_bytes
                or nxt.next_offset - segments[group[0]].base_offset - 1 > (1 << 31) - 1
            ):
                break
            size += nxt.size_bytes
            index += nxt.index_bytes
            i += 1
            group.append(i)
        groups.append(group)
        i += 1
    return groups


def retain(
    offset: int,
    key: bytes | None,
    tombstone: bool,
    latest: dict[bytes, int],
    delete_horizon_ms: int | None,
    now_ms: int,
) -> bool:
    """Kafka's shouldRetainRecord: keep the latest record of each key, and a tombstone only
    until its batch's delete horizon has passed."""
    if key is None:
        return False
    found = latest.get(key)
    if found is not None and offset < found:
        return False  # a later record of the key exists
    return not (tombstone and delete_horizon_ms is not None and now_ms >= delete_horizon_ms)


class TxnWalk:
    """Kafka's CleanedTransactionMetadata: the transactions of one pass, batch by batch.

    Built with the aborted transactions of the `.txnindex` of every segment the pass may meet
    (those whose marker is below `start_offset`, where the walk starts, are ended already). An
    entry opens when the walk reaches its first offset and closes at its ABORT marker; a
    producer has one transaction at a time, so entries are kept by producer id. `on_batch` and
    `on_marker` must see every batch from `start_offset` on, in offset order."""

    def __init__(self, aborted: Iterable[AbortedTxn], start_offset: int) -> None:
        live = (e for e in aborted if e.last_offset >= start_offset)
        self._pending = deque(sorted(live, key=lambda e: (e.first_offset, e.last_offset)))
        self._aborted: dict[int, AbortedTxn] = {}  # producer id -> its aborted txn under way
        self._with_data: set[int] = set()  # producers whose current txn had a batch read
        self.kept: list[AbortedTxn] = []  # entries whose marker was met with data before it

    def _open_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0].first_offset <= offset:
            entry = self._pending.popleft()
            self._aborted.setdefault(entry.producer_id, entry)

    def on_batch(self, producer_id: int, last_offset: int, transactional: bool) -> bool:
        """A data batch: True when it belongs to an aborted transaction (its records go)."""
        self._open_up_to(last_offset)
        if not transactional:
            return False
        self._with_data.add(producer_id)
        return producer_id in self._aborted

    def on_marker(self, producer_id: int, last_offset: int, commit: bool | None) -> bool:
        """A control batch (`commit` None: not a marker this walk knows; it ends nothing and
        stays). True when its transaction has no batch left before it: the marker may go
        once its delete horizon passes. An abort met with data keeps its index entry."""
        self._open_up_to(last_offset)
        if commit is None:
            return False
        had_data = producer_id in self._with_data
        self._with_data.discard(producer_id)
        if not commit:
            entry = self._aborted.pop(producer_id, None)
            if entry is not None and had_data:
                self.kept.append(entry)
        # an ABORT with data but no index entry keeps its marker too: whatever its data is,
        # it must never outlive the marker that ends it
        return not had_data


MarkerFate = Literal["keep", "stamp", "drop"]


def marker_fate(txn_empty: bool, delete_horizon_ms: int | None, now_ms: int) -> MarkerFate:
    """What a pass does with a marker (Kafka: a control batch is retained while its
    transaction has data; then, as a tombstone, until its batch's delete horizon passes)."""
    if not txn_empty:
        return "keep"
    if delete_horizon_ms is None:
        return "stamp"
    return "drop" if now_ms >= delete_horizon_ms else "keep"


def keeps_empty(producer_id: int, last_offset: int, producer_last_offsets: dict[int, int]) -> bool:
    """A batch left with no record stays (empty) when it is its producer's last batch, so the
    producer's state (sequence, epoch, an open or ended transaction) survives cleaning."""
    return producer_id >= 0 and producer_last_offsets.get(producer_id) == last_offset


class Rec(NamedTuple):
    """A record as a pass sees it (the pure model of a pass, `one_pass`)."""

    offset: int
    key: bytes | None
    value: bytes | None
    delete_horizon_ms: int | None = None  # its batch's (KIP-534), for a tombstone


def one_pass(
    records: Sequence[Rec], first_dirty: int, end: int, now_ms: int, delete_retention_ms: int
) -> list[Rec]:
    """What one cleaning pass over [log start, end) leaves of `records` (offset order), with
    the offset map built over [first_dirty, end): the specification the cleaner (cleaner.py,
    _compact.c) is tested against. A tombstone kept without a horizon gets one. Records outside
    transactions only: with transactions the specification is the read_committed view
    (tests/unit/log/test_cleaner_txn_property.py)."""
    latest = {r.key: r.offset for r in records if first_dirty <= r.offset < end and r.key}
    out = []
    for r in records:
        if r.offset >= end:
            out.append(r)
        elif retain(r.offset, r.key, r.value is None, latest, r.delete_horizon_ms, now_ms):
            if r.value is None and r.delete_horizon_ms is None:
                r = r._replace(delete_horizon_ms=now_ms + delete_retention_ms)
            out.append(r)
    return out


class OffsetMap:
    """Key -> the last offset seen for it, over the dirty section, with a bound on memory
    (log.cleaner.dedupe.buffer.size). Kafka's SkimpyOffsetMap stores a 16-byte hash and an
    offset per key (24 bytes); a dict of the keys themselves costs about `ENTRY_BYTES` plus the
    key, which is what the bound counts."""

    ENTRY_BYTES = 100

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.latest: dict[bytes, int] = {}
        self.bytes = 0

    def has_room_for(self, keys: int, key_bytes: int) -> bool:
        return self.bytes + keys * self.ENTRY_BYTES + key_bytes <= self.max_bytes

    def put(self, key: bytes, offset: int) -> None:
        if key not in self.latest:
            self.bytes += self.ENTRY_BYTES + len(key)
        self.latest[key] = offset

    def __len__(self) -> int:
        return len(self.latest)
