"""Moving replicas between this broker's log directories (AlterReplicaLogDirs, KIP-113): Kafka's
ReplicaAlterLogDirsThread, as one asyncio task per broker.

`request(key, destination)` starts a move: the LogManager creates the future log
`<topic>-<partition>.<uuid>-future` in the destination (manager.py), and `run` copies into it
while the partition keeps serving from its current log. Each step for a future log (`step`,
decided by dir_placement.move_step) is synchronous, so nothing else touches either log
during it (the event loop is the partition's lock):

- TRUNCATE: the future log's epochs part from the current log's (the current log was
  truncated as a follower), or it is past the current log end: cut it there; or it ends below
  the current log start (new, or retention/DeleteRecords moved the start): start it over at
  the batch holding the current log start;
- COPY: read whole batches (at most `copy_bytes_max`; with io_max_bytes_per_second, Kafka's
  replica.alter.log.dirs.io.max.bytes.per.second, `run` then sleeps as long as those bytes
  take at that rate) from the current log at the future log end and append them byte for
  byte, as a follower appends its leader's (offsets, leader epochs, producer state and
  transaction index come out the same), and follow the log start;
- SWAP: caught up: the leader epochs assigned past the last batch (a new leadership's) are
  copied, the log start is matched, and the LogManager swaps the logs (`swap_future`: the
  current one is renamed `-delete`, the future one takes the partition's name) and the hosted
  partition gets its new Log. No record acknowledged before the swap is lost: the future
  log holds every batch of the current one, and nothing is appended between the last copy
  and the swap.

A move asked for a replica this broker does not host yet is remembered by the LogManager
(`prefer`) and used when the replica is created. A future log found at start-up is resumed.
Moves of partitions in a failed directory, or into one, wait (their logs refuse every call).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Protocol

from broker.log.dir_failure import is_log_dir_failure
from broker.log.dir_placement import Step, move_step
from broker.log.log import Log
from broker.log.manager import LogManager
from protocol.errors import KafkaStorageError, OdradekError, ReplicaNotAvailableError

COPY_BYTES_MAX = 1024 * 1024  # read and appended per step and replica
IDLE_S = 0.1  # how often, at most, a move that has nothing to copy looks again
STEPS_PER_YIELD = 64  # copy steps before other work on the loop gets a turn

Key = tuple[str, int]
logger = logging.getLogger(__name__)


class Hosted(Protocol):
    """A hosted partition (broker/partition.py's Partition), as a swap changes it."""

    log: Log
    high_watermark: int


class ReplicaMoves:
    def __init__(
        self,
        logs: LogManager,
        partitions: Mapping[Key, Hosted],
        io_max_bytes_per_second: int | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        copy_bytes_max: int = COPY_BYTES_MAX,
    ) -> None:
        self.logs = logs
        self.partitions = partitions  # the replica manager's: a swap gives one its new log
        self.sleep = sleep
        self.io_max_bytes_per_second = io_max_bytes_per_second  # None: unthrottled
        self.copy_bytes_max = copy_bytes_max
        if io_max_bytes_per_second is not None:  # a step copies one second's worth at most
            self.copy_bytes_max = max(1, min(copy_bytes_max, io_max_bytes_per_second))
        self._copied_bytes = 0  # by the last step
        self._work = asyncio.Event()  # set by `request`: a move to start

    def request(self, key: Key, destination: Path, hosted: bool = True) -> None:
        """Move the partition's replica to `destination` (one of the broker's log
        directories), as Kafka's ReplicaManager.alterReplicaLogDirs: KafkaStorageError when
        the destination or the partition's directory is offline, or (for a new future log)
        when any directory is; ReplicaNotAvailableError when the replica is not hosted here
        (not `hosted`: no partition, even if a log was left) and the destination is then used
        when it is created."""
        logs = self.logs
        if destination in logs.failures:
            raise KafkaStorageError(f"Log directory {destination.absolute()} is offline")
        if logs.is_offline(key):
            raise KafkaStorageError(f"Partition {key[0]}-{key[1]} is offline")
        future = logs.future(key)
        if future is not None and future.directory.parent != destination:
            logger.info("%s-%d: move to %s abandoned for %s", *key, future.directory.parent,
                        destination)  # fmt: skip
            logs.drop_future(key)
            future = None
        current = logs.get(*key)
        if not hosted or current is None or current.closed:
            logs.prefer(key, destination)
            raise ReplicaNotAvailableError(f"Replica of {key[0]}-{key[1]} is not hosted here")
        if future is not None or current.directory.parent == destination:
            return  # under way already, or there already
        if logs.failures:
            raise KafkaStorageError(
                f"Can not create a future log for {key[0]}-{key[1]}: log directories "
                f"{', '.join(str(d) for d in logs.failures)} are offline"
            )
        logs.create_future(key, destination)
        logger.info("%s-%d: moving from %s to %s", *key, current.directory.parent, destination)
        self._work.set()

    def moving(self, key: Key) -> bool:
        return self.logs.future(key) is not None

    async def run(self) -> None:
        """Copy and swap, forever (cancel to stop); idle, it waits for a `request`."""
        while True:
            if not self.logs.futures():
                self._work.clear()
                await self._work.wait()
            busy = False
            for key in list(self.logs.futures()):
                for _ in range(STEPS_PER_YIELD):
                    self._copied_bytes = 0
                    if not self._guarded_step(key):
                        break
                    busy = True
                    if self.io_max_bytes_per_second is not None and self._copied_bytes:
                        await self.sleep(self._copied_bytes / self.io_max_bytes_per_second)
                await self.sleep(0)  # produce and fetch get their turn
            if not busy:
                await self.sleep(IDLE_S)

    def _guarded_step(self, key: Key) -> bool:
        """`step`; an I/O error takes the directory it came from offline (reading the
        current log: the current's; anything else: the future's)."""
        current, future = self.logs.get(*key), self.logs.future(key)
        action = f"move of {key[0]}-{key[1]}"
        try:
            return self.step(key)
        except _ReadFailed as failed:
            exc = failed.cause
            if is_log_dir_failure(exc) and current is not None:
                self.logs.fail(exc, action, current.directory)
            else:
                logger.warning("%s-%d: move step failed: %s", key[0], key[1], exc)
        except (OdradekError, OSError) as exc:
            if is_log_dir_failure(exc) and future is not None:
                self.logs.fail(exc, action, future.directory)
            else:
                logger.warning("%s-%d: move step failed: %s", key[0], key[1], exc)
        return False

    def step(self, key: Key) -> bool:
        """One step of the partition's move; False when there was nothing to do (caught up
        and swapped, or waiting: a log closed or offline)."""
        current, future = self.logs.get(*key), self.logs.future(key)
        if current is None or future is None or current.closed or future.closed:
            return False
        what, at = move_step(current.log_start_offset, current.log_end_offset,
                             future.log_end_offset, diverged_at(current, future))  # fmt: skip
        if what is Step.TRUNCATE:
            if at == current.log_start_offset and future.log_end_offset < at:
                self._restart_at_start(current, future)
            else:
                future.truncate_to(at)
            return True
        if what is Step.COPY:
            self._copy(current, future, at)
            return True
        self._swap(key, current, future)
        return False

    def _copy(self, current: Log, future: Log, offset: int) -> None:
        _first, data = self._read(current, offset)
        if data:
            future.append_as_follower(data)
            self._copied_bytes += len(data)
        follow_log_start(current, future)

    def _restart_at_start(self, current: Log, future: Log) -> None:
        """Start the future log over at the batch holding the current log start."""
        start = current.log_start_offset
        first, data = self._read(current, start)
        future.truncate_fully_and_start_at(first if data else start)
        if data:
            future.append_as_follower(data)
        follow_log_start(current, future)

    def _read(self, current: Log, offset: int) -> tuple[int, bytes]:
        """(first batch's offset, whole batches) from the current log at `offset`."""
        try:
            result = current.read(offset, self.copy_bytes_max)
            if result.slice is None or result.size_bytes == 0:
                return offset, b""
            s = result.slice
            data = os.pread(s.fd, s.length, s.position)
        except (OdradekError, OSError) as exc:
            raise _ReadFailed(exc) from exc
        if len(data) != s.length:  # cut under the read (a truncation): try again next step
            return offset, b""
        return result.first_offset, data

    def _swap(self, key: Key, current: Log, future: Log) -> None:
        follow_log_start(current, future)
        last = future.epochs.latest_epoch
        for epoch, start in current.epochs.entries():
            if last is None or epoch > last:  # a leadership with no batch yet
                future.epochs.assign(epoch, start)
        old_dir = current.directory.parent
        log = self.logs.swap_future(key)
        p = self.partitions.get(key)
        if p is not None:  # it serves from the new log from now on
            p.log = log
            log.update_high_watermark(p.high_watermark)
        logger.info("%s-%d: moved from %s to %s at offset %d", key[0], key[1], old_dir,
                    log.directory.parent, log.log_end_offset)  # fmt: skip


class _ReadFailed(Exception):
    """Reading the current log failed (the error is `cause`)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def diverged_at(current: Log, future: Log) -> int | None:
    """Where the future log's last epoch stops agreeing with the current log (a follower's
    truncation of the current log), as a follower compares its epochs with its leader's."""
    epoch = future.epochs.latest_epoch
    if epoch is None:
        return None
    found, end = current.end_offset_for_epoch(epoch)
    if found < 0:
        return future.log_start_offset  # the current log no longer knows the epoch
    return end if end < future.log_end_offset else None


def follow_log_start(current: Log, future: Log) -> None:
    start = current.log_start_offset
    if future.log_start_offset < start <= future.log_end_offset:
        future.advance_log_start_offset(start)
