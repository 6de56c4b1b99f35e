"""Synchronous clients for scripts and Spark executors: the shared loop thread, and Admin.

Each sync client owns one private event loop (uvloop) running in one background thread, started
on first use and stopped by `close()` (or the `with` block's end); the Consumer's instead runs
in the caller's thread during each call (client/caller_loop.py, asyncio's own loop). Every
method hands a coroutine or a call to that loop and blocks for its result, so the async client
is only ever touched from its own thread. The sync wrappers never use the caller's event loop,
so they also work inside programs that run their own. `Producer` is in client/sync_producer.py,
`Consumer` in client/sync_consumer.py.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

import uvloop

from client.acl_admin import SyncAclAdmin
from client.admin import AsyncAdmin, PartitionReassignment
from client.caller_loop import CallerLoop, finish_tasks, running_loop
from client.cluster import ClusterMetadata
from client.group_offsets_admin import SyncGroupOffsetsAdmin
from client.quota_admin import SyncQuotaAdmin
from client.scram_admin import SyncScramAdmin
from client.txn_admin import SyncTxnAdmin
from client.types import (
    NewTopic,
    OffsetAndTimestamp,
    TopicDescription,
    TopicPartition,
)
from protocol.api.admin import RESOURCE_TOPIC, ConfigEntry
from protocol.errors import OdradekError, UsageError

T = TypeVar("T")


class _LoopThread:
    """One event loop in one daemon thread, started lazily."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.stopped = False

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self.stopped:
                raise UsageError(f"{self._name} is closed")
            if self._loop is None:
                loop = uvloop.new_event_loop()
                thread = threading.Thread(target=self._main, args=(loop,), name=self._name,
                                          daemon=True)  # fmt: skip
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _main(loop: asyncio.AbstractEventLoop) -> None:
        loop.run_forever()
        finish_tasks(loop)  # stopped: nothing may be left pending when the loop closes

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        try:
            loop = self._ensure()
            if running_loop() is loop:
                raise UsageError("a sync client cannot be called from its own event loop")
        except BaseException:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout_s)

    def is_current(self) -> bool:
        """Whether the caller runs on this loop's thread (a future's callback, say)."""
        return self._thread is not None and threading.current_thread() is self._thread

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the loop, without waiting."""
        self._ensure().call_soon_threadsafe(fn)

    def stop(self) -> None:
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


class _SyncClient:
    """Owns the loop thread and the async twin, built inside that loop on first use.

    `_caller_runs_loop`: the loop is a CallerLoop (client/caller_loop.py), run in the caller's
    thread during each call (the Consumer), instead of a dedicated loop thread.
    """

    _name = "odradek-client"
    _caller_runs_loop = False

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._thread: _LoopThread | CallerLoop = (
            CallerLoop(self._name) if self._caller_runs_loop else _LoopThread(self._name)
        )
        self._client: Any = None
        self._starting: asyncio.Future[Any] | None = None  # on the loop: the client's start

    def _run(self, make_coro: Callable[[Any], Awaitable[T]], timeout_s: float | None = None) -> T:
        async def go() -> T:
            if self._client is None:
                await self._start_once()
            return await make_coro(self._client)

        return self._thread.run(go(), timeout_s)

    async def _start_once(self) -> None:
        """Build and start the async client; callers from several threads share one start."""
        if self._starting is None or (
            self._starting.done() and self._starting.exception() is not None
        ):
            client = self._factory()
            self._starting = asyncio.ensure_future(client.start())
            self._starting.add_done_callback(lambda f: f.cancelled() or f.exception())
            await asyncio.shield(self._starting)
            self._client = client
        else:
            await asyncio.shield(self._starting)

    def close(self) -> None:
        if self._thread.stopped:
            return
        try:
            if self._client is not None:
                self._thread.run(self._client.close())
        finally:
            self._thread.stop()

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Admin(
    SyncAclAdmin, SyncTxnAdmin, SyncGroupOffsetsAdmin, SyncQuotaAdmin, SyncScramAdmin, _SyncClient
):
    """Synchronous twin of AsyncAdmin (same arguments)."""

    _name = "odradek-admin"

    def __init__(self, bootstrap_servers: str | Iterable[str], **config: Any) -> None:
        super().__init__(lambda: AsyncAdmin(bootstrap_servers, **config))

    def __enter__(self) -> Admin:
        return self

    def create_topics(
        self, new_topics: Iterable[NewTopic], timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:  # fmt: skip
        topics = list(new_topics)
        self._run(lambda a: a.create_topics(topics, timeout_ms, validate_only))

    def delete_topics(self, names: Iterable[str], timeout_ms: int | None = None) -> None:
        wanted = list(names)
        self._run(lambda a: a.delete_topics(wanted, timeout_ms))

    def list_topics(self, include_internal: bool = False) -> list[str]:
        return self._run(lambda a: a.list_topics(include_internal))

    def describe_topics(self, names: Iterable[str] | None = None) -> list[TopicDescription]:
        wanted = None if names is None else list(names)
        return self._run(lambda a: a.describe_topics(wanted))

    def describe_cluster(self) -> ClusterMetadata:
        return self._run(lambda a: a.describe_cluster())

    def elect_leaders(
        self, topic: str | None = None, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OdradekError | None]:
        return self._run(lambda a: a.elect_leaders(topic, timeout_ms))

    def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Iterable[int]], timeout_ms: int | None = None
    ) -> None:
        wanted = {tp: list(r) for tp, r in targets.items()}
        self._run(lambda a: a.alter_partition_reassignments(wanted, timeout_ms))

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        wanted = None if partitions is None else list(partitions)
        return self._run(lambda a: a.list_partition_reassignments(wanted))

    def describe_configs(
        self, topics: Iterable[str], config_names: list[str] | None = None
    ) -> dict[str, dict[str, ConfigEntry]]:
        wanted = list(topics)
        return self._run(lambda a: a.describe_configs(wanted, config_names))

    def describe_config_entries(
        self,
        resource_type: int,
        name: str,
        include_synonyms: bool = False,
        include_documentation: bool = False,
    ) -> list[ConfigEntry]:
        return self._run(
            lambda a: a.describe_config_entries(
                resource_type, name, include_synonyms, include_documentation
            )
        )

    def alter_configs(
        self,
        topic: str,
        set_configs: Mapping[str, str] | None = None,
        delete: Iterable[str] = (),
        validate_only: bool = False,
        resource_type: int = RESOURCE_TOPIC,
    ) -> None:
        sets, deletes = dict(set_configs or {}), list(delete)
        self._run(lambda a: a.alter_configs(topic, sets, deletes, validate_only, resource_type))

    def create_partitions(
        self,
        new_counts: Mapping[str, int],
        assignments: Mapping[str, list[list[int]]] | None = None,
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        counts = dict(new_counts)
        given = None if assignments is None else dict(assignments)
        self._run(lambda a: a.create_partitions(counts, given, timeout_ms, validate_only))

    def list_offsets(
        self, query: Mapping[TopicPartition, int], isolation_level: str = "read_uncommitted"
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        q = dict(query)
        return self._run(lambda a: a.list_offsets(q, isolation_level))

    def delete_records(
        self, before: Mapping[TopicPartition, int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        wanted = dict(before)
        return self._run(lambda a: a.delete_records(wanted, timeout_ms))
