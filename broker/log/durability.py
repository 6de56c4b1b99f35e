"""When a log's batches are durable, and the checkpoint files that say where they start.

`Durability` keeps a log's log start offset (the first offset still served) and its recovery
point (offsets below it are known to be fsynced), with their checkpoint files
`log-start-offset-checkpoint` and `recovery-point-offset-checkpoint`.

Only fdatasync may run off the event loop: `flush_plan()` (loop) dups the fds that need it,
`FlushPlan.run()` (any thread) syncs them, `finish_flush()` / `mark_flushed()` (loop) move
the recovery point; a truncation since the plan was made caps what may be claimed. The
recovery point checkpoint is written when it goes down (truncation), on open, retention and
close, and otherwise once a minute by LogManager's pass, in a thread
(`offsets_checkpoint_jobs`; Kafka's log.flush.offset.checkpoint.interval.ms): a stale one only
means more to recover, while one per fsync would triple the fsyncs of policy "always". A
checkpoint whose value is on disk already is not written again (checkpoint.CheckpointFile), so
an idle log writes nothing.

A new log's directory and the log directory (`unsynced_dirs`), and the producer-state
snapshots written at a roll (`unsynced_snapshots`), are fsynced by the next flush, before
anything after them is counted durable (Kafka does the same since KAFKA-3968).

It sees the log's segment list (segment_list.py), its config and the clock, never the Log;
`retire()` (the log closed, deleted or offline) stops every further checkpoint and flush mark.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from broker.log import checkpoint, snapshot
from broker.log.config import LogConfig
from broker.log.dir_failure import LogDirIOError
from broker.log.segment_list import SegmentList
from broker.metrics_counters import timed_fdatasync
from protocol.clock import Clock

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
RECOVERY_CHECKPOINT_INTERVAL_MS = 60_000


@dataclass(frozen=True, slots=True)
class FlushPlan:
    """Duplicated fds to fdatasync, directories to fsync (a new log's, on its first flush),
    and the offset they make durable. `run` closes the fds; `Durability.finish_flush` takes
    it back."""

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


class Durability:
    def __init__(
        self, directory: Path, config: LogConfig, clock: Clock, segments: SegmentList
    ) -> None:
        self.config = config  # Log.update_config replaces it here too
        self.clock = clock
        self.segments = segments
        self.log_start_offset = 0
        self.recovery_point = 0
        self._last_flush_ms = clock.monotonic_ms()
        self._recovery_point_file = checkpoint.CheckpointFile(directory / RECOVERY_POINT_FILE)
        self._log_start_file = checkpoint.CheckpointFile(directory / LOG_START_FILE)
        self.unsynced_dirs: tuple[Path, ...] = ()  # to fsync with the next flush
        self.unsynced_snapshots: list[Path] = []  # written at a roll, fsynced by a flush
        self._retired = False  # the log is closed (Log.closed): write and mark nothing more

    def holds(self, recovery_point: int, log_start_offset: int) -> None:
        """What the checkpoint files hold (read at open), not to be written again."""
        self._recovery_point_file.holds(checkpoint.encode_offset(recovery_point))
        self._log_start_file.holds(checkpoint.encode_offset(log_start_offset))

    def needs_flush(self) -> bool:
        unflushed = self.segments.active.next_offset - self.recovery_point
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
        segs = self.segments
        i = max(0, bisect.bisect_right(segs.bases, self.recovery_point) - 1)
        fds = tuple(os.dup(seg.fd) for seg in segs.all[i:])
        dir_fds = tuple(os.open(d, os.O_RDONLY) for d in self.unsynced_dirs)
        snapshots, self.unsynced_snapshots = tuple(self.unsynced_snapshots), []
        return FlushPlan(fds, segs.active.next_offset, len(segs.truncations), dir_fds, snapshots)

    def finish_flush(self, plan: FlushPlan) -> None:
        """`plan` ran: move the recovery point (mark_flushed); its directories are durable."""
        self.mark_flushed(plan.up_to_offset, plan.generation)
        if plan.dir_fds:
            self.unsynced_dirs = ()

    def mark_flushed(self, up_to_offset: int, generation: int | None = None) -> None:
        """Offsets below `up_to_offset` are on disk. With the plan's generation, a truncation
        since the plan was made caps what may be claimed."""
        if self._retired:
            return  # close() flushed and checkpointed already (or the log was deleted)
        truncations = self.segments.truncations
        if generation is not None and generation < len(truncations):
            up_to_offset = min(up_to_offset, *truncations[generation:])
        up_to_offset = min(up_to_offset, self.segments.active.next_offset)
        now = self.clock.monotonic_ms()
        self._last_flush_ms = now
        if up_to_offset <= self.recovery_point:
            return
        self.recovery_point = up_to_offset

    def checkpoint_offsets(self, force: bool = False) -> None:
        """Persist the recovery point and log start offset now. `force` (close()): even when
        they were asked for before, since that ask's job may have been dropped unrun (cancelled
        in an executor's queue at shutdown)."""
        for job in self.offsets_checkpoint_jobs(force):
            job()

    def offsets_checkpoint_jobs(self, force: bool = False) -> list[Callable[[], None]]:
        """The writes (to run in any thread) that persist the recovery point and log start
        offset as they are now; none when they were asked for already (unless `force`)."""
        if self._retired:
            return []
        log_end_offset = self.segments.active.next_offset
        assert self.log_start_offset <= self.recovery_point <= log_end_offset, (
            self.log_start_offset, self.recovery_point, log_end_offset,
        )  # fmt: skip
        jobs = (
            self._recovery_point_file.write_job(
                checkpoint.encode_offset(self.recovery_point), force
            ),
            self._log_start_file.write_job(checkpoint.encode_offset(self.log_start_offset), force),
        )
        return [job for job in jobs if job is not None]

    def retire(self) -> None:
        """The log closed: a checkpoint being written in a thread lands before this returns;
        none after, and nothing more is marked flushed."""
        self._retired = True
        for file in (self._recovery_point_file, self._log_start_file):
            file.retire()
