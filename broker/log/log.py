"""One partition's log: a directory `<topic>-<partition>/` of segments (segment.py).

Directory contents:

    00000000000000000000.log         batches, back to back (protocol/batch.py layout)
    00000000000000000000.index       sparse offset index (index.py)
    00000000000000000000.timeindex   sparse time index (index.py)
    00000000000000000000.txnindex    aborted transactions whose marker is in the segment
                                     (txn_index.py; transactions.py reads and fills it)
    leader-epoch-checkpoint          epoch -> start offset (epoch.py, checkpoint.py layout)
    log-start-offset-checkpoint      the first offset still served
    recovery-point-offset-checkpoint offsets below it are known to be fsynced
    clean-shutdown                   present only while the log is closed cleanly
    *.deleted                        segments removed by retention or truncation, kept open
                                     until file.delete.delay.ms has passed (in-flight reads)

`Log` is synchronous and single-threaded: the broker's event loop owns it. Only fdatasync may
run elsewhere (durability.py: flush plans, the recovery point and the offsets checkpoints).

A new log (its directory did not exist) creates only its first `.log` file (the indexes come
with their first entries) and fsyncs nothing:
absent checkpoint files read as offset 0 and an untrusted, empty epoch cache, which is what a
new log holds; its directory and the log directory are fsynced by its first flush, before
anything in it is counted durable (Kafka does the same since KAFKA-3968).

A failed I/O call raises `LogDirIOError` (dir_failure.py): the caller takes the whole log
directory offline (`mark_offline` on every log), and the log is not touched again until the
broker restarts.

What `Log` does with the help of the modules beside it:

- opening an existing directory: recovery.py (leftovers, a committed cleaner swap, a foreign
  record format, which segments are recovered and which only loaded);
- appends: here (offsets, epochs; what is checked first: appends.py); when to roll:
  rolling.py; the producer state and transactions' indexes kept in step: producer_log.py
  (and transactions.py);
- reads (whole batches as `FileSlice`s; offsets by timestamp, `log.times`): reads.py;
- retention and the deferred deletion of removed segments: retention.py;
- the segment list, offset gaps and the cleaner's swap of cleaned segments: segment_list.py;
- flushes, the log start offset and recovery point and their checkpoints: durability.py.
"""

from __future__ import annotations

import bisect
import itertools
import os
import shutil
from pathlib import Path

from broker.log import checkpoint, reads, recovery, snapshot
from broker.log.appends import (
    H_ATTRIBUTES,
    H_PEPOCH,
    H_PID,
    H_SEQ,
    PREFIX,
    AppendInfo,
    VerifyTxn,
    check_client_batch,
    check_replicated,
)
from broker.log.config import LogConfig
from broker.log.dir_failure import LogDirIOError
from broker.log.dir_placement import entry_kind
from broker.log.durability import LOG_START_FILE, RECOVERY_POINT_FILE, Durability
from broker.log.epoch import LeaderEpochCache
from broker.log.producer_log import ProducerLog
from broker.log.reads import ReadResult
from broker.log.retention import retained_count
from broker.log.rolling import RollPolicy
from broker.log.segment import (
    H_BASE,
    H_COUNT,
    H_EPOCH,
    H_LAST_DELTA,
    H_LENGTH,
    H_MAX_TS,
    Segment,
)
from broker.log.segment_list import SegmentList
from broker.log.transactions import collect_aborted
from broker.producer_state import ProducerRow
from broker.txn_state import last_stable_offset
from protocol.batch import (
    CONTROL_BIT,
    LENGTH_PREFIX_BYTES,
    TRANSACTIONAL_BIT,
)
from protocol.clock import Clock
from protocol.control import Marker, build_marker
from protocol.errors import (
    InvalidRecordError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    UsageError,
)

CLEAN_SHUTDOWN_FILE = "clean-shutdown"
EPOCH_FILE = "leader-epoch-checkpoint"


class Log:
    def __init__(self, directory: Path, config: LogConfig, clock: Clock) -> None:
        """Use `Log.open`."""
        self.directory = directory
        self.topic, self.partition = parse_directory_name(directory.name)
        self.config = config
        self.clock = clock
        self.segments = SegmentList(directory, clock)  # oldest first (segment_list.py)
        # the log start offset, the recovery point, flushes (durability.py)
        self.durability = Durability(directory, config, clock, self.segments)
        self.times = reads.TimeLookup(self.segments, self.durability)  # ListOffsets by time
        self.epochs = LeaderEpochCache(directory / EPOCH_FILE)
        # producer state, snapshots (producer_log.py)
        self._txns = ProducerLog(directory, self.segments, self.durability)
        self.producers = self._txns.producers  # idempotent producers (broker/producer_state.py)
        self.closed = False
        self.offline = False  # its log directory failed (dir_failure.py): closed for good
        self.rolling = RollPolicy()  # when the active segment rolls (rolling.py)

    # ----- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, config: LogConfig, clock: Clock) -> Log:
        """Open the log in `directory`, creating it or recovering it as needed."""
        try:
            directory.mkdir(parents=True)
        except FileExistsError:
            log = cls(directory, config, clock)
            log._load()
            return log
        log = cls(directory, config, clock)
        log._create()
        return log

    def _create(self) -> None:
        """A new log in the new, empty `directory`: one segment at 0 and nothing else."""
        self.segments.all = [Segment.create(self.directory, 0, new_directory=True)]
        self.segments.bases = [0]
        self.epochs = LeaderEpochCache.absent(self.directory / EPOCH_FILE)
        self.durability.holds(0, 0)  # what the absent files read as
        # the directory's entry and its files' are made durable by the first flush (Kafka's
        # KAFKA-3968: fsyncing them here cost 3,000 directory fsyncs per 3,000 new logs)
        self.durability.unsynced_dirs = (self.directory, self.directory.parent)

    def _load(self) -> None:
        clean = (self.directory / CLEAN_SHUTDOWN_FILE).exists()
        bases = recovery.clean_directory(self.directory)
        segments = [Segment.open_existing(self.directory, base) for base in bases]
        for seg in segments:
            seg.allow_gaps = self.segments.has_gaps
        recovery.refuse_foreign_format(self.directory, segments)
        self.epochs, epochs_trusted = LeaderEpochCache.load(self.directory / EPOCH_FILE)
        if not epochs_trusted:
            self.epochs.clear()
        recovery_point = checkpoint.read_offset(self.directory / RECOVERY_POINT_FILE)
        log_start = checkpoint.read_offset(self.directory / LOG_START_FILE)
        # what the files mean (absent or corrupt: 0) is not written again
        self.durability.holds(recovery_point or 0, log_start or 0)
        if clean:
            first_unflushed = len(segments)
        else:
            first_unflushed = max(0, bisect.bisect_right(bases, recovery_point or 0) - 1)
        self.segments.all = recovery.load_segments(
            segments,
            first_unflushed,
            self.epochs.assign,
            epochs_trusted,
            self.config.index_interval_bytes,
            self.segments.has_gaps,
        )
        if not self.segments.all:
            self.segments.all = [Segment.create(self.directory, log_start or 0)]
            self.segments.all[0].allow_gaps = self.segments.has_gaps
        self.segments.bases = [s.base_offset for s in self.segments.all]
        for seg in self.segments.all[:-1]:
            seg.seal()
        leo = self.log_end_offset
        self.durability.log_start_offset = min(max(log_start or 0, self.segments.bases[0]), leo)
        self.epochs.truncate_from_end(leo)
        self.epochs.truncate_from_start(self.log_start_offset)
        if not clean:
            for seg in self.segments.all[first_unflushed:]:
                os.fdatasync(seg.fd)  # what recovery kept is now durable
        self.durability.recovery_point = leo
        self._check_invariants()
        self.durability.checkpoint_offsets()
        (self.directory / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
        checkpoint.fsync_dir(self.directory)
        snapshot.prune(self.directory, self.log_start_offset, above=leo)  # past a cut tail
        recovered = [seg.base_offset for seg in self.segments.all if seg.recovered]
        # a recovered segment's .txnindex was emptied: replay from a snapshot at or before it
        self._txns.rebuild(min(recovered, default=leo))

    # ----- state ----------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self.segments.all[-1].next_offset

    @property
    def log_start_offset(self) -> int:
        """The first offset still served (durability.py keeps it and its checkpoint)."""
        return self.durability.log_start_offset

    @property
    def recovery_point(self) -> int:
        """Offsets below it are known to be fsynced (durability.py)."""
        return self.durability.recovery_point

    @property
    def size_bytes(self) -> int:
        return sum(seg.size_bytes for seg in self.segments.all)

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        self.durability.config = config

    # ----- appends --------------------------------------------------------------------------

    def append_as_leader(
        self,
        batch: bytes | bytearray,
        leader_epoch: int,
        verify: VerifyTxn | None = None,
        coordinator: bool = False,
    ) -> AppendInfo:
        """Validate one batch, stamp its base offset and epoch, and append it. A control
        batch is refused (markers come through `append_control`); a transactional one is
        first passed to `verify` (see VerifyTxn), then opens or extends its transaction.
        `coordinator`: a coordinator's own batch (TxnOffsetCommit's offsets): a transactional
        one carries no sequence, and only its producer epoch is checked, as Kafka's
        AppendOrigin.COORDINATOR."""
        self._check_open()
        h = check_client_batch(batch, self.config.max_message_bytes)
        size = LENGTH_PREFIX_BYTES + h[H_LENGTH]
        transactional = bool(h[H_ATTRIBUTES] & TRANSACTIONAL_BIT)
        idempotent = h[H_PID] >= 0 and h[H_SEQ] >= 0  # else the producer table ignores it
        if transactional and not idempotent:
            if not coordinator or h[H_PID] < 0:
                raise InvalidRecordError("a transactional batch needs a producer id and a sequence")
            self.producers.admit_coordinator(h[H_PID], h[H_PEPOCH])
        if idempotent:
            first = self.producers.admit(h[H_PID], h[H_PEPOCH], h[H_SEQ], h[H_COUNT],
                                         transactional)  # fmt: skip
            if first is not None:  # an idempotent producer's retry: answer the first copy
                return AppendInfo(first.base_offset, first.last_offset, h[H_COUNT], h[H_MAX_TS],
                                  0, duplicate=True)  # fmt: skip
        if transactional and verify is not None:
            verify(h[H_PID], h[H_PEPOCH])
        segment = self.segments.all[-1]
        base = segment.next_offset
        last = base + h[H_LAST_DELTA]
        now_ms = self.clock.time_ms()
        if segment.size_bytes and self.rolling.should_roll(
            self.config, segment, size, last, now_ms
        ):
            self.roll()
            segment = self.segments.all[-1]
        latest = self.epochs.latest_epoch
        if latest is None or leader_epoch > latest:
            self.epochs.assign(leader_epoch, base)
        prefix = PREFIX.pack(base, h[H_LENGTH], leader_epoch)
        parts = (prefix, memoryview(batch)[PREFIX.size :])
        segment.append(parts, size, base, last, h[H_MAX_TS], now_ms,
                       self.config.index_interval_bytes)  # fmt: skip
        if idempotent or transactional:
            self.producers.record(h[H_PID], h[H_PEPOCH], h[H_SEQ], h[H_COUNT], base, last,
                                  transactional, h[H_MAX_TS])  # fmt: skip
        return AppendInfo(base, last, h[H_COUNT], h[H_MAX_TS], size)

    def append_control(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        leader_epoch: int,
    ) -> AppendInfo:
        """Append an end-transaction marker (WriteTxnMarkers on the leader). Raises
        InvalidProducerEpochError / TransactionCoordinatorFencedError (producer_state.py)."""
        self._check_open()
        self.producers.admit_marker(producer_id, producer_epoch, coordinator_epoch)
        now_ms = self.clock.time_ms()
        batch = bytearray(build_marker(producer_id, producer_epoch, coordinator_epoch, commit,
                                       now_ms))  # fmt: skip
        base = self.log_end_offset
        PREFIX.pack_into(batch, 0, base, len(batch) - LENGTH_PREFIX_BYTES, leader_epoch)
        self._append((batch,), len(batch), base, base, now_ms, leader_epoch)
        self._txns.end_txn(producer_id, producer_epoch, Marker(commit, coordinator_epoch), base,
                           now_ms)  # fmt: skip
        return AppendInfo(base, base, 1, now_ms, len(batch))

    def append_as_follower(self, batches: bytes | bytearray) -> AppendInfo | None:
        """Append already-stamped batches byte for byte. All are checked before any is written."""
        self._check_open()
        view = memoryview(batches)
        headers, expected, pos, gap = check_replicated(view, self.log_end_offset)
        if not headers:
            return None
        if gap:
            self.segments.mark_gaps()
        for at, h in headers:
            size = LENGTH_PREFIX_BYTES + h[H_LENGTH]
            last = h[H_BASE] + h[H_LAST_DELTA]
            self._append((view[at : at + size],), size, h[H_BASE], last, h[H_MAX_TS], h[H_EPOCH])
            if h[H_ATTRIBUTES] & CONTROL_BIT:
                self._txns.replicated_marker(view[at : at + size], h)
                continue
            # a cleaned batch keeps its offset span, and its sequences span the same
            self.producers.record(h[H_PID], h[H_PEPOCH], h[H_SEQ], h[H_LAST_DELTA] + 1,
                                  h[H_BASE], last, bool(h[H_ATTRIBUTES] & TRANSACTIONAL_BIT),
                                  h[H_MAX_TS])  # fmt: skip
        return AppendInfo(
            headers[0][1][H_BASE],
            expected - 1,
            sum(h[H_COUNT] for _, h in headers),
            max(h[H_MAX_TS] for _, h in headers),
            pos,
        )

    def _append(
        self,
        parts: tuple[bytes | memoryview | bytearray, ...],
        size: int,
        base: int,
        last: int,
        max_timestamp: int,
        epoch: int,
    ) -> None:
        now_ms = self.clock.time_ms()
        segment = self.segments.all[-1]
        if segment.size_bytes and self.rolling.should_roll(
            self.config, segment, size, last, now_ms
        ):
            self.roll()
            segment = self.segments.all[-1]
        latest = self.epochs.latest_epoch
        if latest is None or epoch > latest:
            self.epochs.assign(epoch, base)
        segment.append(parts, size, base, last, max_timestamp, now_ms,
                       self.config.index_interval_bytes)  # fmt: skip

    def roll(self) -> None:
        """Close the active segment and start a new one at the log end offset."""
        self._check_open()
        active = self.segments.all[-1]
        if active.size_bytes == 0:
            return
        active.seal()
        new = Segment.create(self.directory, active.next_offset)
        new.allow_gaps = self.segments.has_gaps
        self.segments.all.append(new)
        self.segments.bases.append(new.base_offset)
        # fsynced by the next flush
        path = self._txns.write_snapshot(new.base_offset, sync=False)
        self.durability.unsynced_snapshots.append(path)
        checkpoint.fsync_dir(self.directory)

    # ----- reads ----------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the one holding `offset`, within one segment file."""
        self._check_open()
        return reads.read(
            self.segments.all,
            self.segments.bases,
            self.log_start_offset,
            f"{self.topic}-{self.partition}",
            offset,
            max_bytes,
            max_offset,
            min_one_batch,
        )

    # ----- transactions (KIP-98; broker/txn_state.py) -------------------------------------

    def collect_aborted_transactions(
        self, start_offset: int, upper_offset: int
    ) -> list[tuple[int, int]]:
        """(producer id, first offset) of every aborted transaction whose marker is at or after
        `start_offset` and whose first offset is below `upper_offset` (Kafka's
        collectAbortedTransactions), from the `.txnindex` of the segments that can hold them."""
        self._check_open()
        return collect_aborted(self.segments.all, self.segments.bases, start_offset, upper_offset)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of an open, or completed but unreplicated, transaction (not below
        the log start); None when there is none."""
        return self._txns.first_unstable_offset()

    def update_high_watermark(self, high_watermark: int) -> None:
        """The partition's HW moved: transactions whose marker is below it stop holding the
        LSO (Kafka's onHighWatermarkUpdated)."""
        self.producers.on_high_watermark(high_watermark)

    def last_stable_offset(self, high_watermark: int) -> int:
        """min(first unstable offset, HW): where read_committed reads stop."""
        self.producers.on_high_watermark(high_watermark)
        return last_stable_offset(self.first_unstable_offset, high_watermark)

    def producer_states(self) -> list[ProducerRow]:
        """DescribeProducers' rows: id, epoch, last sequence, last timestamp, coordinator
        epoch, current transaction start offset (-1: none)."""
        return self.producers.rows()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.epochs.end_offset_for(epoch, self.log_end_offset)

    # ----- truncation -----------------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= `offset` (a batch is removed whole)."""
        self._check_open()
        if offset >= self.log_end_offset:
            return
        if offset < self.segments.bases[0] or offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        self.segments.truncations.append(offset)
        i = bisect.bisect_right(self.segments.bases, offset) - 1
        self.segments.deletes.defer(self.segments.all[i + 1 :], self.config.file_delete_delay_ms)
        del self.segments.all[i + 1 :], self.segments.bases[i + 1 :]
        self.segments.all[-1].truncate_to(offset)
        self.epochs.truncate_from_end(self.log_end_offset)
        if self.recovery_point > self.log_end_offset:
            self.durability.recovery_point = self.log_end_offset
            self.durability.checkpoint_offsets()
        snapshot.prune(self.directory, self.log_start_offset, above=self.log_end_offset)
        self._txns.rebuild()
        self._check_invariants()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log; it continues, empty, at `offset`."""
        self._check_open()
        if offset < 0:
            raise UsageError(f"cannot start a log at offset {offset}")
        self.segments.truncations.append(offset)
        self.segments.deletes.defer(self.segments.all, self.config.file_delete_delay_ms)
        self.segments.all = [Segment.create(self.directory, offset)]
        self.segments.all[0].allow_gaps = self.segments.has_gaps
        self.segments.bases = [offset]
        self.durability.log_start_offset = self.durability.recovery_point = offset
        self.epochs.clear()
        self.producers.reset(offset == 0)
        snapshot.prune(self.directory, offset, above=-1)
        self.durability.checkpoint_offsets()
        checkpoint.fsync_dir(self.directory)

    # ----- the log cleaner (cleaner/) ---------------------------------------------------------

    def replace_segments(self, old: list[Segment], new: Segment, generation: int) -> bool:
        """Swap the cleaner's `new` segment in for the closed segments `old`
        (SegmentList.replace). False (and nothing done) when the log changed since the
        cleaning was planned: a truncation, the old segments gone (retention) or the log
        closed."""
        if self.closed:
            return False
        if not self.segments.replace(old, new, generation, self.config.file_delete_delay_ms):
            return False
        self._check_invariants()
        return True

    # ----- durability -----------------------------------------------------------------------

    def flush(self) -> None:
        durability = self.durability
        plan = durability.flush_plan()
        plan.run()
        durability.finish_flush(plan)

    # ----- retention and deletion -----------------------------------------------------------

    def delete_retained_segments(self) -> int:
        """Delete closed segments past retention.ms / retention.bytes, oldest first; only
        when cleanup.policy has delete (a compact-only log is never deleted by retention)."""
        self._check_open()
        self.segments.purge_deleted()
        cfg = self.config
        if not cfg.delete_enabled:
            return 0
        closed = self.segments.all[:-1]
        # Kafka's deletableSegments: only below the HW; and never an open transaction's records
        # (the first unstable offset), so a transaction is never cut in two
        bounds = [b for b in (self.producers.high_watermark, self.first_unstable_offset)
                  if b is not None]  # fmt: skip
        if bounds:
            closed = closed[: bisect.bisect_right(self.segments.bases, min(bounds)) - 1]
        count = retained_count(closed, cfg, self.clock.time_ms(), self.size_bytes)
        if count:
            self._delete_oldest(count)
        return count

    def advance_log_start_offset(self, offset: int) -> bool:
        """Raise the log start offset to `offset` (DeleteRecords on the leader, a follower
        following its leader's; Kafka's maybeIncrementLogStartOffset). Reads below it are out
        of range from now on; closed segments wholly below it are deleted at once (retention's
        deferred delete), the active one never. Never moves down; the caller bounds `offset`
        (the leader by its high watermark). True when it moved."""
        self._check_open()
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"log start offset {offset} is past the end {self.log_end_offset} "
                f"of {self.topic}-{self.partition}"
            )
        if offset <= self.log_start_offset:
            return False
        self.durability.log_start_offset = offset
        # the segment holding `offset` and those after it stay; the ones before are below it
        self._delete_oldest(bisect.bisect_right(self.segments.bases, offset) - 1)
        assert self.log_start_offset == offset
        self._check_invariants()
        return True

    def _delete_oldest(self, count: int) -> None:
        doomed = self.segments.all[:count]
        del self.segments.all[:count], self.segments.bases[:count]
        self.durability.log_start_offset = max(self.log_start_offset, self.segments.bases[0])
        self.durability.recovery_point = max(self.recovery_point, self.log_start_offset)
        self.epochs.truncate_from_start(self.log_start_offset)
        self.durability.checkpoint_offsets()
        snapshot.prune(self.directory, self.log_start_offset)
        self.segments.deletes.defer(doomed, self.config.file_delete_delay_ms)

    def close(self) -> None:
        """Flush, seal, checkpoint, write the clean-shutdown marker and close every file."""
        if self.closed:
            return
        self.flush()
        self.segments.all[-1].seal()
        self._txns.write_snapshot(self.log_end_offset, sync=True)
        self.durability.checkpoint_offsets(force=True)  # a periodic write may have been dropped
        self.epochs.flush()
        checkpoint.write_atomically(self.directory / CLEAN_SHUTDOWN_FILE, b"")
        self.close_unclean()

    def mark_deleted(self) -> None:
        """Refuse every further call, but keep the files open for slices in flight. A
        checkpoint being written in a thread lands before this returns; none after."""
        self.closed = True
        self.durability.retire()
        self.epochs.retire()

    def mark_offline(self) -> None:
        """Its directory failed (dir_failure.py): refuse every further call and write nothing
        more, not even at close (no clean-shutdown marker: the next start recovers the log).
        The files stay open, so a fetch response already being sent from them completes."""
        self.closed = self.offline = True
        self.durability.retire()
        self.epochs.retire()

    def delete(self) -> None:
        """Close everything and remove the directory."""
        self.close_unclean()
        shutil.rmtree(self.directory, ignore_errors=True)

    def close_unclean(self) -> None:
        """Close the files without flushing or a marker (a crash of the process, for tests;
        and the last step for a deleted partition). Idempotent."""
        self.closed = True
        self.durability.retire()
        self.epochs.retire()
        for seg in self.segments.all:
            seg.close()
        self.segments.deletes.unlink_all()

    # ----- checks ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.offline:
            raise LogDirIOError(f"the log directory of {self.topic}-{self.partition} is offline")
        if self.closed:
            raise KafkaStorageError(f"log {self.topic}-{self.partition} is closed")

    def _check_invariants(self) -> None:
        segs = self.segments.all
        assert segs and self.segments.bases == [s.base_offset for s in segs]
        for prev, seg in itertools.pairwise(segs):
            # gaps are the cleaner's (segment.py, GAPS_FILE); an overlap is a bug
            assert prev.next_offset <= seg.base_offset, f"overlap after {prev.base_offset}"
            assert self.segments.has_gaps or prev.next_offset == seg.base_offset, (
                f"gap after {prev}"
            )
        assert self.log_start_offset <= self.recovery_point <= self.log_end_offset


def parse_directory_name(name: str) -> tuple[str, int]:
    """'<topic>-<partition>' (or a future log's '<topic>-<partition>.<uuid>-future') ->
    (topic, partition)."""
    name = entry_kind(name)[1]
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise UsageError(f"log directory {name!r} is not named <topic>-<partition>")
    return topic, int(partition)


def directory_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"
