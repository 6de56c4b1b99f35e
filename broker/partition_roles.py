"""The controller's word on the partitions hosted here: LeaderAndIsr, StopReplica, topic configs.

`PartitionRoles.apply_leader_and_isr` makes this broker leader or follower for each partition
state naming it. Requests are applied one at a time, in arrival order (a lock). A request's
topics' configs (defaults + ZooKeeper overrides) are looked up concurrently; the logs of
partitions new here are created in threads first (`_open_new_logs`), and the leader-epoch
checkpoints new leaderships will leave are written in threads too (`_write_epochs_ahead`), so
the loop's part (`_apply_state`) is cheap. A partition created here starts from the HW in the
log directories' `replication-offset-checkpoint` (bounded by its log), so a restarted leader
serves what was committed before it died at once. Its log directory's partition.metadata must
hold the controller's topic id (`_check_topic_id`: written when missing, INCONSISTENT_TOPIC_ID
when it holds another). A leader stops fetching; a follower goes to the
`ReplicaFetcherManager` (broker/replica_fetcher.py), which truncates, then fetches. While a
partition's log directory is offline its state is refused with KAFKA_STORAGE_ERROR, and the
controller is told again when it still counts on this broker (broker/storage_failures.py).

`stop_replica` stops hosting a partition (and deletes its log on topic deletion);
`apply_topic_config` gives a topic's open logs a changed config
(coordinator/cluster/config_changes.py); `checkpoint_high_watermarks` writes every hosted
partition's HW to the checkpoint at shutdown, and `run_hw_checkpoints` every
replica_high_watermark_checkpoint_interval_ms with the write and its fsyncs in a thread
(`checkpoint_high_watermarks_off_loop`: on the loop they held it up to 43 ms under load).

The partition map, the log manager and the fetchers are ReplicaManager's, passed in and shared:
ReplicaManager reads the map for produce and fetch, this class alone adds and removes entries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Protocol

from broker.log import partition_metadata
from broker.log.config import LogConfig
from broker.partition import Partition
from broker.replica_fetcher import ReplicaFetcherManager
from broker.storage_failures import error_of, must_report_log_dir_failure
from protocol.api.controller import PartitionState
from protocol.api.metadata import BrokerInfo
from protocol.clock import Clock
from protocol.errors import (
    InconsistentTopicIdError,
    LogDirOfflineError,
    OdradekError,
    StaleControllerEpochError,
)
from protocol.topic_ids import decode_topic_id, encode_topic_id

if TYPE_CHECKING:
    from broker.log.log import Log
    from broker.log.manager import LogManager


TopicConfigLookup = Callable[[str], Awaitable[Mapping[str, str]]]
"""topic -> its config overrides (ZooKeeper's /config/topics/<topic>), injected."""


class Failures(Protocol):
    """What a log error does (broker/storage_failures.py `StorageFailures`)."""

    def failed(
        self, exc: BaseException, action: str, key: tuple[str, int] | None = None
    ) -> tuple[int, str]: ...

    def notify_controller(self) -> None: ...


NONE = 0
NEW_LOG_THREADS = 16  # new partition logs created at once (LeaderAndIsr, `_open_new_logs`)
log = logging.getLogger("odradek.broker.replicas")


class PartitionRoles:
    def __init__(
        self,
        broker_id: int,
        partitions: dict[tuple[str, int], Partition],
        log_manager: LogManager,
        fetchers: ReplicaFetcherManager,
        failures: Failures,
        default_log_config: LogConfig,
        clock: Clock,
        hw_checkpoint_interval_ms: int,
    ) -> None:
        self.broker_id = broker_id
        self.partitions = partitions  # ReplicaManager's: the partitions hosted here
        self.log_manager = log_manager
        self.fetchers = fetchers
        self.failures = failures
        self.default_log_config = default_log_config
        self.clock = clock
        self.hw_checkpoint_interval_ms = hw_checkpoint_interval_ms
        # partitions whose partition.metadata was found (or written) to hold this topic id
        self._checked_topic_ids: dict[tuple[str, int], str] = {}
        self._leader_and_isr_lock = asyncio.Lock()

    async def apply_leader_and_isr(
        self,
        states: list[PartitionState],
        lookup: TopicConfigLookup,
        live_leaders: list[BrokerInfo] | None = None,
    ) -> list[tuple[str, int, int]]:
        """Become leader or follower for each state naming this broker; (topic, p, error).

        Requests are applied one at a time, in the order they arrived (the lock), so a request
        whose config lookups are slow cannot be overtaken by a later one.
        """
        async with self._leader_and_isr_lock:
            self.fetchers.update_brokers(live_leaders or [])
            ours = [s for s in states if self.broker_id in s.replicas]
            offline = [s for s in ours if self.log_manager.offline
                       or self.log_manager.is_offline((s.topic, s.partition))]  # fmt: skip
            if offline and must_report_log_dir_failure(offline, self.broker_id):
                self.failures.notify_controller()
            online = [s for s in ours if s not in offline]
            configs = await self._topic_configs(sorted({s.topic for s in online}), lookup)
            await self._open_new_logs(online, configs)
            await self._write_epochs_ahead(online)
            done = {(s.topic, s.partition): self._try_apply(s, configs[s.topic]) for s in online}
            code = LogDirOfflineError.code
            results = [done.get((s.topic, s.partition), (s.topic, s.partition, code)) for s in ours]
        self._log_roles(results)
        return results

    async def _topic_configs(
        self, topics: list[str], lookup: TopicConfigLookup
    ) -> dict[str, LogConfig | BaseException]:
        """Each topic's LogConfig (defaults + overrides), looked up concurrently."""
        found = await asyncio.gather(*(lookup(t) for t in topics), return_exceptions=True)
        configs: dict[str, LogConfig | BaseException] = {}
        for topic, overrides in zip(topics, found, strict=True):
            if isinstance(overrides, BaseException):
                configs[topic] = overrides
                continue
            try:
                configs[topic] = LogConfig.from_properties(overrides, base=self.default_log_config)
            except OdradekError as exc:
                configs[topic] = exc
        return configs

    async def _open_new_logs(
        self, states: list[PartitionState], configs: Mapping[str, LogConfig | BaseException]
    ) -> None:
        """Create the logs of partitions new to this broker first, in threads: a new log is a
        directory and a file (log.py), 0.3-0.8 ms of file-system metadata work each on this
        machine's disk, which would otherwise hold the event loop for seconds per 3,000 (and
        so is writing their partition.metadata)."""
        new = {(s.topic, s.partition): (s, c) for s in states
               if not isinstance(c := configs[s.topic], BaseException)
               and self.log_manager.get(s.topic, s.partition) is None}  # fmt: skip
        # (a dict: never two threads on one directory)
        await _in_threads([partial(self._open_new_log, s, c) for s, c in new.values()])

    def _open_new_log(self, state: PartitionState, config: LogConfig) -> None:
        """(In a thread.) The log, and its partition.metadata written (its fsyncs too)."""
        plog = self.log_manager.get_or_create(state.topic, state.partition, config)
        self._check_topic_id(state, plog)

    async def _write_epochs_ahead(self, states: list[PartitionState]) -> None:
        """Write, in threads, the leader-epoch checkpoint each new leadership will leave
        (Partition.become_leader assigns the epoch at the log end): then the loop's assign
        finds the file holding it already, instead of two fsyncs per partition on the loop."""
        jobs = []
        for s in states:
            log_ = self.log_manager.get(s.topic, s.partition)
            if s.leader == self.broker_id and log_ is not None and not log_.closed:
                job = log_.epochs.assign_job(s.leader_epoch, log_.log_end_offset)
                if job is not None:
                    jobs.append(job)
        await _in_threads(jobs)

    def _try_apply(
        self, state: PartitionState, config: LogConfig | BaseException
    ) -> tuple[str, int, int]:
        try:
            if isinstance(config, BaseException):
                raise config
            self._apply_state(state, config)
            return state.topic, state.partition, NONE
        except (OdradekError, OSError) as exc:
            log.warning("%s-%d: LeaderAndIsr not applied: %s", state.topic, state.partition, exc)
            action = f"LeaderAndIsr of {state.topic}-{state.partition}"
            key = (state.topic, state.partition)
            return state.topic, state.partition, self.failures.failed(exc, action, key)[0]

    def _log_roles(self, results: list[tuple[str, int, int]]) -> None:
        leading: list[str] = []
        following: list[str] = []
        for topic, index, code in results:
            p = self.partitions.get((topic, index))
            if code == NONE and p is not None:
                name = f"{topic}-{index}@{p.leader_epoch}"
                (leading if p.is_leader else following).append(name)
        if leading or following:
            log.info("leader for %s; follower for %s", _names(leading), _names(following))

    def _apply_state(self, state: PartitionState, config: LogConfig) -> None:
        key = (state.topic, state.partition)
        p = self.partitions.get(key)
        if p is not None and state.leader_epoch < p.leader_epoch:
            raise StaleControllerEpochError(
                f"{state.topic}-{state.partition}: leader epoch {state.leader_epoch} is older "
                f"than {p.leader_epoch}"
            )
        if p is None:
            log: Log = self.log_manager.get_or_create(state.topic, state.partition, config)
            self._check_topic_id(state, log)  # before the partition is hosted
            p = Partition(state.topic, state.partition, log, self.broker_id)
            # the HW starts where the checkpoint left it (else 0); the ISR's offsets move it
            checkpointed = self.log_manager.checkpointed_high_watermark(*key)
            p.high_watermark = initial_high_watermark(
                checkpointed, log.log_start_offset, log.log_end_offset
            )
            self.partitions[key] = p
        else:
            self._check_topic_id(state, p.log)
        if p.log.config != config:
            p.log.update_config(config)
        p.controller_epoch = state.controller_epoch
        if state.leader == self.broker_id:
            self.fetchers.remove(key)
            p.become_leader(
                state.leader_epoch, state.isr, state.replicas, state.zk_version,
                self.clock.monotonic_ms(),
            )  # fmt: skip
        else:
            p.become_follower(
                state.leader, state.leader_epoch, state.isr, state.replicas, state.zk_version
            )
            self.fetchers.add(p)  # truncates first, then fetches (none when leader is -1)

    def _check_topic_id(self, state: PartitionState, plog: Log) -> None:
        """The partition.metadata rule (broker/log/partition_metadata.py): write the id into
        a directory that has none, refuse (INCONSISTENT_TOPIC_ID) one that holds another."""
        key = (state.topic, state.partition)
        if state.topic_id is None or self._checked_topic_ids.get(key) == state.topic_id:
            return
        expected = decode_topic_id(state.topic_id)
        try:
            stored = partition_metadata.read(plog.directory)
        except partition_metadata.CorruptPartitionMetadataError as exc:
            log.error("%s-%d: %s is unreadable: %s", *key, partition_metadata.FILE_NAME, exc)
            raise InconsistentTopicIdError(f"{state.topic}-{state.partition}: {exc}") from None
        verdict = partition_metadata.decide(stored, expected)
        if verdict is partition_metadata.Verdict.MISMATCH:
            assert stored is not None
            message = (
                f"{state.topic}-{state.partition}: the log in {plog.directory} belongs to topic id "
                f"{encode_topic_id(stored)}, the controller names {state.topic_id}"
            )
            log.error("INCONSISTENT_TOPIC_ID: %s", message)
            raise InconsistentTopicIdError(message)
        if verdict is partition_metadata.Verdict.WRITE:
            partition_metadata.write(plog.directory, expected)
        self._checked_topic_ids[key] = state.topic_id

    # ----- the high watermark checkpoint ---------------------------------------------------

    def checkpoint_high_watermarks(self) -> bool:
        """Write every hosted partition's HW to replication-offset-checkpoint now. False when
        nothing was written (the directory is offline, or the write failed and took it
        offline)."""
        if self.log_manager.offline:
            return False
        hws = {key: p.high_watermark for key, p in self.partitions.items()}
        try:
            self.log_manager.write_high_watermarks(hws)
        except (OdradekError, OSError) as exc:
            self.failures.failed(exc, "the high watermark checkpoint")
            return False
        return True

    async def checkpoint_high_watermarks_off_loop(self) -> int:
        """`checkpoint_high_watermarks` with the files written in a thread (their fsyncs off
        the event loop), and only those whose content moved: how many were written."""
        if self.log_manager.offline:
            return 0
        hws = {key: p.high_watermark for key, p in self.partitions.items()}
        try:
            return await self.log_manager.write_high_watermarks_off_loop(hws)
        except (OdradekError, OSError) as exc:
            self.failures.failed(exc, "the high watermark checkpoint")
            return 0

    async def run_hw_checkpoints(
        self, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ) -> None:
        interval_s = self.hw_checkpoint_interval_ms / 1000
        while True:
            await sleep(interval_s)
            try:
                await self.checkpoint_high_watermarks_off_loop()
            except Exception:  # a bug here must not end the checkpoints
                log.exception("high watermark checkpoint failed")

    def stop_replica(self, topic: str, partition: int, delete: bool) -> int:
        self.fetchers.remove((topic, partition))
        p = self.partitions.pop((topic, partition), None)
        self._checked_topic_ids.pop((topic, partition), None)
        if p is not None:
            p.resign()
        if delete:
            try:
                self.log_manager.delete(topic, partition)
            except (OdradekError, OSError) as exc:
                log.warning("%s-%d: deleting the log failed: %s", topic, partition, exc)
                return error_of(exc)[0]
        log.info("stopped %s-%d%s", topic, partition, " and deleted its log" if delete else "")
        return NONE

    # ----- config changes (coordinator/cluster/config_changes.py) ----------------------------

    def apply_topic_config(self, topic: str, overrides: Mapping[str, str]) -> int:
        """Give every open log of `topic` (led, followed, or opened at start-up and not yet
        named by the controller) the defaults plus `overrides`; how many logs changed. A set
        that LogConfig refuses (written past AlterConfigs' checks) changes nothing."""
        try:
            config = LogConfig.from_properties(overrides, base=self.default_log_config)
        except OdradekError as exc:
            log.warning("topic %s: config %s not applied: %s", topic, dict(overrides), exc)
            return 0
        changed = 0
        for plog in self.log_manager.logs():
            if plog.topic == topic and plog.config != config:
                plog.update_config(config)
                changed += 1
        if changed:
            log.info("topic %s: new config on %d logs: %s", topic, changed, dict(overrides))
        return changed


def _names(names: list[str], shown: int = 5) -> str:
    """A short list for one log line: the first few names and how many more."""
    if not names:
        return "none"
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def initial_high_watermark(checkpointed: int | None, log_start: int, log_end: int) -> int:
    """A partition's HW when it is created at start-up: the checkpointed one, within
    [log start, log end] (the log may have lost an unflushed tail, or had its start moved);
    the log start without a checkpoint (0 for a log from offset 0, as before)."""
    if checkpointed is None:
        return log_start
    return min(max(checkpointed, log_start), log_end)


async def _in_threads(calls: Sequence[Callable[[], object]]) -> None:
    """Run `calls` NEW_LOG_THREADS at a time in threads. A failure is left for the loop's own
    step (`_try_apply`), which meets it again and reports it."""
    if len(calls) < 2:
        return

    def run(call: Callable[[], object]) -> None:
        with contextlib.suppress(OdradekError, OSError):
            call()

    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(NEW_LOG_THREADS, thread_name_prefix="new-log") as pool:
        await asyncio.gather(*(loop.run_in_executor(pool, run, call) for call in calls))
