"""All partition logs of one broker, under one log directory, and their background work.

`log_dir/<topic>-<partition>/` holds one Log each (log.py). Deleting a partition renames its
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

High watermarks: `replication-offset-checkpoint` in log_dir (checkpoint.py's partition-offset
layout) is read once by `load_all` (`checkpointed_high_watermark`) and rewritten, atomically,
by `write_high_watermarks` (the replica manager calls it every
replica_high_watermark_checkpoint_interval_ms and at shutdown). A corrupt file is logged and
ignored: the high watermarks then start at 0, as without the file.

A failed directory (dir_failure.py): `fail(exc, action)` is called by whoever met the I/O error
(the replica manager, the fetchers, this module's own background work). The first call logs one
line naming the directory and the cause, marks every log offline, and calls the listeners
(`add_failure_listener`); later calls change nothing. From then on the background work, the
checkpoints and the clean shutdown write nothing to the directory.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from broker.log import checkpoint
from broker.log.config import LogConfig
from broker.log.dir_failure import (
    LogDirFailure,
    LogDirIOError,
    failure_cause,
    is_log_dir_failure,
)
from broker.log.durability import RECOVERY_CHECKPOINT_INTERVAL_MS
from broker.log.log import Log, directory_name, parse_directory_name
from protocol.clock import Clock
from protocol.errors import OdradekError, UsageError

DELETE_DIR_SUFFIX = "-delete"
HW_CHECKPOINT_FILE = "replication-offset-checkpoint"
TICK_MS = 1000
MAX_LOGS = 100_000  # a bound on partitions per broker

logger = logging.getLogger(__name__)


class LogManager:
    def __init__(self, log_dir: Path, default_config: LogConfig, clock: Clock) -> None:
        self.log_dir = log_dir
        self.default_config = default_config
        self.clock = clock
        self._logs: dict[tuple[str, int], Log] = {}
        self._deleted: list[tuple[int, Log, Path]] = []  # (remove at monotonic ms, log, dir)
        self._high_watermarks: dict[tuple[str, int], int] = {}  # as read at start-up
        self.failure: LogDirFailure | None = None  # set once: the directory is offline
        self._failure_listeners: list[Callable[[LogDirFailure], None]] = []
        self._delete_listeners: list[Callable[[str, int], None]] = []

    @property
    def offline(self) -> bool:
        return self.failure is not None

    def load_all(self) -> None:
        """Open (and recover where needed) every partition directory under log_dir."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._high_watermarks = self._read_high_watermarks()
        for path in sorted(self.log_dir.iterdir()):
            if not path.is_dir():
                continue
            if path.name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                topic, partition = parse_directory_name(path.name)
            except UsageError:
                logger.warning("ignoring %s: not a partition directory", path)
                continue
            if (topic, partition) not in self._logs:
                self._add(topic, partition, Log.open(path, self.default_config, self.clock))

    # ----- a failed directory ----------------------------------------------------------------

    def add_failure_listener(self, listener: Callable[[LogDirFailure], None]) -> None:
        self._failure_listeners.append(listener)

    def fail(self, exc: BaseException, action: str) -> bool:
        """An I/O error (`exc`) while doing `action`: take the directory offline. True when
        this call did (the first one)."""
        if self.failure is not None:
            return False
        self.failure = LogDirFailure(self.log_dir, action, failure_cause(exc))
        logger.error("%s", self.failure.describe())
        for log in self.logs():
            log.mark_offline()
        for listener in self._failure_listeners:
            try:
                listener(self.failure)
            except Exception:  # one listener's bug must not stop the others
                logger.exception("log directory failure listener failed")
        return True

    def _check_online(self) -> None:
        if self.failure is not None:
            raise LogDirIOError(f"log directory {self.log_dir} is offline")

    # ----- high watermarks ---------------------------------------------------------------

    def _read_high_watermarks(self) -> dict[tuple[str, int], int]:
        path = self.log_dir / HW_CHECKPOINT_FILE
        path.with_name(path.name + checkpoint.TMP_SUFFIX).unlink(missing_ok=True)
        try:
            return checkpoint.read_partition_offsets(path)
        except checkpoint.CorruptCheckpointError as exc:
            logger.warning("ignoring %s: %s", path, exc)
            return {}

    def checkpointed_high_watermark(self, topic: str, partition: int) -> int | None:
        """The high watermark the checkpoint read at start-up holds for the partition."""
        return self._high_watermarks.get((topic, partition))

    def write_high_watermarks(self, high_watermarks: Mapping[tuple[str, int], int]) -> None:
        """Checkpoint the given high watermarks, plus, for logs open here but not in the map
        (not yet named by the controller), the values read at start-up. Raises on an I/O
        error (the caller fails the directory); does nothing while it is offline."""
        if self.failure is not None:
            return
        hws = {k: v for k, v in self._high_watermarks.items() if k in self._logs}
        hws.update((k, v) for k, v in high_watermarks.items() if k in self._logs)
        checkpoint.write_partition_offsets(self.log_dir / HW_CHECKPOINT_FILE, hws)

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
        self._check_online()
        path = self.log_dir / directory_name(topic, partition)
        log = Log.open(path, config or self.default_config, self.clock)
        self._add(topic, partition, log)
        return log

    def _add(self, topic: str, partition: int, log: Log) -> None:
        if len(self._logs) >= MAX_LOGS:
            log.close()
            raise UsageError(f"this broker already holds {MAX_LOGS} partition logs")
        self._logs[(topic, partition)] = log

    def add_delete_listener(self, listener: Callable[[str, int], None]) -> None:
        """Called with (topic, partition) when a partition's log is deleted (the cleaner)."""
        self._delete_listeners.append(listener)

    def delete(self, topic: str, partition: int) -> None:
        """Forget the partition now; its files go after file.delete.delay.ms."""
        log = self._logs.pop((topic, partition), None)
        if log is None:
            return
        for listener in self._delete_listeners:
            listener(topic, partition)
        target = log.directory.with_name(
            f"{log.directory.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        )
        log.mark_deleted()
        log.directory.rename(target)
        due = self.clock.monotonic_ms() + log.config.file_delete_delay_ms
        self._deleted.append((due, log, target))
        self.purge_deleted(self.clock.monotonic_ms())

    def logs(self) -> list[Log]:
        return list(self._logs.values())

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
            if self.failure is not None:  # offline: nothing more is written here
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
            (log, job) for log in self.logs() for job in log.durability.offsets_checkpoint_jobs()
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
                self.fail(exc, f"checkpoint of {log.topic}-{log.partition}")
            else:
                logger.error("checkpoint of %s-%s failed: %s", log.topic, log.partition, exc)
        return len(jobs)

    def apply_retention(self) -> int:
        deleted = 0
        for log in self.logs():
            try:
                deleted += log.delete_retained_segments()
            except (OdradekError, OSError) as exc:
                if is_log_dir_failure(exc):
                    self.fail(exc, f"retention of {log.topic}-{log.partition}")
                    break
                logger.exception("retention failed for %s-%s", log.topic, log.partition)
        return deleted

    async def flush_due(self) -> int:
        """fdatasync every log whose flush policy is due, off the event loop."""
        loop = asyncio.get_running_loop()
        flushed = 0
        for log in self.logs():
            if log.closed or not log.durability.needs_flush():
                continue
            plan = log.durability.flush_plan()
            try:
                await loop.run_in_executor(None, plan.run)
            except (OdradekError, OSError) as exc:
                if is_log_dir_failure(exc):
                    self.fail(exc, f"flush of {log.topic}-{log.partition}")
                    break
                logger.exception("flush failed for %s-%s", log.topic, log.partition)
                continue
            if not log.closed:
                log.durability.finish_flush(plan)
            flushed += 1
        return flushed

    def shutdown(self) -> None:
        """Close every log cleanly (each writes its clean-shutdown marker)."""
        for log in self.logs():
            self._guard(log, log.close)  # an offline log writes nothing (no marker)
        self._logs.clear()
        self.purge_deleted(1 << 62)

    def _guard(self, log: Log, action: Callable[[], object]) -> None:
        if log.closed:
            return
        try:
            action()
        except (OdradekError, OSError) as exc:
            if is_log_dir_failure(exc):
                self.fail(exc, f"{action.__name__} of {log.topic}-{log.partition}")
            else:
                logger.exception("%s failed for %s-%s", action.__name__, log.topic,
                                 log.partition)  # fmt: skip
