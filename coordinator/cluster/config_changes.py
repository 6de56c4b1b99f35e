"""Topic config changes through ZooKeeper, as Kafka's ZooKeeper-era brokers made them.

Writing (any broker, for AlterConfigs): `/config/topics/<topic>` gets the topic's whole new
override set, then a persistent sequential node announces it:

    /config/changes/config_change_<10-digit seq>   {"version":2,"entity_path":"topics/<topic>"}

Then the writer deletes all but the newest `MAX_CHANGES_KEPT` notifications (Kafka deletes
those older than 15 minutes; a count is a bound that needs no clocks).

Applying (every broker): `ConfigChangeListener` watches the children of /config/changes. Each
notification whose sequence is above the last one it processed names a topic; the listener
re-reads that topic's /config/topics node and hands the overrides to `apply(topic, overrides)`
(PartitionRoles.apply_topic_config, broker/partition_roles.py: the topic's open logs get the
new LogConfig). At start it processes every notification present, so a change made while the
broker was down or starting counts. A notification deleted before it was read (purged by a
writer), or a session LOST (watch events may have been missed), makes it re-read every topic
`hosted()` names instead.
The watch callback only wakes one task; the task does the reads, one batch at a time.

Other entity types ride on the same notifications: `subscribe("users", on_change, on_resync)`
gets `on_change("<rest of the entity path>")` (e.g. "alice", or "alice/clients/app") for each
notification naming that type, and `on_resync()` where the listener would re-read every topic.
SCRAM credentials (coordinator/cluster/scram_credentials.py) and client quotas follow /config/users
this way; their writers call `announce_change(zk, entity_path)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.topics import read_topic_config
from coordinator.cluster.zk import (
    WatchHandle,
    ZkClient,
    ZkConnectionLost,
    ZkError,
    ZkNoNode,
    ZkState,
)
from coordinator.cluster.zk_paths import ConfigChange, TopicConfig, ZkDataError
from protocol.errors import UnknownTopicOrPartitionError

log = logging.getLogger("odradek.coordinator.config_changes")

MAX_CHANGES_KEPT = 100  # notifications left under /config/changes after a write
RETRY_DELAY_S = 1.0  # after a ZooKeeper error, before reading again
SEQ_DIGITS = 10

ApplyConfig = Callable[[str, Mapping[str, str]], object]
OnEntityChange = Callable[[str], Awaitable[None]]
OnResync = Callable[[], Awaitable[None]]
Sleep = Callable[[float], Awaitable[None]]


def sequence_of(child: str, prefix: str = paths.CONFIG_CHANGE_PREFIX) -> int | None:
    """config_change_0000000042 -> 42 (a sequential node named `prefix` + ten digits: also
    the ACL change notifications, coordinator/cluster/acls.py); None for any other node."""
    digits = child.removeprefix(prefix)
    if digits == child or len(digits) != SEQ_DIGITS or not digits.isdigit():
        return None
    return int(digits)


def pending_changes(
    children: Iterable[str], last_seq: int, prefix: str = paths.CONFIG_CHANGE_PREFIX
) -> list[tuple[int, str]]:
    """(seq, child) of the notifications after `last_seq`, oldest first."""
    found = [(sequence_of(c, prefix), c) for c in children]
    return sorted((s, c) for s, c in found if s is not None and s > last_seq)


def stale_changes(
    children: Iterable[str], keep: int, prefix: str = paths.CONFIG_CHANGE_PREFIX
) -> list[str]:
    """The notifications beyond the newest `keep`, oldest first."""
    numbered = sorted((s, c) for c in children if (s := sequence_of(c, prefix)) is not None)
    return [c for _, c in numbered[: max(0, len(numbered) - keep)]]


async def write_topic_config(zk: ZkClient, topic: str, config: Mapping[str, str]) -> None:
    """Replace the topic's overrides and announce the change to every broker.
    UnknownTopicOrPartitionError when the topic does not exist."""
    if await zk.exists(paths.topic_path(topic)) is None:
        raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
    path = paths.topic_config_path(topic)
    data = TopicConfig(dict(config)).encode()
    try:
        await zk.set(path, data)
    except ZkNoNode:  # a topic created by a tool that wrote no config node
        await zk.create(path, data, makepath=True)
    created = await announce_change(zk, ConfigChange.for_topic(topic).entity_path)
    log.info("topic %s config set to %s (%s)", topic, dict(config), created)


async def announce_change(zk: ZkClient, entity_path: str) -> str:
    """Tell every broker that the config of `entity_path` ("topics/t", "users/alice") changed;
    then purge the oldest notifications. The path of the notification created."""
    await zk.ensure_path(paths.CONFIG_CHANGES)
    prefix = f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}"
    created = await zk.create(prefix, ConfigChange(entity_path).encode(), sequence=True)
    for child in stale_changes(await zk.get_children(paths.CONFIG_CHANGES), MAX_CHANGES_KEPT):
        with contextlib.suppress(ZkNoNode):  # another writer purged it first
            await zk.delete(f"{paths.CONFIG_CHANGES}/{child}")
    return created


class ConfigChangeListener:
    """One broker's watch on /config/changes (see the module docstring)."""

    def __init__(
        self,
        zk: ZkClient,
        apply: ApplyConfig,
        hosted: Callable[[], Iterable[str]],
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.zk = zk
        self.apply = apply
        self.hosted = hosted
        self.last_seq = -1
        self.changes_applied = 0
        self._sleep = sleep
        self._children: list[str] = []
        self._resync = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watch: WatchHandle | None = None
        self._subscribers: dict[str, list[tuple[OnEntityChange, OnResync]]] = {}

    def subscribe(self, entity_type: str, on_change: OnEntityChange, on_resync: OnResync) -> None:
        """Follow notifications for `entity_type` ("users", "clients"); see the docstring."""
        self._subscribers.setdefault(entity_type, []).append((on_change, on_resync))

    async def start(self) -> None:
        await self.zk.ensure_path(paths.CONFIG_CHANGES)
        self.zk.add_state_listener(self._on_state)
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._watch = await self.zk.watch_children(paths.CONFIG_CHANGES, self._on_children)

    async def stop(self) -> None:
        self.zk.remove_state_listener(self._on_state)
        if self._watch is not None:
            self._watch.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _on_children(self, children: list[str]) -> None:
        self._children = children
        self._wake.set()

    def _on_state(self, state: ZkState) -> None:
        if state == "LOST":  # the watch may have missed changes: read every hosted topic again
            self._resync = True
            self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.process(self._children)
            except ZkError as exc:
                level = logging.INFO if isinstance(exc, ZkConnectionLost) else logging.WARNING
                log.log(level, "config changes not applied yet: %s", exc)
                await self._sleep(RETRY_DELAY_S)
                self._wake.set()
            except Exception:  # a bug: say so, and keep listening for the next change
                log.exception("applying config changes failed")

    async def process(self, children: list[str]) -> list[str]:
        """Apply the changes `children` announce after `last_seq`; the topics re-read."""
        topics: set[str] = set()
        entities: set[tuple[str, str]] = set()
        resync, self._resync = self._resync, False
        last = self.last_seq
        try:
            for seq, child in pending_changes(children, self.last_seq):
                try:
                    data, _ = await self.zk.get(f"{paths.CONFIG_CHANGES}/{child}")
                    change = ConfigChange.decode(data)
                    topic = change.topic
                    kind, _, rest = change.entity_path.partition("/")
                    if kind in self._subscribers and rest:
                        entities.add((kind, rest))
                except ZkNoNode:
                    resync = True  # purged before we read it: we do not know which topic
                    topic = None
                except ZkDataError as exc:
                    log.warning("ignoring config change %s: %s", child, exc)
                    topic = None
                if topic is not None:
                    topics.add(topic)
                last = seq
            if resync:
                topics.update(self.hosted())
            for topic in sorted(topics):
                await self._apply(topic)
            await self._notify_subscribers(sorted(entities), resync)
        except BaseException:
            self._resync = self._resync or resync  # last_seq stays: all is read again
            raise
        self.last_seq = last
        return sorted(topics)

    async def _notify_subscribers(self, entities: list[tuple[str, str]], resync: bool) -> None:
        if resync:
            for subscribers in self._subscribers.values():
                for _, on_resync in subscribers:
                    await on_resync()
            return
        for kind, rest in entities:
            for on_change, _ in self._subscribers[kind]:
                await on_change(rest)

    async def _apply(self, topic: str) -> None:
        try:
            overrides = await read_topic_config(self.zk, topic)
        except UnknownTopicOrPartitionError:
            return  # deleted since: nothing to apply
        self.apply(topic, overrides)
        self.changes_applied += 1
