"""A log's producer state (broker/producer_state.py) kept in step with its batches.

`ProducerLog` holds the partition's `ProducerStateTable` and what ties it to the files:

- a marker appended (`end_txn`, or `replicated_marker` for a follower's copy) completes its
  transaction; an abort is added to the `.txnindex` of the segment holding the marker
  (transactions.index_abort);
- at a roll and at close the table is snapshotted at the log end (`write_snapshot`,
  snapshot.py; the newest two are kept). A roll's snapshot is not fsynced there: the next
  flush fsyncs it (durability.py);
- opening, a truncation and a recovered segment rebuild the table (`rebuild`): the newest sound
  snapshot at or below a limit is loaded and the batches after it replayed (`replay`), which
  also refills the `.txnindex` of a recovered segment.

It sees the log's segment list (segment_list.py) and its log start offset (durability.py),
never the log.
"""

from __future__ import annotations

import bisect
from pathlib import Path

from broker.log import snapshot
from broker.log.appends import H_PEPOCH, H_PID
from broker.log.durability import Durability
from broker.log.segment import H_BASE, H_MAX_TS
from broker.log.segment_list import SegmentList
from broker.log.transactions import index_abort, segment_entries
from broker.producer_state import ProducerStateTable
from broker.txn_state import CompletedTxn
from protocol.batch import InvalidBatchError
from protocol.control import Marker, parse_marker


class ProducerLog:
    def __init__(self, directory: Path, segments: SegmentList, durability: Durability) -> None:
        self.directory = directory
        self._segments = segments
        self._durability = durability
        self.producers = ProducerStateTable()  # idempotent producers (broker/producer_state.py)

    def end_txn(
        self,
        producer_id: int,
        epoch: int,
        marker: Marker,
        offset: int,
        timestamp: int,
    ) -> CompletedTxn | None:
        """A marker was appended at `offset`: complete its transaction; index an abort."""
        done = self.producers.end_txn(producer_id, epoch, marker, offset, timestamp)
        if done is not None and done.is_abort:
            index_abort(self._segments.all, self._segments.bases, self.producers.index_entry(done))
        return done

    def replicated_marker(self, batch: memoryview, h: tuple[int, ...]) -> None:
        if h[H_PID] < 0:
            return
        try:
            marker = parse_marker(batch)
        except InvalidBatchError:
            return  # another kind of control batch: no transaction ends
        self.end_txn(h[H_PID], h[H_PEPOCH], marker, h[H_BASE], h[H_MAX_TS])

    def rebuild(self, limit: int | None = None) -> None:
        """Load the newest sound snapshot at or below `limit` (default: the log end) and
        replay the batches after it (see replay); without one, replay from the log start."""
        bases, has_gaps = self._segments.bases, self._segments.has_gaps
        log_start_offset = self._durability.log_start_offset
        log_end_offset = self._segments.active.next_offset
        hw = self.producers.high_watermark
        limit = log_end_offset if limit is None else min(limit, log_end_offset)
        start = log_start_offset
        # a cleaned log may have dropped a producer's batches: never `complete` (an unknown
        # producer's next sequence then appends instead of failing OUT_OF_ORDER)
        self.producers.reset(bases[0] == 0 and not has_gaps)
        for offset in reversed(snapshot.list_offsets(self.directory)):
            if offset > limit:
                continue
            path = snapshot.snapshot_path(self.directory, offset)
            try:
                snapshot.load_into(self.producers, path.read_bytes(), not has_gaps)
            except snapshot.CorruptSnapshotError:
                path.unlink(missing_ok=True)
                self.producers.reset(bases[0] == 0 and not has_gaps)
                continue
            start = max(offset, log_start_offset)
            break
        if hw is not None:
            self.producers.on_high_watermark(min(hw, log_end_offset))
        self.replay(start)

    def write_snapshot(self, offset: int, sync: bool) -> Path:
        """Snapshot the producer table at `offset` (the log end); keep the newest two. The
        snapshot's path: without `sync`, the next flush must fsync it."""
        path = snapshot.snapshot_path(self.directory, offset)
        snapshot.write(path, snapshot.encode(self.producers), sync)
        snapshot.prune(self.directory, self._durability.log_start_offset)
        return path

    def replay(self, start: int) -> None:
        """Apply the batches from `start` to the log end to the producer table, adding each
        abort met to its segment's `.txnindex` if that index lacks it (a recovered one)."""
        segments, bases = self._segments.all, self._segments.bases
        i = max(0, bisect.bisect_right(bases, start) - 1)
        for seg in segments[i:]:
            for entry in self.producers.replay(segment_entries(seg, start)):
                index_abort(segments, bases, entry)

    def first_unstable_offset(self) -> int | None:
        """The first offset of an open, or completed but unreplicated, transaction (not below
        the log start); None when there is none."""
        first = self.producers.first_unstable_offset()
        return None if first is None else max(first, self._durability.log_start_offset)
