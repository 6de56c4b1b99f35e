"""What a failed log directory does to the partitions hosted here, and who is told.

A failed log directory (KIP-112; broker/log/dir_failure.py): an I/O error met by an append, a
flush, a read, a LeaderAndIsr or a follower's fetcher goes to `LogManager.fail` (here through
`StorageFailures.failed`, which also turns any log operation's error into its (code, message)),
which takes that directory offline (the broker's others serve on) and calls back
`on_log_dir_offline`: every partition whose log is in it stops fetching and goes OFFLINE
(waiting acks=all produces fail), and the injected `LogDirNotifier` tells the controller
(coordinator/controller/log_dirs.py) which partitions' logs the failed directories held (all,
once every directory failed), and it elects other leaders for them and drops this broker from
their ISRs. Produce, fetch and list-offsets for those partitions answer
KAFKA_STORAGE_ERROR (56, retriable; the client refreshes its metadata). A LeaderAndIsr for them
is refused with it, and when it still names this broker leader or in-sync
(`must_report_log_dir_failure`: a new controller that has not heard) the controller is told
again. The partition map and the fetchers are ReplicaManager's, shared, not owned.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Protocol

from broker.log.dir_failure import LogDirFailure, is_log_dir_failure
from broker.partition import Partition
from broker.replica_fetcher import ReplicaFetcherManager
from protocol.api.controller import PartitionState
from protocol.errors import KafkaStorageError, LogDirOfflineError, OdradekError

if TYPE_CHECKING:
    from broker.log.manager import LogManager

NOTIFY_ATTEMPTS = 10
NOTIFY_BACKOFF_S = 1.0
log = logging.getLogger("odradek.broker.replicas")


class LogDirNotifier(Protocol):
    """Tells the controller a log directory of this broker failed, and which partitions' logs
    it held (None: every directory failed; coordinator/controller/log_dirs.py writes
    /log_dir_event_notification/log_dir_event_<seq>)."""

    async def notify_log_dir_failure(
        self, partitions: Collection[tuple[str, int]] | None = None
    ) -> None: ...


def must_report_log_dir_failure(states: list[PartitionState], broker_id: int) -> bool:
    """While our log directory is offline: does a LeaderAndIsr still count on this broker (it
    leads a partition, or is in an ISR it is not the last member of)? Then the controller has
    not heard (a new one, say) and is told again. The last ISR member stays in the ISR on
    purpose (coordinator/controller/election.py), so that alone is not a reason."""
    return any(s.leader == broker_id or (broker_id in s.isr and len(s.isr) > 1) for s in states)


def error_of(exc: BaseException) -> tuple[int, str]:
    if isinstance(exc, OdradekError):
        return exc.code, exc.message
    return KafkaStorageError.code, f"{type(exc).__name__}: {exc}"


class StorageFailures:
    def __init__(
        self,
        log_manager: LogManager,
        partitions: dict[tuple[str, int], Partition],
        fetchers: ReplicaFetcherManager,
        log_dir_notifier: LogDirNotifier | None,
        spawn: Callable[[Awaitable[None]], None],
    ) -> None:
        self.log_manager = log_manager
        self.partitions = partitions  # ReplicaManager's: the partitions hosted here
        self.fetchers = fetchers
        self.log_dir_notifier = log_dir_notifier
        self._spawn = spawn  # ReplicaManager's: its tasks end at its shutdown
        self._notifying = False  # a log directory failure notification is under way
        self._again = False  # another directory failed meanwhile: notify once more

    def failed(
        self, exc: BaseException, action: str, key: tuple[str, int] | None = None
    ) -> tuple[int, str]:
        """(error code, message) for an error a log operation on partition `key` (None: not
        one partition's) raised; an I/O error takes its log directory offline first."""
        if is_log_dir_failure(exc):
            self.log_manager.fail(exc, action, key)
        manager = self.log_manager
        if manager.offline or (key is not None and manager.is_offline(key)):
            return LogDirOfflineError.code, f"{action}: the log directory is offline ({exc})"
        return error_of(exc)

    def failed_at(self, exc: BaseException, verb: str, key: tuple[str, int]) -> tuple[int, str]:
        """`failed` for an operation ("append to", "read of", ...) on partition `key`."""
        return self.failed(exc, f"{verb} {key[0]}-{key[1]}", key)

    def on_log_dir_offline(self, failure: LogDirFailure) -> None:
        """LogManager's listener: stop leading and following the partitions whose log is in
        the failed directory, tell the controller."""
        for key, p in self.partitions.items():
            if p.log.directory.parent == failure.directory:
                self.fetchers.remove(key)
                p.go_offline()
        self.notify_controller()

    def notify_controller(self) -> None:
        if self.log_dir_notifier is None:
            return
        if self._notifying:
            self._again = True
            return
        self._notifying = True
        self._spawn(self._send_notification(self.log_dir_notifier))

    async def _send_notification(self, notifier: LogDirNotifier) -> None:
        try:
            for attempt in range(1, NOTIFY_ATTEMPTS + 1):
                manager = self.log_manager
                partitions = None if manager.offline else manager.offline_keys()
                self._again = False
                try:
                    await notifier.notify_log_dir_failure(partitions)
                    log.info("told the controller that %s offline",
                             "every log directory is" if partitions is None
                             else f"the logs of {len(partitions)} partitions are")  # fmt: skip
                    if not self._again:
                        return
                except Exception as exc:  # ZooKeeper unreachable: try again
                    log.warning("log directory failure notification %d failed: %s", attempt, exc)
                    await asyncio.sleep(NOTIFY_BACKOFF_S)
        finally:
            self._notifying = False
