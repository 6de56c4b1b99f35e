"""All partition logs of one broker, under its log directories (`log.dirs`), and their background
work.

`<log dir>/<topic>-<partition>/` holds one Log each (log.py), in one of the broker's log
directories (JBOD, KIP-112/KIP-113; names and decisions: dir_placement.py): a new partition goes
to the online directory with the fewest logs (`next_log_dir`), or to the one an
AlterReplicaLogDirs asked for before the replica existed (`prefer`); `load_all` opens every
directory's logs and refuses to start when one partition has a current log in two. A replica
being moved has a second, future log `<topic>-<partition>.<uuid>-future` in its destination
(dir_moves.py copies into it and calls `swap_future`); a future log left without its current one
(a swap cut short after the current was renamed away) becomes the current one at start-up.
Deleting a partition renames its
directory to `<topic>-<partition>.<hex>-delete` and keeps its files open for
file.delete.delay.ms, so that a fetch response already being sent from them completes; the
background task then closes and removes it (a leftover `-delete` directory found at start-up
is removed at once).

`run_background` is one asyncio task for the whole broker. Every tick (at most a second) it
flushes logs whose flush.ms has passed (the fdatasync runs in the default executor), removes
`.deleted` segments and `-delete` directories whose delay is over; every `check_interval_ms`
(Kafka's log.retention.check.interval.ms) it applies retention; once a minute it checkpoints
the recovery points and log start offsets that moved, in one executor call (each checkpoint is
two fsyncs: on the loop, 3,000 of them held the broker for seconds). Time comes from the
injected clock; `sleep` is injectable for tests.

High watermarks: `replication-offset-checkpoint` in each log directory (checkpoint.py's
partition-offset layout, the partitions whose log is there) is read once by `load_all`
(`checkpointed_high_watermark`) and rewritten, atomically, by `write_high_watermarks_off_loop`
(the replica manager, every replica_high_watermark_checkpoint_interval_ms: the write and its
fsyncs in a thread, and only when a value moved) and `write_high_watermarks` (at shutdown).
A corrupt file is logged and ignored: the high watermarks then start at 0, as without the file.

A failed directory (dir_failure.py): `fail(exc, action, where)` is called by whoever met the I/O
error (the replica manager, the fetchers, this module's own background work), `where` the
partition (or a path in the directory) it was working on; None: every directory. The first call
for a directory logs one line naming it and the cause, marks its logs offline, and calls the
listeners (`add_failure_listener`); later calls change nothing. From then on the background
work, the checkpoints and the clean shutdown write nothing to that directory; the others go on.
`offline` is true when every directory failed (the broker then stops, as Kafka's does).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path

from broker.log import checkpoint
from broker.log.config import LogConfig
from broker.log.dir_failure import (
    LogDirFailure,
    LogDirIOError,
    failure_cause,
    is_log_dir_failure,
)
from broker.log.dir_placement import (
    DELETE_SUFFIX,
    FUTURE_SUFFIX,
    Kind,
    check_unique,
    entry_kind,
    next_log_dir,
    suffixed_name,
)
from broker.log.durability import RECOVERY_CHECKPOINT_INTERVAL_MS
from broker.log.log import Log, directory_name, parse_directory_name
from protocol.clock import Clock
from protocol.errors import OdradekError, UsageError

DELETE_DIR_SUFFIX = DELETE_SUFFIX
HW_CHECKPOINT_FILE = "replication-offset-checkpoint"
TICK_MS = 1000
MAX_LOGS = 100_000  # a bound on partitions per broker
MAX_LOG_DIRS = 64  # a bound on log.dirs

logger = logging.getLogger(__name__)

Key = tuple[str, int]


class LogManager:
    def __init__(
        self, log_dirs: Path | Sequence[Path], default_config: LogConfig, clock: Clock
    ) -> None:
        dirs = [log_dirs] if isinstance(log_dirs, Path) else list(log_dirs)
        if not 1 <= len(dirs) <= MAX_LOG_DIRS:
            raise UsageError(f"a broker takes 1 to {MAX_LOG_DIRS} log directories, not {len(dirs)}")
        self.log_dirs: list[Path] = dirs
        self.log_dir = dirs[0]  # the first (the authorizer's log file goes there)
        self.default_config = default_config
        self.clock = clock
        self._logs: dict[Key, Log] = {}
        self._futures: dict[Key, Log] = {}  # replicas being moved (dir_moves.py)
        self._preferred: dict[Key, Path] = {}  # AlterReplicaLogDirs before the replica existed
        self._deleted: list[tuple[int, Log, Path]] = []  # (remove at monotonic ms, log, dir)
        self._high_watermarks: dict[Key, int] = {}  # as read at start-up, every directory
        self._hw_files: dict[Path, checkpoint.CheckpointFile] = {}  # written since, per directory
        self.failures: dict[Path, LogDirFailure] = {}  # the directories offline, and why
        self._failure_listeners: list[Callable[[LogDirFailure], None]] = []
        self._delete_listeners: list[Callable[[str, int], None]] = []
        self._placing = threading.Lock()  # new logs are created in threads (partition_roles)
        self._pending: dict[Path, int] = {}  # logs being created, per directory

    @property
    def offline(self) -> bool:
        """Every log directory failed."""
        return len(self.failures) == len(self.log_dirs)

    @property
    def failure(self) -> LogDirFailure | None:
        """The first directory failure (None: every directory is online)."""
        return next(iter(self.failures.values()), None)

    def load_all(self) -> None:
        """Open (and recover where needed) every partition directory under every log dir;
        UsageError when a partition's current log is in two of them."""
        found: dict[Key, list[Path]] = {}
        found_futures: dict[Key, list[Path]] = {}
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            self._high_watermarks.update(self._read_high_watermarks(log_dir))
            for path in sorted(log_dir.iterdir()):
                classified = self._classify(path)
                if classified is not None:
                    kind, key = classified
                    into = found_futures if kind is Kind.FUTURE else found
                    into.setdefault(key, []).append(path)
        check_unique(found)
        check_unique(found_futures)  # (Kafka refuses two future logs of one partition too)
        futures = {key: paths[0] for key, paths in found_futures.items()}
        for key, path in futures.items():
            if key not in found:  # the swap renamed the current away, then stopped: finish it
                target = path.with_name(directory_name(*key))
                path.rename(target)
                checkpoint.fsync_dir(target.parent)
                logger.info("%s: the future log in %s is now the current one", key, target.parent)
                found[key] = [target]
        for key, paths in found.items():
            self._add(*key, Log.open(paths[0], self.default_config, self.clock))
        for key, path in futures.items():
            if found[key][0].parent == path.parent:
                continue  # (the one just made current)
            self._futures[key] = Log.open(path, self.default_config, self.clock)

    def _classify(self, path: Path) -> tuple[Kind, Key] | None:
        """A log directory entry's kind and partition; None (and a leftover `-delete`
        removed) for anything else."""
        if not path.is_dir():
            return None
        kind, name = entry_kind(path.name)
        if kind is Kind.DELETE or path.name.endswith(DELETE_SUFFIX):
            shutil.rmtree(path, ignore_errors=True)
            return None
        try:
            return kind, parse_directory_name(name)
        except UsageError:
            logger.warning("ignoring %s: not a partition directory", path)
            return None

    # ----- where logs are ------------------------------------------------------------------

    def dir_of(self, key: Key) -> Path | None:
        """The log directory holding the partition's current log (None: not hosted)."""
        log = self._logs.get(key)
        return None if log is None else log.directory.parent

    def is_offline(self, key: Key) -> bool:
        """The partition's current log is in a failed directory."""
        where = self.dir_of(key)
        return where is not None and where in self.failures

    def offline_keys(self) -> list[Key]:
        """The partitions whose current log is in a failed directory."""
        return sorted(k for k, log in self._logs.items() if log.directory.parent in self.failures)

    def counts(self) -> dict[Path, int]:
        """Logs (current and future) per log directory, plus those being created."""
        counts = dict.fromkeys(self.log_dirs, 0)
        for log in (*self._logs.values(), *self._futures.values()):
            parent = log.directory.parent
            counts[parent] = counts.get(parent, 0) + 1
        for d, n in self._pending.items():
            counts[d] = counts.get(d, 0) + n
        return counts

    def find_dir(self, path: str) -> Path | None:
        """The log directory whose absolute path is `path` (as DescribeLogDirs names it)."""
        return next((d for d in self.log_dirs if str(d.absolute()) == path), None)

    def prefer(self, key: Key, log_dir: Path) -> None:
        """Create the partition's log in `log_dir` when it comes (Kafka's preferred dir)."""
        self._preferred[key] = log_dir

    # ----- a failed directory ----------------------------------------------------------------

    def add_failure_listener(self, listener: Callable[[LogDirFailure], None]) -> None:
        self._failure_listeners.append(listener)

    def fail(self, exc: BaseException, action: str, where: Key | Path | None = None) -> bool:
        """An I/O error (`exc`) while doing `action` on `where` (a partition, or a path in a log
        directory; None: every directory): take its directory offline. True when this call
        took one offline."""
        took = False
        for log_dir in self._dirs_at(where):
            if log_dir in self.failures:
                continue
            took = True
            failure = LogDirFailure(log_dir, action, failure_cause(exc))
            self.failures[log_dir] = failure
            logger.error("%s", failure.describe())
            for log in (*self._logs.values(), *self._futures.values()):
                if log.directory.parent == log_dir:
                    log.mark_offline()
            for listener in self._failure_listeners:
                try:
                    listener(failure)
                except Exception:  # one listener's bug must not stop the others
                    logger.exception("log directory failure listener failed")
        return took

    def _dirs_at(self, where: Key | Path | None) -> list[Path]:
        if isinstance(where, tuple):
            log_dir = self.dir_of(where)
            return self.log_dirs if log_dir is None else [log_dir]
        if where is not None:
            for log_dir in self.log_dirs:
                if where == log_dir or log_dir in where.parents:
                    return [log_dir]
        return self.log_dirs

    # ----- high watermarks ---------------------------------------------------------------

    def _read_high_watermarks(self, log_dir: Path) -> dict[Key, int]:
        path = log_dir / HW_CHECKPOINT_FILE
        path.with_name(path.name + checkpoint.TMP_SUFFIX).unlink(missing_ok=True)
        try:
            return checkpoint.read_partition_offsets(path)
        except checkpoint.CorruptCheckpointError as exc:
            logger.warning("ignoring %s: %s", path, exc)
            return {}

    def checkpointed_high_watermark(self, topic: str, partition: int) -> int | None:
        """The high watermark the checkpoints read at start-up hold for the partition."""
        return self._high_watermarks.get((topic, partition))

    def high_watermark_jobs(
        self, high_watermarks: Mapping[Key, int], force: bool = False
    ) -> list[tuple[Path, Callable[[], None]]]:
        """The writes that checkpoint, in each online directory, the given high watermarks of
        its logs, plus, for logs open there but not in the map (not yet named by the
        controller), the values read at start-up: (directory, a call that writes its file, from
        any thread). Asked on the event loop, which owns the values; a directory whose content
        is what was last asked for gets none (unless `force`), and an older write never lands
        over a newer one (checkpoint.CheckpointFile)."""
        hws = {k: v for k, v in self._high_watermarks.items() if k in self._logs}
        hws.update((k, v) for k, v in high_watermarks.items() if k in self._logs)
        by_dir: dict[Path, dict[Key, int]] = {d: {} for d in self.log_dirs}
        for key, hw in hws.items():
            by_dir[self._logs[key].directory.parent][key] = hw
        jobs = []
        for log_dir, offsets in by_dir.items():
            if log_dir in self.failures:
                continue
            file = self._hw_files.get(log_dir)
            if file is None:
                file = self._hw_files[log_dir] = checkpoint.CheckpointFile(
                    log_dir / HW_CHECKPOINT_FILE
                )
            job = file.write_job(checkpoint.encode_partition_offsets(offsets), force)
            if job is not None:
                jobs.append((log_dir, job))
        return jobs

    def write_high_watermarks(self, high_watermarks: Mapping[Key, int]) -> None:
        """`high_watermark_jobs` run now, on this thread (shutdown: the logs close after it),
        every file written even if unchanged (a periodic write of the same values may have
        been cancelled unrun). An I/O error takes that directory offline; the others are
        written."""
        for log_dir, job in self.high_watermark_jobs(high_watermarks, force=True):
            try:
                job()
            except (OdradekError, OSError) as exc:
                self.fail(exc, "the high watermark checkpoint", log_dir)

    async def write_high_watermarks_off_loop(self, high_watermarks: Mapping[Key, int]) -> int:
        """`high_watermark_jobs` run in one executor call: each is a write and two fsyncs,
        which held the loop for up to 43 ms under load (docs/benchmarks.md, "The tail").
        Returns how many files were written; failures as `write_high_watermarks`."""
        jobs = self.high_watermark_jobs(high_watermarks)
        if not jobs:
            return 0

        def write_all() -> list[tuple[Path, BaseException]]:
            failed: list[tuple[Path, BaseException]] = []
            for log_dir, job in jobs:
                try:
                    job()
                except (OdradekError, OSError) as exc:
                    failed.append((log_dir, exc))
            return failed

        failed = await asyncio.get_running_loop().run_in_executor(None, write_all)
        for log_dir, exc in failed:
            self.fail(exc, "the high watermark checkpoint", log_dir)
        return len(jobs) - len(failed)

    # ----- logs ------------------------------------------------------------------------------

    def get(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        log = self._logs.get((topic, partition))
        if log is not None:
            if config is not None and config != log.config:
                log.update_config(config)
            return log
        if "/" in topic or topic in ("", ".", "..") or partition < 0:
            raise UsageError(f"invalid partition {topic!r}-{partition}")
        log_dir = self._place((topic, partition))
        try:
            log = Log.open(log_dir / directory_name(topic, partition),
                           config or self.default_config, self.clock)  # fmt: skip
        finally:
            with self._placing:
                self._pending[log_dir] -= 1
        self._add(topic, partition, log)
        self._preferred.pop((topic, partition), None)
        return log

    def _place(self, key: Key) -> Path:
        """The directory for a new log (counted as pending until it is added)."""
        with self._placing:
            chosen = self._preferred.get(key)
            if chosen is None or chosen in self.failures:
                chosen = next_log_dir(self.log_dirs, self.counts(), set(self.failures))
            if chosen is None:
                raise LogDirIOError("every log directory of this broker is offline")
            self._pending[chosen] = self._pending.get(chosen, 0) + 1
            return chosen

    def _add(self, topic: str, partition: int, log: Log) -> None:
        if len(self._logs) >= MAX_LOGS:
            log.close()
            raise UsageError(f"this broker already holds {MAX_LOGS} partition logs")
        self._logs[(topic, partition)] = log

    # ----- future logs (dir_moves.py) ------------------------------------------------------

    def future(self, key: Key) -> Log | None:
        return self._futures.get(key)

    def futures(self) -> dict[Key, Log]:
        return dict(self._futures)

    def create_future(self, key: Key, log_dir: Path) -> Log:
        """A new, empty future log for the partition in `log_dir`."""
        if log_dir in self.failures:
            raise LogDirIOError(f"log directory {log_dir} is offline")
        current = self._logs[key]
        name = suffixed_name(directory_name(*key), uuid.uuid4().hex, FUTURE_SUFFIX)
        try:
            log = Log.open(log_dir / name, current.config, self.clock)
        except (OSError, LogDirIOError) as exc:  # the destination fails: KAFKA_STORAGE_ERROR
            self.fail(exc, f"creating the future log of {key[0]}-{key[1]}", log_dir)
            raise LogDirIOError(f"log directory {log_dir} failed: {exc}") from None
        self._futures[key] = log
        return log

    def drop_future(self, key: Key) -> None:
        """Abandon the partition's move: its future log goes, as a deleted log does."""
        log = self._futures.pop(key, None)
        if log is not None:
            self._retire(log)

    def swap_future(self, key: Key) -> Log:
        """The future log becomes the partition's current one (caught up: the caller checked,
        in the same step of the event loop). The old current log is renamed `-delete` and
        removed after file.delete.delay.ms, as a deleted partition's; the future log is closed
        cleanly, renamed to the partition's name in its directory and opened again (its files
        are named by its directory), so the new Log object replaces the old everywhere."""
        future = self._futures[key]
        current = self._logs[key]
        target = future.directory.with_name(directory_name(*key))
        future.close()  # an I/O error here leaves the move as it was (its directory fails)
        del self._futures[key]
        self._retire(current)
        future.directory.rename(target)
        checkpoint.fsync_dir(target.parent)
        log = Log.open(target, current.config, self.clock)
        self._logs[key] = log
        return log

    def add_delete_listener(self, listener: Callable[[str, int], None]) -> None:
        """Called with (topic, partition) when a partition's log is deleted (the cleaner)."""
        self._delete_listeners.append(listener)

    def delete(self, topic: str, partition: int) -> None:
        """Forget the partition (and any move of it) now; its files go after
        file.delete.delay.ms."""
        self._preferred.pop((topic, partition), None)
        self.drop_future((topic, partition))
        log = self._logs.pop((topic, partition), None)
        if log is None:
            return
        for listener in self._delete_listeners:
            listener(topic, partition)
        self._retire(log)

    def _retire(self, log: Log) -> None:
        name = entry_kind(log.directory.name)[1]  # a future log's too: `<topic>-<partition>`
        target = log.directory.with_name(suffixed_name(name, uuid.uuid4().hex, DELETE_SUFFIX))
        log.mark_deleted()
        log.directory.rename(target)
        due = self.clock.monotonic_ms() + log.config.file_delete_delay_ms
        self._deleted.append((due, log, target))
        self.purge_deleted(self.clock.monotonic_ms())

    def logs(self) -> list[Log]:
        """The current logs (not the future logs of moves)."""
        return list(self._logs.values())

    def all_logs(self) -> Iterable[Log]:
        """Current and future logs: what is flushed, checkpointed and closed."""
        return [*self._logs.values(), *self._futures.values()]

    def purge_deleted(self, now_ms: int) -> int:
        """Remove deleted partition directories whose delay has passed."""
        due = [(log, path) for at, log, path in self._deleted if at <= now_ms]
        self._deleted = [entry for entry in self._deleted if entry[0] > now_ms]
        for log, path in due:
            log.close_unclean()
            shutil.rmtree(path, ignore_errors=True)
        return len(due)

    async def run_background(
        self,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        check_interval_ms: int = 300_000,
    ) -> None:
        """Retention, flush.ms, deferred deletes and checkpoints, forever (cancel to stop)."""
        last_retention_ms: int | None = None
        last_checkpoint_ms = self.clock.monotonic_ms()
        while True:
            if self.offline:  # every directory offline: nothing more is written
                await sleep(TICK_MS / 1000)
                continue
            now = self.clock.monotonic_ms()
            if last_retention_ms is None or now - last_retention_ms >= check_interval_ms:
                last_retention_ms = now
                self.apply_retention()
            await self.flush_due()
            for log in self.logs():
                self._guard(log, log.segments.purge_deleted)
            self.purge_deleted(now)
            if now - last_checkpoint_ms >= RECOVERY_CHECKPOINT_INTERVAL_MS:
                last_checkpoint_ms = now
                await self.checkpoint_offsets()
            await sleep(min(check_interval_ms, TICK_MS) / 1000)

    async def checkpoint_offsets(self) -> int:
        """Write the offsets checkpoints that moved, off the event loop. Returns how many."""
        jobs = [
            (log, job)
            for log in self.all_logs()
            if not log.closed
            for job in log.durability.offsets_checkpoint_jobs()
        ]
        if not jobs:
            return 0

        def write_all() -> tuple[Log, BaseException] | None:
            for log, job in jobs:
                try:
                    job()
                except (OdradekError, OSError) as exc:
                    return log, exc
            return None

        failed = await asyncio.get_running_loop().run_in_executor(None, write_all)
        if failed is not None:
            log, exc = failed
            if is_log_dir_failure(exc):
                self.fail(exc, f"checkpoint of {log.topic}-{log.partition}", log.directory)
            else:
                logger.error("checkpoint of %s-%s failed: %s", log.topic, log.partition, exc)
        return len(jobs)

    def apply_retention(self) -> int:
        deleted = 0
        for log in self.logs():
            if log.closed:
                continue
            try:
                deleted += log.delete_retained_segments()
            except (OdradekError, OSError) as exc:
                if is_log_dir_failure(exc):
                    self.fail(exc, f"retention of {log.topic}-{log.partition}", log.directory)
                    continue
                logger.exception("retention failed for %s-%s", log.topic, log.partition)
        return deleted

    async def flush_due(self) -> int:
        """fdatasync every log whose flush policy is due, off the event loop."""
        loop = asyncio.get_running_loop()
        flushed = 0
        for log in self.all_logs():
            if log.closed or not log.durability.needs_flush():
                continue
            plan = log.durability.flush_plan()
            try:
                await loop.run_in_executor(None, plan.run)
            except (OdradekError, OSError) as exc:
                if is_log_dir_failure(exc):
                    self.fail(exc, f"flush of {log.topic}-{log.partition}", log.directory)
                    continue
                logger.exception("flush failed for %s-%s", log.topic, log.partition)
                continue
            if not log.closed:
                log.durability.finish_flush(plan)
            flushed += 1
        return flushed

    def shutdown(self) -> None:
        """Close every log cleanly (each writes its clean-shutdown marker)."""
        for log in self.all_logs():
            self._guard(log, log.close)  # an offline log writes nothing (no marker)
        self._logs.clear()
        self._futures.clear()
        self.purge_deleted(1 << 62)

    def _guard(self, log: Log, action: Callable[[], object]) -> None:
        if log.closed:
            return
        try:
            action()
        except (OdradekError, OSError) as exc:
            if is_log_dir_failure(exc):
                self.fail(exc, f"{action.__name__} of {log.topic}-{log.partition}", log.directory)
            else:
                logger.exception("%s failed for %s-%s", action.__name__, log.topic,
                                 log.partition)  # fmt: skip
