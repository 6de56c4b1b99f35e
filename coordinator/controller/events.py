"""The controller's event machinery: what runs its one-at-a-time event loop (core.py).

How it works: `EventQueue` is one bounded queue of (event kind, argument) keys (Kafka's
ControllerEventManager). A key already queued is not queued twice: each handler re-reads
ZooKeeper, so coalescing loses nothing and the queue stays small. `wait_idle` waits until the
queue is empty and the loop has marked itself idle.

`PendingCalls` holds the requests only the controller answers (`Controller.call`): a function and
the future its result goes to, run as a CALL event in order with the rest, failed with
NotControllerError when the controller stops.

`Watches` holds the ZooKeeper watches that feed the queue: the children watches set at STARTUP
and one data watch per topic znode (/brokers/topics/<t>, Kafka's PartitionModificationsHandler)
whose changes are remembered (`take_modified`) until PARTITION_MODIFICATIONS reads them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any, TypeVar

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import WatchHandle, ZkClient, ZkConnectionLost
from coordinator.controller.state_writer import ControllerFenced
from protocol.errors import NotControllerError

log = logging.getLogger(__name__)
T = TypeVar("T")
Key = tuple["Event", int | None]


class Event(Enum):
    STARTUP = "startup"
    BROKER_CHANGE = "broker_change"
    BROKER_PROBED_DEAD = "broker_probed_dead"
    TOPIC_CHANGE = "topic_change"
    TOPIC_DELETION = "topic_deletion"
    PARTITION_MODIFICATIONS = "partition_modifications"
    ISR_CHANGE = "isr_change"
    LOG_DIR_EVENT = "log_dir_event"
    RESYNC = "resync"
    CALL = "call"
    AUTO_REBALANCE = "auto_rebalance"
    UNCLEAN_ENABLED = "unclean_enabled"


class EventQueue:
    """Bounded, coalescing: a key already queued is not queued again."""

    def __init__(self, maxsize: int) -> None:
        self._queue: asyncio.Queue[Key] = asyncio.Queue(maxsize)
        self._queued: set[Key] = set()
        self._idle = asyncio.Event()

    def __contains__(self, key: Key) -> bool:
        return key in self._queued

    def put(self, key: Key) -> None:
        if key in self._queued:
            return
        try:
            self._queue.put_nowait(key)
        except asyncio.QueueFull:
            log.error("controller event queue full (%d): %s dropped", self._queue.maxsize, key)
            return
        self._queued.add(key)
        self._idle.clear()

    async def get(self) -> Key:
        """The next key; marks the loop idle first if there is none yet."""
        if self._queue.empty():
            self._idle.set()
        key = await self._queue.get()
        self._queued.discard(key)
        return key

    def set_idle(self) -> None:
        self._idle.set()

    async def wait_idle(self, timeout_s: float) -> None:
        async with asyncio.timeout(timeout_s):
            while not (self._queue.empty() and self._idle.is_set()):
                await self._idle.wait()
                await asyncio.sleep(0)


class PendingCalls:
    """Requests waiting to run as CALL events, by call id."""

    def __init__(self) -> None:
        self._calls: dict[int, tuple[Callable[[], Awaitable[Any]], asyncio.Future[Any]]] = {}
        self._call_ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._calls)

    def add(self, fn: Callable[[], Awaitable[T]]) -> tuple[int, asyncio.Future[T]]:
        call_id = next(self._call_ids)
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._calls[call_id] = (fn, future)
        return call_id, future

    def discard(self, call_id: int) -> None:
        self._calls.pop(call_id, None)

    def fail_all(self) -> None:
        calls, self._calls = self._calls, {}
        for _fn, future in calls.values():
            if not future.done():
                future.set_exception(NotControllerError("the controller stopped"))

    async def run(self, call_id: int | None) -> None:
        fn, future = self._calls.pop(call_id or 0, (None, None))
        if fn is None or future is None or future.done():
            return
        try:
            future.set_result(await fn())
        except (ControllerFenced, ZkConnectionLost) as exc:
            future.set_exception(NotControllerError(f"the controller stopped: {exc}"))
            raise
        except Exception as exc:
            future.set_exception(exc)


class Watches:
    """The controller's ZooKeeper watches; a changed topic znode queues PARTITION_MODIFICATIONS."""

    def __init__(self, zk: ZkClient, enqueue: Callable[[Event], None]) -> None:
        self._zk = zk
        self._enqueue = enqueue
        self._children: list[WatchHandle] = []
        self._topics: dict[str, WatchHandle] = {}  # /brokers/topics/<t> data watches
        self._modified_topics: set[str] = set()  # topics whose znode changed, not yet read

    async def watch_children(self, path: str, event: Event) -> None:
        self._children.append(await self._zk.watch_children(path, self._trigger(event)))

    def _trigger(self, event: Event) -> Callable[[list[str]], None]:
        return lambda _children: self._enqueue(event)

    async def watch_topic(self, topic: str) -> None:
        if topic in self._topics:
            return

        def on_data(data: bytes | None, _version: int | None) -> None:
            if data is not None:
                self._modified_topics.add(topic)
                self._enqueue(Event.PARTITION_MODIFICATIONS)

        self._topics[topic] = await self._zk.watch_data(paths.topic_path(topic), on_data)

    def unwatch_topic(self, topic: str) -> None:
        handle = self._topics.pop(topic, None)
        if handle is not None:
            handle.cancel()

    def take_modified(self) -> set[str]:
        topics, self._modified_topics = self._modified_topics, set()
        return topics

    def cancel_all(self) -> None:
        for handle in [*self._children, *self._topics.values()]:
            handle.cancel()
        self._children.clear()
        self._topics.clear()
