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
run elsewhere: `flush_plan()` (loop) dups the fds that need it, `FlushPlan.run()` (any thread)
syncs them, `mark_flushed()` (loop) moves the recovery point. The recovery point checkpoint is
written when it goes down (truncation), on open, retention and close, and otherwise once a
minute by LogManager's pass, in a thread (`offsets_checkpoint_jobs`; Kafka's
log.flush.offset.checkpoint.interval.ms): a stale one only means more to recover, while one per
fsync would triple the fsyncs of policy "always". A checkpoint whose value is on disk already
is not written again (checkpoint.CheckpointFile), so an idle log writes nothing.

A new log (its directory did not exist) creates only its first `.log` file (the indexes come
with their first entries) and fsyncs nothing:
absent checkpoint files read as offset 0 and an untrusted, empty epoch cache, which is what a
new log holds; its directory and the log directory are fsynced by its first flush, before
anything in it is counted durable (Kafka does the same since KAFKA-3968).

A failed I/O call raises `LogDirIOError` (dir_failure.py): the caller takes the whole log
directory offline (`mark_offline` on every log), and the log is not touched again until the
broker restarts.

Reads return `FileSlice`s on the segment's fd. Segments that retention or truncation removes
are renamed `.deleted` and closed only after file.delete.delay.ms (`purge_deleted_segments`),
so a slice in flight stays readable; a truncation inside the active segment shortens the file
in place, so a slice past the cut may come up short (a sender must check what pread/sendfile
return).

Opening: a segment whose first batch is whole but not of magic 2 (odradek's pre-Kafka format
was magic 1) makes `open` raise LogFormatError, one line naming the directory, before anything
is recovered or cut. Then, without the clean-shutdown marker, every segment from the one
holding the recovery point on is recovered (segment.recover: CRC, lengths, contiguous offsets;
a torn or corrupt tail is cut and later segments dropped; indexes rebuilt). Earlier segments,
and all of them after a clean shutdown, load their indexes and are recovered only if an index
does not check out.
"""

from __future__ import annotations

import bisect
import itertools
import os
import random
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from broker.log import checkpoint, snapshot
from broker.log.cleaner import hold as cleaner_hold
from broker.log.config import OFFSET_INDEX_ENTRY_BYTES, LogConfig
from broker.log.dir_failure import LogDirIOError
from broker.log.epoch import LeaderEpochCache
from broker.log.index import CorruptIndexError
from broker.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    GAPS_FILE,
    H_BASE,
    H_COUNT,
    H_EPOCH,
    H_LAST_DELTA,
    H_LENGTH,
    H_MAX_TS,
    LOG_SUFFIX,
    MAX_RELATIVE_OFFSET,
    SWAP_END_SUFFIX,
    SWAP_SUFFIX,
    LogFormatError,
    Segment,
    check_batch,
    check_stored_batch,
    segment_name,
)
from broker.log.transactions import collect_aborted, index_abort, segment_entries
from broker.log.txn_index import TXN_INDEX_SUFFIX
from broker.metrics_counters import timed_fdatasync
from broker.producer_state import ProducerRow, ProducerStateTable
from broker.txn_state import CompletedTxn, last_stable_offset
from protocol.batch import (
    CONTROL_BIT,
    LEADER_EPOCH_AT,
    LENGTH_PREFIX_BYTES,
    TRANSACTIONAL_BIT,
    InvalidBatchError,
    decode_records,
)
from protocol.clock import Clock
from protocol.codec import FileSlice
from protocol.control import Marker, build_marker, parse_marker
from protocol.errors import (
    InvalidRecordError,
    KafkaStorageError,
    OdradekError,
    OffsetOutOfRangeError,
    UsageError,
)

CLEAN_SHUTDOWN_FILE = "clean-shutdown"
# GAPS_FILE (segment.py) is present once the log may hold an offset gap: the cleaner wrote it
# before its first swap here, or a follower before appending a batch past its end (its
# leader's cleaner). Without it a gap is a torn or broken log (recovery cuts there), as before
# compaction; with it, offsets need only increase.
RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
EPOCH_FILE = "leader-epoch-checkpoint"
RECOVERY_CHECKPOINT_INTERVAL_MS = 60_000
_PREFIX = struct.Struct(">qii")  # base offset, batch length, partition leader epoch
assert _PREFIX.size == LEADER_EPOCH_AT + 4
H_PID, H_PEPOCH, H_SEQ = 9, 10, 11  # producer id, producer epoch, base sequence
H_ATTRIBUTES = 5

VerifyTxn = Callable[[int, int], None]
"""(producer id, producer epoch) -> None, or raises: the hook `append_as_leader` calls for a
transactional batch, where the partition will check that the transaction coordinator added it
to the producer's transaction (KIP-890's verification; INVALID_TXN_STATE when not)."""


class UnexpectedAppendOffsetError(OffsetOutOfRangeError):
    """A replicated batch does not start at the log end offset."""


class AppendInfo(NamedTuple):
    """What one append did (a NamedTuple: built once per batch, cheaper than a frozen
    dataclass's per-field object.__setattr__)."""

    base_offset: int
    last_offset: int
    record_count: int
    max_timestamp: int
    size_bytes: int
    duplicate: bool = False  # an idempotent producer's retry: nothing appended


@dataclass(frozen=True, slots=True)
class ReadResult:
    slice: FileSlice | None  # None (and size 0) when there is nothing to read
    first_offset: int
    next_offset: int  # the offset after the last whole batch included
    size_bytes: int


@dataclass(frozen=True, slots=True)
class FlushPlan:
    """Duplicated fds to fdatasync, directories to fsync (a new log's, on its first flush),
    and the offset they make durable. `run` closes the fds; `Log.finish_flush` takes it back."""

    fds: tuple[int, ...]
    up_to_offset: int
    generation: int
    dir_fds: tuple[int, ...] = ()
    snapshots: tuple[Path, ...] = ()  # producer-state snapshots written at a roll

    def run(self) -> None:
        try:
            for path in self.snapshots:
                snapshot.fsync_file(path)
            for fd in self.fds:
                timed_fdatasync(fd)  # os.fdatasync, counted (metrics)
            for fd in self.dir_fds:
                os.fsync(fd)
        except OSError as exc:
            raise LogDirIOError(f"fdatasync failed: {exc}") from None
        finally:
            for fd in (*self.fds, *self.dir_fds):
                os.close(fd)


class Log:
    def __init__(self, directory: Path, config: LogConfig, clock: Clock) -> None:
        """Use `Log.open`."""
        self.directory = directory
        self.topic, self.partition = parse_directory_name(directory.name)
        self.config = config
        self.clock = clock
        self._segments: list[Segment] = []
        self._bases: list[int] = []  # base offsets of _segments, for bisect
        self._pending_deletes: list[tuple[int, Segment]] = []  # (delete at monotonic ms, seg)
        self._truncations: list[int] = []  # offsets truncated to; len() is the generation
        # ListOffsets MAX_TIMESTAMP: ((segment base, max ts, batch base), answer), see below
        self._max_ts_found: tuple[tuple[int, int, int], tuple[int, int]] | None = None
        self.log_start_offset = 0
        self.recovery_point = 0
        self._last_flush_ms = clock.monotonic_ms()
        self._recovery_point_file = checkpoint.CheckpointFile(directory / RECOVERY_POINT_FILE)
        self._log_start_file = checkpoint.CheckpointFile(directory / LOG_START_FILE)
        self._unsynced_dirs: tuple[Path, ...] = ()  # to fsync with the next flush
        self._unsynced_snapshots: list[Path] = []  # written at a roll, fsynced by a flush
        self.epochs = LeaderEpochCache(directory / EPOCH_FILE)
        self.producers = ProducerStateTable()  # idempotent producers (broker/producer_state.py)
        self.closed = False
        self.offline = False  # its log directory failed (dir_failure.py): closed for good
        self.has_gaps = (directory / GAPS_FILE).exists()
        # segment.jitter.ms: random.randrange by default, a test's own to be deterministic
        self.random_below: Callable[[int], int] = random.randrange
        self._jitter: tuple[int, int] | None = None  # (active segment's base, its jitter)

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
        self._segments = [Segment.create(self.directory, 0, new_directory=True)]
        self._bases = [0]
        self.epochs = LeaderEpochCache.absent(self.directory / EPOCH_FILE)
        zero = checkpoint.encode_offset(0)  # what the absent files read as
        self._recovery_point_file.holds(zero)
        self._log_start_file.holds(zero)
        # the directory's entry and its files' are made durable by the first flush (Kafka's
        # KAFKA-3968: fsyncing them here cost 3,000 directory fsyncs per 3,000 new logs)
        self._unsynced_dirs = (self.directory, self.directory.parent)

    def _load(self) -> None:
        clean = (self.directory / CLEAN_SHUTDOWN_FILE).exists()
        bases = self._clean_directory()
        segments = [Segment.open_existing(self.directory, base) for base in bases]
        for seg in segments:
            seg.allow_gaps = self.has_gaps
        self._refuse_foreign_format(segments)
        self.epochs, epochs_trusted = LeaderEpochCache.load(self.directory / EPOCH_FILE)
        if not epochs_trusted:
            self.epochs.clear()
        recovery_point = checkpoint.read_offset(self.directory / RECOVERY_POINT_FILE)
        log_start = checkpoint.read_offset(self.directory / LOG_START_FILE)
        # what the files mean (absent or corrupt: 0) is not written again
        self._recovery_point_file.holds(checkpoint.encode_offset(recovery_point or 0))
        self._log_start_file.holds(checkpoint.encode_offset(log_start or 0))
        if clean:
            first_unflushed = len(segments)
        else:
            first_unflushed = max(0, bisect.bisect_right(bases, recovery_point or 0) - 1)
        self._segments = self._load_segments(segments, first_unflushed, epochs_trusted)
        if not self._segments:
            self._segments = [Segment.create(self.directory, log_start or 0)]
            self._segments[0].allow_gaps = self.has_gaps
        self._bases = [s.base_offset for s in self._segments]
        for seg in self._segments[:-1]:
            seg.seal()
        leo = self.log_end_offset
        self.log_start_offset = min(max(log_start or 0, self._bases[0]), leo)
        self.epochs.truncate_from_end(leo)
        self.epochs.truncate_from_start(self.log_start_offset)
        if not clean:
            for seg in self._segments[first_unflushed:]:
                os.fdatasync(seg.fd)  # what recovery kept is now durable
        self.recovery_point = leo
        self._check_invariants()
        self._write_offsets_checkpoints()
        (self.directory / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
        checkpoint.fsync_dir(self.directory)
        snapshot.prune(self.directory, self.log_start_offset, above=leo)  # past a cut tail
        recovered = [seg.base_offset for seg in self._segments if seg.recovered]
        # a recovered segment's .txnindex was emptied: replay from a snapshot at or before it
        self._rebuild_producer_state(min(recovered, default=leo))

    def _refuse_foreign_format(self, segments: list[Segment]) -> None:
        """Raise LogFormatError if a segment holds batches of another record format."""
        for seg in segments:
            magic = seg.foreign_magic()
            if magic is None:
                continue
            for opened in segments:
                opened.close()
            if magic == 1:
                what = "odradek's pre-Kafka record format (magic 1)"
            else:
                what = f"record batches of magic {magic} in {seg.log_path.name}, not Kafka's v2"
            raise LogFormatError(
                f"log directory {self.directory} holds {what}; delete it and start again: "
                "there is no converter"
            )

    def _clean_directory(self) -> list[int]:
        """Remove leftovers (temp files, deleted segments, orphan indexes); the segment bases."""
        self._finish_swaps()
        bases = []
        for path in self.directory.iterdir():
            name = path.name
            if name.endswith((checkpoint.TMP_SUFFIX, DELETED_SUFFIX, CLEANED_SUFFIX)):
                path.unlink()
            elif name.endswith(LOG_SUFFIX) and len(path.stem) == 20 and path.stem.isdigit():
                bases.append(int(path.stem))
        for path in self.directory.iterdir():
            stem, _, suffix = path.name.partition(".")
            if suffix in ("index", "timeindex", "txnindex") and (
                not stem.isdigit() or int(stem) not in bases
            ):
                path.unlink()
        return sorted(bases)

    def _finish_swaps(self) -> None:
        """Finish a swap the cleaner committed (`<base>.log.swap` exists): remove every segment
        the swap replaces, [base, the end in `<base>.swap-end`), then give the swap's files
        their final names. Its indexes are rebuilt from the log (they may be half renamed)."""
        for path in sorted(self.directory.glob("*" + LOG_SUFFIX + SWAP_SUFFIX)):
            stem = path.name.partition(".")[0]
            if not (len(stem) == 20 and stem.isdigit()):
                continue
            base = int(stem)
            end_file = self.directory / (stem + SWAP_END_SUFFIX)
            end = checkpoint.read_offset(end_file)
            if end is None:  # written before the rename; its loss means no swap was made
                path.unlink()
                continue
            for other in self.directory.iterdir():
                o_stem, _, suffix = other.name.partition(".")
                if (
                    o_stem.isdigit()
                    and len(o_stem) == 20
                    and base <= int(o_stem) < end
                    and (
                        suffix
                        in ("log", "index", "timeindex", "txnindex", "index.swap", "timeindex.swap")
                    )
                ):
                    other.unlink()
            txn_swap = self.directory / (stem + TXN_INDEX_SUFFIX + SWAP_SUFFIX)
            if txn_swap.exists():  # not rebuilt from the log alone: it needs producer state
                os.replace(txn_swap, self.directory / (stem + TXN_INDEX_SUFFIX))
            os.replace(path, self.directory / (stem + LOG_SUFFIX))
            end_file.unlink()
            checkpoint.fsync_dir(self.directory)
        for path in self.directory.glob("*" + SWAP_END_SUFFIX):
            path.unlink()

    def _load_segments(
        self, segments: list[Segment], first_unflushed: int, epochs_trusted: bool
    ) -> list[Segment]:
        interval = self.config.index_interval_bytes
        kept: list[Segment] = []
        for i, seg in enumerate(segments):
            if kept and (
                seg.base_offset < kept[-1].next_offset
                or (seg.base_offset > kept[-1].next_offset and not self.has_gaps)
            ):
                # An overlap: nothing from here on can be trusted. (A gap is the cleaner's:
                # it removed the last batches of a segment, or emptied one.) If the previous
                # segment's last batch jumped, its base offset was flipped: it goes too.
                jumped_at = kept[-1].last_batch_jumped_at
                if jumped_at is not None:
                    kept[-1].truncate_at_position(jumped_at)
                for later in segments[i:]:
                    later.unlink()
                break
            if i >= first_unflushed:
                cut = seg.recover(interval, self.epochs.assign)
            else:
                cut = self._load_segment(seg, interval, epochs_trusted)
            if cut and kept and seg.size_bytes == 0:
                seg.unlink()
            else:
                kept.append(seg)
            if cut:
                for later in segments[i + 1 :]:
                    later.unlink()
                break
        return kept

    def _load_segment(self, seg: Segment, interval: int, epochs_trusted: bool) -> int:
        try:
            seg.load()
        except CorruptIndexError:
            return seg.recover(interval, self.epochs.assign)
        if not epochs_trusted:
            seg.epochs(self.epochs.assign)
        return 0

    # ----- state ----------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def size_bytes(self) -> int:
        return sum(seg.size_bytes for seg in self._segments)

    @property
    def latest_epoch(self) -> int | None:
        return self.epochs.latest_epoch

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    def segment_base_offsets(self) -> list[int]:
        return list(self._bases)

    def update_config(self, config: LogConfig) -> None:
        self.config = config

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
        h = check_batch(batch, 0, self.config.max_message_bytes)
        size = LENGTH_PREFIX_BYTES + h[H_LENGTH]
        if size != len(batch):
            raise InvalidBatchError(f"{len(batch) - size} bytes follow the batch")
        if h[H_ATTRIBUTES] & CONTROL_BIT:
            raise InvalidRecordError("control batches are written by brokers, not by clients")
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
        segment = self._segments[-1]
        base = segment.next_offset
        last = base + h[H_LAST_DELTA]
        now_ms = self.clock.time_ms()
        if segment.size_bytes and self._should_roll(segment, size, last, now_ms):
            self.roll()
            segment = self._segments[-1]
        latest = self.epochs.latest_epoch
        if latest is None or leader_epoch > latest:
            self.epochs.assign(leader_epoch, base)
        prefix = _PREFIX.pack(base, h[H_LENGTH], leader_epoch)
        parts = (prefix, memoryview(batch)[_PREFIX.size :])
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
        _PREFIX.pack_into(batch, 0, base, len(batch) - LENGTH_PREFIX_BYTES, leader_epoch)
        self._append((batch,), len(batch), base, base, now_ms, leader_epoch)
        self._end_txn(producer_id, producer_epoch, Marker(commit, coordinator_epoch), base,
                      now_ms)  # fmt: skip
        return AppendInfo(base, base, 1, now_ms, len(batch))

    def _end_txn(
        self, producer_id: int, epoch: int, marker: Marker, offset: int, timestamp: int
    ) -> CompletedTxn | None:
        """A marker was appended at `offset`: complete its transaction; index an abort."""
        done = self.producers.end_txn(producer_id, epoch, marker, offset, timestamp)
        if done is not None and done.is_abort:
            index_abort(self._segments, self._bases, self.producers.index_entry(done))
        return done

    def _rebuild_producer_state(self, limit: int | None = None) -> None:
        """Load the newest sound snapshot at or below `limit` (default: the log end) and
        replay the batches after it (see _replay); without one, replay from the log start."""
        hw = self.producers.high_watermark
        limit = self.log_end_offset if limit is None else min(limit, self.log_end_offset)
        start = self.log_start_offset
        # a cleaned log may have dropped a producer's batches: never `complete` (an unknown
        # producer's next sequence then appends instead of failing OUT_OF_ORDER)
        self.producers.reset(self._bases[0] == 0 and not self.has_gaps)
        for offset in reversed(snapshot.list_offsets(self.directory)):
            if offset > limit:
                continue
            path = snapshot.snapshot_path(self.directory, offset)
            try:
                snapshot.load_into(self.producers, path.read_bytes(), not self.has_gaps)
            except snapshot.CorruptSnapshotError:
                path.unlink(missing_ok=True)
                self.producers.reset(self._bases[0] == 0 and not self.has_gaps)
                continue
            start = max(offset, self.log_start_offset)
            break
        if hw is not None:
            self.producers.on_high_watermark(min(hw, self.log_end_offset))
        self._replay(start)

    def _write_snapshot(self, offset: int, sync: bool) -> None:
        """Snapshot the producer table at `offset` (the log end); keep the newest two."""
        path = snapshot.snapshot_path(self.directory, offset)
        snapshot.write(path, snapshot.encode(self.producers), sync)
        if not sync:
            self._unsynced_snapshots.append(path)
        snapshot.prune(self.directory, self.log_start_offset)

    def _replay(self, start: int) -> None:
        """Apply the batches from `start` to the log end to the producer table, adding each
        abort met to its segment's `.txnindex` if that index lacks it (a recovered one)."""
        i = max(0, bisect.bisect_right(self._bases, start) - 1)
        for seg in self._segments[i:]:
            for entry in self.producers.replay(segment_entries(seg, start)):
                index_abort(self._segments, self._bases, entry)

    def append_as_follower(self, batches: bytes | bytearray) -> AppendInfo | None:
        """Append already-stamped batches byte for byte. All are checked before any is written."""
        self._check_open()
        view = memoryview(batches)
        expected = self.log_end_offset
        headers = []
        pos = 0
        gap = False
        while pos < len(view):
            h = check_stored_batch(view, pos)  # the leader's cleaner may have rewritten it
            if h[H_BASE] < expected:
                raise UnexpectedAppendOffsetError(
                    f"batch at offset {h[H_BASE]}, the log ends at {expected}"
                )
            gap = gap or h[H_BASE] > expected  # the leader's cleaner removed what was between
            headers.append((pos, h))
            expected = h[H_BASE] + h[H_LAST_DELTA] + 1
            pos += LENGTH_PREFIX_BYTES + h[H_LENGTH]
        if not headers:
            return None
        if gap:
            self.mark_gaps()
        for at, h in headers:
            size = LENGTH_PREFIX_BYTES + h[H_LENGTH]
            last = h[H_BASE] + h[H_LAST_DELTA]
            self._append((view[at : at + size],), size, h[H_BASE], last, h[H_MAX_TS], h[H_EPOCH])
            if h[H_ATTRIBUTES] & CONTROL_BIT:
                self._replicated_marker(view[at : at + size], h)
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

    def _replicated_marker(self, batch: memoryview, h: tuple[int, ...]) -> None:
        if h[H_PID] < 0:
            return
        try:
            marker = parse_marker(batch)
        except InvalidBatchError:
            return  # another kind of control batch: no transaction ends
        self._end_txn(h[H_PID], h[H_PEPOCH], marker, h[H_BASE], h[H_MAX_TS])

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
        segment = self._segments[-1]
        if segment.size_bytes and self._should_roll(segment, size, last, now_ms):
            self.roll()
            segment = self._segments[-1]
        latest = self.epochs.latest_epoch
        if latest is None or epoch > latest:
            self.epochs.assign(epoch, base)
        segment.append(parts, size, base, last, max_timestamp, now_ms,
                       self.config.index_interval_bytes)  # fmt: skip

    def _should_roll(self, seg: Segment, size: int, last_offset: int, now_ms: int) -> bool:
        cfg = self.config
        # Kafka's maxSegmentMs: a compacted log rolls by max.compaction.lag.ms too, or records
        # in its active segment (which the cleaner never touches) could outlive that lag
        segment_ms = (
            min(cfg.segment_ms, cfg.max_compaction_lag_ms) if cfg.compact else cfg.segment_ms
        )
        roll_ms = segment_ms - self._roll_jitter_ms(seg)
        return (
            seg.size_bytes + size > cfg.segment_bytes
            or (seg.rolling_base_ms is not None and now_ms - seg.rolling_base_ms >= roll_ms)
            or len(seg.index) >= cfg.segment_index_bytes // OFFSET_INDEX_ENTRY_BYTES
            or last_offset - seg.base_offset > MAX_RELATIVE_OFFSET
        )

    def _roll_jitter_ms(self, seg: Segment) -> int:
        """segment.jitter.ms: a jitter in [0, min(jitter, segment.ms)) taken off segment.ms,
        drawn once per active segment (Kafka's randomSegmentJitter) from `self.random_below`
        (injected: tests make it deterministic)."""
        jitter_max = min(self.config.segment_jitter_ms, self.config.segment_ms)
        if jitter_max <= 0:
            return 0
        if self._jitter is None or self._jitter[0] != seg.base_offset:
            self._jitter = (seg.base_offset, self.random_below(jitter_max))
        return self._jitter[1]

    def roll(self) -> None:
        """Close the active segment and start a new one at the log end offset."""
        self._check_open()
        active = self._segments[-1]
        if active.size_bytes == 0:
            return
        active.seal()
        new = Segment.create(self.directory, active.next_offset)
        new.allow_gaps = self.has_gaps
        self._segments.append(new)
        self._bases.append(new.base_offset)
        self._write_snapshot(new.base_offset, sync=False)  # fsynced by the next flush
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
        segments = self._segments
        leo = segments[-1].next_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self.log_start_offset}, {leo}] "
                f"of {self.topic}-{self.partition}"
            )
        if max_bytes < 0:
            raise UsageError(f"max_bytes {max_bytes} is negative")
        if offset == leo or (max_offset is not None and offset >= max_offset):
            return ReadResult(None, offset, offset, 0)
        i = bisect.bisect_right(self._bases, offset) - 1
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

    # ----- transactions (KIP-98; broker/txn_state.py) -------------------------------------

    def collect_aborted_transactions(
        self, start_offset: int, upper_offset: int
    ) -> list[tuple[int, int]]:
        """(producer id, first offset) of every aborted transaction whose marker is at or after
        `start_offset` and whose first offset is below `upper_offset` (Kafka's
        collectAbortedTransactions), from the `.txnindex` of the segments that can hold them."""
        self._check_open()
        return collect_aborted(self._segments, self._bases, start_offset, upper_offset)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of an open, or completed but unreplicated, transaction (not below
        the log start); None when there is none."""
        first = self.producers.first_unstable_offset()
        return None if first is None else max(first, self.log_start_offset)

    def update_high_watermark(self, high_watermark: int) -> None:
        """The partition's HW moved: transactions whose marker is below it stop holding the
        LSO (Kafka's onHighWatermarkUpdated)."""
        self.producers.on_high_watermark(high_watermark)

    def last_stable_offset(self, high_watermark: int) -> int:
        """min(first unstable offset, HW): where read_committed reads stop."""
        self.producers.on_high_watermark(high_watermark)
        return last_stable_offset(self.first_unstable_offset, high_watermark)

    def ongoing_transactions(self) -> list[tuple[int, int, int, int]]:
        """(producer id, producer epoch, first offset, start timestamp ms), oldest first."""
        return self.producers.ongoing_transactions()

    def producer_states(self) -> list[ProducerRow]:
        """DescribeProducers' rows: id, epoch, last sequence, last timestamp, coordinator
        epoch, current transaction start offset (-1: none)."""
        return self.producers.rows()

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, batch max timestamp) of the first batch with max timestamp >= the given."""
        for seg in self._segments:
            found = seg.find_by_time(timestamp_ms)
            if found is not None:
                return max(found[0], self.log_start_offset), found[1]
        return None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.epochs.end_offset_for(epoch, self.log_end_offset)

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record holding the log's largest timestamp
        (ListOffsets MAX_TIMESTAMP, KIP-734); None for a log without batches.

        Each segment keeps its max timestamp and the base offset of the batch holding it
        (segment.py, from the batch headers and the time index), so the segment and the batch
        come without a scan; only that one batch is decoded, to find the record within it (as
        Kafka does), and the answer is kept until another batch takes the maximum."""
        best: Segment | None = None
        for seg in self._segments:  # the first segment with the largest max, as Kafka
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        key = (best.base_offset, best.max_timestamp, best.offset_of_max_timestamp)
        if self._max_ts_found is not None and self._max_ts_found[0] == key:
            return self._max_ts_found[1]
        found = (max(best.offset_of_max_timestamp, self.log_start_offset), best.max_timestamp)
        located = best.locate(best.offset_of_max_timestamp)
        if located is not None:
            pos, header = located
            data = os.pread(best.fd, LENGTH_PREFIX_BYTES + header[H_LENGTH], pos)
            try:
                _, records = decode_records(data)
            except (InvalidBatchError, OdradekError):
                records = []  # undecodable here: the batch's base offset is the answer
            for r in records:
                if r.timestamp == best.max_timestamp:
                    found = (max(r.offset, self.log_start_offset), r.timestamp)
                    break
        self._max_ts_found = (key, found)
        return found

    # ----- truncation -----------------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= `offset` (a batch is removed whole)."""
        self._check_open()
        if offset >= self.log_end_offset:
            return
        if offset < self._bases[0] or offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        self._truncations.append(offset)
        i = bisect.bisect_right(self._bases, offset) - 1
        self._defer_delete(self._segments[i + 1 :])
        del self._segments[i + 1 :], self._bases[i + 1 :]
        self._segments[-1].truncate_to(offset)
        self.epochs.truncate_from_end(self.log_end_offset)
        if self.recovery_point > self.log_end_offset:
            self.recovery_point = self.log_end_offset
            self._write_offsets_checkpoints()
        snapshot.prune(self.directory, self.log_start_offset, above=self.log_end_offset)
        self._rebuild_producer_state()
        self._check_invariants()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log; it continues, empty, at `offset`."""
        self._check_open()
        if offset < 0:
            raise UsageError(f"cannot start a log at offset {offset}")
        self._truncations.append(offset)
        self._defer_delete(self._segments)
        self._segments = [Segment.create(self.directory, offset)]
        self._segments[0].allow_gaps = self.has_gaps
        self._bases = [offset]
        self.log_start_offset = self.recovery_point = offset
        self.epochs.clear()
        self.producers.reset(offset == 0)
        snapshot.prune(self.directory, offset, above=-1)
        self._write_offsets_checkpoints()
        checkpoint.fsync_dir(self.directory)

    # ----- the log cleaner (cleaner/) ---------------------------------------------------------

    @property
    def generation(self) -> int:
        """Changes whenever batches are removed (a truncation): a cleaning planned before
        must not be swapped in."""
        return len(self._truncations)

    @property
    def active_segment(self) -> Segment:
        return self._segments[-1]

    def truncated_below(self, generation: int) -> int | None:
        """The lowest offset truncated to since `generation` (None: no truncation since)."""
        since = self._truncations[generation:]
        return min(since) if since else None

    def closed_segments(self) -> list[Segment]:
        """Every segment but the active one, oldest first (the cleaner reads these)."""
        return self._segments[:-1]

    def replace_segments(self, old: list[Segment], new: Segment, generation: int) -> bool:
        """Swap the cleaner's `new` segment (files under `.cleaned`, synced, with its
        `.swap-end` file and GAPS_FILE written and synced by the cleaner's thread) in for the
        consecutive closed segments `old`, by Kafka's suffix protocol:

        1. `.cleaned` -> `.swap`: from here a restart finishes the swap (`_clean_directory`);
        2. the old segments but the first renamed `.deleted` (deferred, for reads in flight);
        3. `.swap` -> the final names, over the first old segment's files.

        Renames only: nothing here waits for the disk (the caller fsyncs the directory off the
        loop afterwards; a crash before that finds either the old names or the swap, which
        recovery finishes). False (and nothing done) when the log changed since the cleaning
        was planned: a truncation, the old segments gone (retention) or the log closed."""
        if self.closed or generation != self.generation:
            return False
        try:
            i = next(k for k, seg in enumerate(self._segments) if seg is old[0])
        except StopIteration:
            return False
        if i + len(old) >= len(self._segments) or any(
            a is not b for a, b in zip(self._segments[i : i + len(old)], old, strict=True)
        ):
            return False
        assert new.base_offset == old[0].base_offset and new.next_offset <= old[-1].next_offset
        self.mark_gaps()
        new.allow_gaps = True
        end_file = self.directory / (segment_name(new.base_offset) + SWAP_END_SUFFIX)
        assert checkpoint.read_offset(end_file) == old[-1].next_offset, "no swap-end file"
        new.rename_suffix(SWAP_SUFFIX)
        self.hold("swap")
        due = self.clock.monotonic_ms() + self.config.file_delete_delay_ms
        for seg in old[1:]:
            seg.rename_deleted()
            self._pending_deletes.append((due, seg))
        self.hold("deleted")
        new.rename_suffix("")
        old[0].replaced = True
        self._pending_deletes.append((due, old[0]))
        end_file.unlink()
        self._segments[i : i + len(old)] = [new]
        self._bases[i : i + len(old)] = [new.base_offset]
        self._check_invariants()
        return True

    def mark_gaps(self) -> None:
        """From now on the log may hold offset gaps (GAPS_FILE), durably, before any does."""
        if self.has_gaps:
            return
        if not (self.directory / GAPS_FILE).exists():  # the cleaner's thread writes it first
            checkpoint.write_atomically(self.directory / GAPS_FILE, b"")
        self.has_gaps = True
        for seg in self._segments:
            seg.allow_gaps = True

    def hold(self, step: str) -> None:
        """A test hook (cleaner/hold.py): may block at a named step of a swap."""
        cleaner_hold.hold(self.directory.parent, step)

    # ----- durability -----------------------------------------------------------------------

    def needs_flush(self) -> bool:
        unflushed = self.log_end_offset - self.recovery_point
        if unflushed <= 0:
            return False
        cfg = self.config
        if cfg.flush_messages is not None and unflushed >= cfg.flush_messages:
            return True
        return (
            cfg.flush_ms is not None
            and self.clock.monotonic_ms() - self._last_flush_ms >= cfg.flush_ms
        )

    def flush_plan(self) -> FlushPlan:
        i = max(0, bisect.bisect_right(self._bases, self.recovery_point) - 1)
        fds = tuple(os.dup(seg.fd) for seg in self._segments[i:])
        dir_fds = tuple(os.open(d, os.O_RDONLY) for d in self._unsynced_dirs)
        snapshots, self._unsynced_snapshots = tuple(self._unsynced_snapshots), []
        return FlushPlan(fds, self.log_end_offset, len(self._truncations), dir_fds, snapshots)

    def finish_flush(self, plan: FlushPlan) -> None:
        """`plan` ran: move the recovery point (mark_flushed); its directories are durable."""
        self.mark_flushed(plan.up_to_offset, plan.generation)
        if plan.dir_fds:
            self._unsynced_dirs = ()

    def mark_flushed(self, up_to_offset: int, generation: int | None = None) -> None:
        """Offsets below `up_to_offset` are on disk. With the plan's generation, a truncation
        since the plan was made caps what may be claimed."""
        if self.closed:
            return  # close() flushed and checkpointed already (or the log was deleted)
        if generation is not None and generation < len(self._truncations):
            up_to_offset = min(up_to_offset, *self._truncations[generation:])
        up_to_offset = min(up_to_offset, self.log_end_offset)
        now = self.clock.monotonic_ms()
        self._last_flush_ms = now
        if up_to_offset <= self.recovery_point:
            return
        self.recovery_point = up_to_offset

    def flush(self) -> None:
        plan = self.flush_plan()
        plan.run()
        self.finish_flush(plan)

    def checkpoint_offsets(self) -> None:
        """Persist the recovery point and log start offset now."""
        if not self.closed:
            self._write_offsets_checkpoints()

    def offsets_checkpoint_jobs(self) -> list[Callable[[], None]]:
        """The writes (to run in any thread) that persist the recovery point and log start
        offset as they are now; none when the files hold them already."""
        if self.closed:
            return []
        assert self.log_start_offset <= self.recovery_point <= self.log_end_offset, (
            self.log_start_offset, self.recovery_point, self.log_end_offset,
        )  # fmt: skip
        jobs = (
            self._recovery_point_file.write_job(checkpoint.encode_offset(self.recovery_point)),
            self._log_start_file.write_job(checkpoint.encode_offset(self.log_start_offset)),
        )
        return [job for job in jobs if job is not None]

    def _write_offsets_checkpoints(self) -> None:
        for job in self.offsets_checkpoint_jobs():
            job()

    # ----- retention and deletion -----------------------------------------------------------

    def delete_retained_segments(self) -> int:
        """Delete closed segments past retention.ms / retention.bytes, oldest first; only
        when cleanup.policy has delete (a compact-only log is never deleted by retention)."""
        self._check_open()
        self.purge_deleted_segments()
        cfg = self.config
        if not cfg.delete_enabled:
            return 0
        closed = self._segments[:-1]
        # Kafka's deletableSegments: only below the HW; and never an open transaction's records
        # (the first unstable offset), so a transaction is never cut in two
        bounds = [b for b in (self.producers.high_watermark, self.first_unstable_offset)
                  if b is not None]  # fmt: skip
        if bounds:
            closed = closed[: bisect.bisect_right(self._bases, min(bounds)) - 1]
        count = 0
        if cfg.retention_ms is not None:
            now = self.clock.time_ms()
            while count < len(closed) and now - closed[count].max_timestamp > cfg.retention_ms:
                count += 1
        if cfg.retention_bytes is not None:
            excess = self.size_bytes - cfg.retention_bytes
            by_size = 0
            while by_size < len(closed) and closed[by_size].size_bytes <= excess:
                excess -= closed[by_size].size_bytes
                by_size += 1
            count = max(count, by_size)
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
        self.log_start_offset = offset
        # the segment holding `offset` and those after it stay; the ones before are below it
        self._delete_oldest(bisect.bisect_right(self._bases, offset) - 1)
        assert self.log_start_offset == offset
        self._check_invariants()
        return True

    def _delete_oldest(self, count: int) -> None:
        doomed = self._segments[:count]
        del self._segments[:count], self._bases[:count]
        self.log_start_offset = max(self.log_start_offset, self._bases[0])
        self.recovery_point = max(self.recovery_point, self.log_start_offset)
        self.epochs.truncate_from_start(self.log_start_offset)
        self._write_offsets_checkpoints()
        snapshot.prune(self.directory, self.log_start_offset)
        self._defer_delete(doomed)

    def _defer_delete(self, segments: list[Segment]) -> None:
        due = self.clock.monotonic_ms() + self.config.file_delete_delay_ms
        for seg in segments:
            seg.rename_deleted()
            self._pending_deletes.append((due, seg))

    def purge_deleted_segments(self) -> int:
        """Close and unlink `.deleted` segments whose delay has passed. Returns how many."""
        now = self.clock.monotonic_ms()
        due = [seg for at, seg in self._pending_deletes if at <= now]
        self._pending_deletes = [(at, s) for at, s in self._pending_deletes if at > now]
        for seg in due:
            seg.unlink()
        return len(due)

    def close(self) -> None:
        """Flush, seal, checkpoint, write the clean-shutdown marker and close every file."""
        if self.closed:
            return
        self.flush()
        self._segments[-1].seal()
        self._write_snapshot(self.log_end_offset, sync=True)
        self._write_offsets_checkpoints()
        self.epochs.flush()
        checkpoint.write_atomically(self.directory / CLEAN_SHUTDOWN_FILE, b"")
        self._close_files()

    def close_unclean(self) -> None:
        """Close the files without flushing or a marker (a crash of the process, for tests;
        and the last step for a deleted partition). Idempotent."""
        self._close_files()

    def mark_deleted(self) -> None:
        """Refuse every further call, but keep the files open for slices in flight. A
        checkpoint being written in a thread lands before this returns; none after."""
        self.closed = True
        self._retire_checkpoints()

    def _retire_checkpoints(self) -> None:
        for file in (self._recovery_point_file, self._log_start_file):
            file.retire()
        self.epochs.retire()

    def mark_offline(self) -> None:
        """Its directory failed (dir_failure.py): refuse every further call and write nothing
        more, not even at close (no clean-shutdown marker: the next start recovers the log).
        The files stay open, so a fetch response already being sent from them completes."""
        self.closed = self.offline = True
        self._retire_checkpoints()

    def delete(self) -> None:
        """Close everything and remove the directory."""
        self._close_files()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _close_files(self) -> None:
        self.closed = True
        self._retire_checkpoints()
        for seg in self._segments:
            seg.close()
        for _, seg in self._pending_deletes:
            seg.unlink()
        self._pending_deletes.clear()

    # ----- checks ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.offline:
            raise LogDirIOError(f"the log directory of {self.topic}-{self.partition} is offline")
        if self.closed:
            raise KafkaStorageError(f"log {self.topic}-{self.partition} is closed")

    def _check_invariants(self) -> None:
        segs = self._segments
        assert segs and self._bases == [s.base_offset for s in segs]
        for prev, seg in itertools.pairwise(segs):
            # gaps are the cleaner's (segment.py, GAPS_FILE); an overlap is a bug
            assert prev.next_offset <= seg.base_offset, f"overlap after {prev.base_offset}"
            assert self.has_gaps or prev.next_offset == seg.base_offset, f"gap after {prev}"
        assert self.log_start_offset <= self.recovery_point <= self.log_end_offset


def parse_directory_name(name: str) -> tuple[str, int]:
    """'<topic>-<partition>' -> (topic, partition)."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise UsageError(f"log directory {name!r} is not named <topic>-<partition>")
    return topic, int(partition)


def directory_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"
