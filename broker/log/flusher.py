"""Group commit for fsync policy "always": appends that wait together share one fdatasync.

For each log at most one flush is in flight. An append that needs offset O durable awaits
`wait_durable(log, O)`: if the recovery point is already past O it returns at once; if a flush
is in flight it waits for that one and looks again (that flush may have been planned before O
was appended); otherwise it starts a flush itself. Every waiter that arrives while a flush runs
therefore rides on the next one, which covers everything appended up to when it starts: under
load the number of fdatasyncs per second stays near the disk's fdatasync rate whatever the
number of concurrent producers.

A flush that fails (fdatasync's EIO) fails every append waiting on it; the caller takes the log
directory offline (dir_failure.py), and a waiter on a log already offline fails at once, never
counted as durable.

The flush plan is made and marked on the event loop (Log is single-threaded); only
`FlushPlan.run()` (the fdatasync calls) goes to the executor. This is the only asyncio module
in broker/log.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor

from broker.log.dir_failure import LogDirIOError
from broker.log.log import Log
from protocol.errors import KafkaStorageError


class GroupCommitFlusher:
    def __init__(self, executor: Executor | None = None) -> None:
        self._executor = executor
        self._in_flight: dict[int, asyncio.Future[None]] = {}  # id(log) -> running flush
        self.flush_count = 0  # flushes run (each is one fdatasync per unflushed segment)

    async def wait_durable(self, log: Log, offset: int) -> None:
        """Return once every offset <= `offset` of `log` has been fdatasynced."""
        while log.recovery_point <= offset:
            if log.offline:  # its directory failed: this offset may never reach the disk
                raise LogDirIOError(
                    f"offset {offset} of {log.topic}-{log.partition} was not made durable: "
                    "the log directory is offline"
                )
            if log.closed:
                return  # close() flushed everything
            if offset >= log.log_end_offset:
                raise KafkaStorageError(
                    f"offset {offset} of {log.topic}-{log.partition} was truncated before "
                    "it became durable"
                )
            flush = self._in_flight.get(id(log))
            if flush is None:
                flush = asyncio.ensure_future(self._flush(log))
                self._in_flight[id(log)] = flush
            await asyncio.shield(flush)

    async def _flush(self, log: Log) -> None:
        try:
            plan = log.durability.flush_plan()
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._executor, plan.run)
            self.flush_count += 1
            log.durability.finish_flush(plan)
        finally:
            self._in_flight.pop(id(log), None)
