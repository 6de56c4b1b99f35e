"""The broker's log cleaner (Kafka's LogCleaner + LogCleanerManager): which compacted log is
cleaned next, the cleaning threads, the swap, and the cleaner's checkpoint.

`run()` is one asyncio task with `threads` workers (log.cleaner.threads; `reconfigure` changes
the settings live, a dynamic broker config: broker/dynamic_apply.py). Each worker, every
`backoff_ms` while nothing is cleanable (log.cleaner.backoff.ms), takes the filthiest log not
being cleaned (plan.py: compacted logs whose dirty ratio reached min.cleanable.dirty.ratio, or
whose dirty head passed max.compaction.lag.ms, or whose tombstones' delete horizon passed),
hands a CleanTask (cleaner.py: duplicated fds of its closed segments) to a thread of its own
bounded pool, and, back on the loop, swaps each cleaned group in (Log.replace_segments). So the
event loop never reads or rewrites a segment: producers and fetches go on while a log is
cleaned; only the renames of a swap run on the loop, one group's swap per loop step.

`cleaner-offset-checkpoint` in each log directory (checkpoint.py's partition-offset layout,
Kafka's file name) holds the first dirty offset of each log in it: where the next pass starts
mapping. It is written, off the loop, after every pass; a lost write only means a pass redoes
work. A replica being moved to another log directory (dir_moves.py) is not cleaned until it
has moved; its new log starts over.

Metrics (Kafka's names, broker/metrics.py): max-dirty-percent, cleaner-recopy-percent,
max-clean-time-secs, max-compaction-delay-secs, uncleanable-partitions-count (a log whose
cleaning failed is left alone until the broker restarts, as Kafka marks it uncleanable).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from broker.log import checkpoint
from broker.log.cleaner import plan
from broker.log.cleaner.cleaner import CleanResult, CleanTask, SegmentToRead, clean
from broker.log.cleaner.hold import hold
from broker.log.dir_failure import is_log_dir_failure
from broker.log.log import Log
from broker.log.manager import LogManager
from broker.log.segment import SWAP_END_SUFFIX, Segment, segment_name
from protocol.clock import Clock

CHECKPOINT_FILE = "cleaner-offset-checkpoint"
logger = logging.getLogger(__name__)

Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class CleanerSettings:
    """The broker's log.cleaner.* settings."""

    threads: int = 1
    dedupe_buffer_bytes: int = 128 * 1024 * 1024
    io_max_bytes_per_second: float | None = None
    backoff_ms: int = 15_000


@dataclass(slots=True)
class CleanerStats:
    """What the metrics show (Kafka's LogCleaner and LogCleanerManager gauges)."""

    max_dirty_percent: float = 0.0
    recopy_percent: float = 0.0  # of the last pass: bytes written / bytes read
    max_clean_time_secs: float = 0.0  # of the last pass of any thread
    max_compaction_delay_secs: float = 0.0
    passes: int = 0
    records_read: int = 0
    records_kept: int = 0
    bytes_read: int = 0
    bytes_written: int = 0


class LogCleaner:
    def __init__(
        self,
        logs: LogManager,
        clock: Clock,
        settings: CleanerSettings,
        high_watermark: Callable[[str, int], int | None],
    ) -> None:
        self.logs = logs
        self.clock = clock
        self.settings = settings
        self.high_watermark = high_watermark
        self.stats = CleanerStats()
        self.uncleanable: set[Key] = set()
        self._in_progress: set[Key] = set()
        self._horizons: dict[Key, int] = {}  # the latest delete horizon a pass set, per log
        self._checkpoint: dict[Key, int] = {}
        for log_dir in logs.log_dirs:  # each directory's file holds its logs' entries
            path = log_dir / CHECKPOINT_FILE
            try:
                self._checkpoint.update(checkpoint.read_partition_offsets(path))
            except checkpoint.CorruptCheckpointError as exc:
                logger.warning("%s: %s; cleaning starts over", path, exc)
        self._pool = ThreadPoolExecutor(settings.threads, thread_name_prefix="log-cleaner")
        # the Log and its generation each checkpoint entry was written for (in memory only: a
        # checkpoint read at start belongs to the log opened then)
        self._checkpoint_at: dict[Key, tuple[Log, int]] = {}
        self._checkpoint_lock = asyncio.Lock()  # one write of the file at a time
        logs.add_delete_listener(self.forget)
        self._wake = asyncio.Event()
        self._resized = asyncio.Event()  # reconfigure changed the thread count
        self.workers_running = 0  # the worker tasks of `run` (log.cleaner.threads, once settled)

    def checkpointed(self, topic: str, partition: int) -> int | None:
        return self._checkpoint.get((topic, partition))

    def wake(self) -> None:
        """Look for work now (tests; a config change)."""
        self._wake.set()

    # ----- choosing -----------------------------------------------------------------------

    def cleanable(self, log: Log, now_ms: int) -> plan.CleanableRange | None:
        """The log's clean and dirty sections, or None if it is not compacted or not ours."""
        key = (log.topic, log.partition)
        hw = self.high_watermark(*key)
        if not log.config.compact or hw is None or log.closed or self.logs.future(key):
            return None  # (a replica being moved is cleaned after, as Kafka pauses it)
        segments = [_info(seg) for seg in (*log.segments.closed(), log.segments.active)]
        return plan.cleanable_range(
            segments, log.log_start_offset, self._first_dirty(log), hw, now_ms,
            log.config.min_compaction_lag_ms, log.config.max_compaction_lag_ms,
            log.first_unstable_offset,
        )  # fmt: skip

    def dirty_ratios(self) -> dict[Key, float]:
        """Every compacted log's dirty ratio now (metrics, the console)."""
        now = self.clock.time_ms()
        out: dict[Key, float] = {}
        for log in self.logs.logs():
            r = self.cleanable(log, now)
            if r is not None:
                out[(log.topic, log.partition)] = r.dirty_ratio
        return out

    def _choose(self, now_ms: int) -> tuple[Log, plan.CleanableRange] | None:
        candidates: list[tuple[object, plan.CleanableRange]] = []
        max_ratio, max_delay = 0.0, 0.0
        for log in self.logs.logs():
            key = (log.topic, log.partition)
            if key in self._in_progress or key in self.uncleanable:
                continue
            r = self.cleanable(log, now_ms)
            if r is None:
                continue
            max_ratio = max(max_ratio, r.dirty_ratio)
            horizon = self._horizons.get(key)
            if plan.is_cleanable(r, log.config.min_cleanable_dirty_ratio) or (
                horizon is not None and horizon <= now_ms
            ):
                candidates.append((log, r))
                if r.must_clean:
                    max_delay = max(max_delay, _delay_secs(log, r, now_ms))
        self.stats.max_dirty_percent = 100.0 * max_ratio
        self.stats.max_compaction_delay_secs = max_delay
        chosen = plan.filthiest(candidates)
        if chosen is None:
            return None
        assert isinstance(chosen, Log)
        return chosen, next(r for log, r in candidates if log is chosen)

    # ----- running ------------------------------------------------------------------------

    async def run(self, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        """The workers, forever (cancel to stop): `settings.threads` of them, started again
        or retired as `reconfigure` changes that; a worker's failure ends the run."""
        workers: list[asyncio.Task[None]] = []
        try:
            while True:
                workers = [w for w in workers if not w.done()]
                workers += [asyncio.create_task(self._worker(i, sleep))
                            for i in range(len(workers), self.settings.threads)]  # fmt: skip
                self._resized.clear()
                resized = asyncio.ensure_future(self._resized.wait())
                done, _ = await asyncio.wait([*workers, resized],
                                             return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
                resized.cancel()
                for w in done - {resized}:
                    w.result()  # a retired worker's None, or its failure raised
        finally:
            for w in workers:
                w.cancel()
            self._pool.shutdown(wait=False, cancel_futures=True)

    def reconfigure(self, settings: CleanerSettings) -> None:
        """New log.cleaner.* settings, live (Kafka's LogCleaner.reconfigure): the buffer, I/O
        rate and backoff count from the next pass; added threads start now, and a worker
        numbered at or above the new count retires after its current pass."""
        if settings.threads > self.settings.threads:  # a bigger pool; the old one's tasks end
            old, self._pool = (
                self._pool,
                ThreadPoolExecutor(settings.threads, thread_name_prefix="log-cleaner"),
            )
            old.shutdown(wait=False)
        self.settings = settings
        self._resized.set()
        self._wake.set()

    async def _worker(self, index: int, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.workers_running += 1
        try:
            await self._work(index, sleep)
        finally:
            self.workers_running -= 1

    async def _work(self, index: int, sleep: Callable[[float], Awaitable[None]]) -> None:
        while index < self.settings.threads:
            cleaned = False
            if not self.logs.offline:
                cleaned = await self.clean_once()
            if not cleaned:
                self._wake.clear()
                waiter = asyncio.ensure_future(self._wake.wait())
                pause = asyncio.ensure_future(sleep(self.settings.backoff_ms / 1000))
                await asyncio.wait((waiter, pause), return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                pause.cancel()

    async def clean_once(self) -> bool:
        """Clean the filthiest log, if any is cleanable. True when one was."""
        now_ms = self.clock.time_ms()
        chosen = self._choose(now_ms)
        if chosen is None:
            return False
        log, r = chosen
        key = (log.topic, log.partition)
        self._in_progress.add(key)
        generation = log.segments.generation
        first = next(iter(log.segments.closed()), None)
        try:
            await self._clean_log(log, r, now_ms)
        except Exception as exc:  # one log's failure must not stop the rest
            if (
                log.closed
                or log.segments.generation != generation
                or first not in log.segments.closed()
            ):
                # deleted, closed, truncated or shortened by retention under the pass: its
                # files changed as it read or wrote them; the pass is void, nothing is wrong
                logger.info("cleaning of %s-%s dropped: the log changed (%s)",
                            log.topic, log.partition, exc)  # fmt: skip
            elif is_log_dir_failure(exc):
                self.logs.fail(exc, f"cleaning of {log.topic}-{log.partition}", log.directory)
            else:
                logger.error("cleaning %s-%s failed, it is left uncleaned: %s",
                             log.topic, log.partition, exc)  # fmt: skip
                self.uncleanable.add(key)
        finally:
            self._in_progress.discard(key)
        return True

    def forget(self, topic: str, partition: int) -> None:
        """The partition left this broker (deleted, moved away): its checkpoint and marks go,
        so a partition of the same name made later starts clean (Kafka's updateCheckpoints)."""
        key = (topic, partition)
        self._checkpoint.pop(key, None)
        self._checkpoint_at.pop(key, None)
        self._horizons.pop(key, None)
        self.uncleanable.discard(key)

    def _first_dirty(self, log: Log) -> int | None:
        """The checkpoint, lowered to any truncation since it was written (Kafka's
        maybeTruncateCheckpoint); forgotten if the log is not the one it was written for."""
        key = (log.topic, log.partition)
        offset = self._checkpoint.get(key)
        at = self._checkpoint_at.get(key)
        if offset is None or at is None:
            return offset
        owner, generation = at
        if owner is not log:  # another Log object: recreated since
            self.forget(*key)
            return None
        below = log.segments.truncated_below(generation)
        return offset if below is None else min(offset, below)

    async def _clean_log(self, log: Log, r: plan.CleanableRange, now_ms: int) -> None:
        started = time.monotonic()
        old = log.segments.closed()
        generation = log.segments.generation
        task = self._task(log, old, r, now_ms)
        loop = asyncio.get_running_loop()
        result: CleanResult = await loop.run_in_executor(self._pool, clean, task)
        by_base = {seg.base_offset: seg for seg in old}
        swapped = True
        for n, group in enumerate(result.groups):
            if n and swapped:
                # each group's swap is its own loop step: its renames and unlinks wait for the
                # file system (some 10 ms a group when the disk is busy), so a pass of many
                # groups in one step stalled the loop for the sum; between steps the log may
                # change, which the next swap sees (its generation or old segments) and drops
                await asyncio.sleep(0)
            if swapped:
                swapped = log.replace_segments([by_base[b] for b in group.old_bases], group.new,
                                               generation)  # fmt: skip
            if not swapped:  # the log changed meanwhile: the rest of this pass is void
                group.new.unlink()
                end = segment_name(group.new.base_offset) + SWAP_END_SUFFIX
                (log.directory / end).unlink(missing_ok=True)
        if not swapped:
            logger.info("cleaning of %s-%s dropped: the log changed", log.topic, log.partition)
            return
        # the swaps' renames made durable, off the loop (Log.replace_segments waits for none)
        await loop.run_in_executor(None, checkpoint.fsync_dir, log.directory)
        key = (log.topic, log.partition)
        hold(self.logs.log_dir, "checkpoint")
        self._checkpoint[key] = result.end_offset
        self._checkpoint_at[key] = (log, log.segments.generation)
        if result.delete_horizon_ms is not None:
            self._horizons[key] = max(self._horizons.get(key, 0), result.delete_horizon_ms)
        elif self._horizons.get(key, now_ms + 1) <= now_ms:
            del self._horizons[key]
        await self._write_checkpoint()
        self._account(result, time.monotonic() - started)
        logger.info(
            "cleaned %s-%s up to %d: %d of %d records kept, %d -> %d bytes",
            log.topic, log.partition, result.end_offset, result.records_kept,
            result.records_read, result.bytes_read, result.bytes_written,
        )  # fmt: skip

    def _task(self, log: Log, old: list[Segment], r: plan.CleanableRange, now_ms: int) -> CleanTask:
        cfg = log.config
        segs = [SegmentToRead(s.base_offset, s.next_offset, s.size_bytes, os.dup(s.fd))
                for s in old]  # fmt: skip
        return CleanTask(
            directory=log.directory, segments=segs, first_dirty=r.first_dirty,
            first_uncleanable=r.first_uncleanable, now_ms=now_ms,
            delete_retention_ms=cfg.delete_retention_ms, segment_bytes=cfg.segment_bytes,
            segment_index_bytes=cfg.segment_index_bytes,
            index_interval_bytes=cfg.index_interval_bytes,
            max_message_bytes=cfg.max_message_bytes,
            map_bytes=self.settings.dedupe_buffer_bytes // self.settings.threads,
            producer_last_offsets=log.producers.last_offsets(),
            aborted=[e for s in (*old, log.segments.active) for e in s.txn_index.entries],
            io_max_bytes_per_second=self.settings.io_max_bytes_per_second,
            sleep=time.sleep, monotonic=time.monotonic,
            hold=lambda step: hold(self.logs.log_dir, step),
        )  # fmt: skip

    async def _write_checkpoint(self) -> None:
        async with self._checkpoint_lock:  # threads > 1: two passes may end together
            live = {(log.topic, log.partition) for log in self.logs.logs()}
            offsets = {k: v for k, v in self._checkpoint.items() if k in live}
            self._checkpoint = offsets
            by_dir: dict[Path, dict[Key, int]] = {d: {} for d in self.logs.log_dirs}
            for key, offset in offsets.items():
                where = self.logs.dir_of(key)
                if where is not None:
                    by_dir[where][key] = offset
            loop = asyncio.get_running_loop()
            for log_dir, entries in by_dir.items():
                if log_dir in self.logs.failures:
                    continue
                try:
                    await loop.run_in_executor(None, checkpoint.write_partition_offsets,
                                               log_dir / CHECKPOINT_FILE, entries)  # fmt: skip
                except OSError as exc:
                    self.logs.fail(exc, "the cleaner's checkpoint", log_dir)

    def _account(self, result: CleanResult, secs: float) -> None:
        s = self.stats
        s.passes += 1
        s.records_read += result.records_read
        s.records_kept += result.records_kept
        s.bytes_read += result.bytes_read
        s.bytes_written += result.bytes_written
        s.max_clean_time_secs = secs
        s.recopy_percent = 100.0 * result.bytes_written / max(result.bytes_read, 1)


def _info(seg: Segment) -> plan.SegmentInfo:
    return plan.SegmentInfo(
        seg.base_offset, seg.next_offset, seg.size_bytes, seg.rolling_base_ms or -1,
        seg.max_timestamp, seg.index.size_bytes,
    )  # fmt: skip


def _delay_secs(log: Log, r: plan.CleanableRange, now_ms: int) -> float:
    """How long past max.compaction.lag.ms the log's first dirty record is."""
    for seg in log.segments.closed():
        if seg.next_offset > r.first_dirty and seg.rolling_base_ms is not None:
            lag = now_ms - seg.rolling_base_ms - log.config.max_compaction_lag_ms
            return max(0.0, lag / 1000)
    return 0.0
