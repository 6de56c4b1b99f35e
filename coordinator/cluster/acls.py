"""Kafka's ACLs in ZooKeeper, as Kafka's ZooKeeper-era AclAuthorizer keeps them, and every
broker's cache following them.

Layout (Kafka's ZkData.scala; types in Kafka's Pascal case):

    /kafka-acl/<Type>/<name>                          LITERAL pattern's entry set (JSON below)
    /kafka-acl-extended/prefixed/<Type>/<name>        PREFIXED pattern's entry set
    /kafka-acl-changes/acl_changes_<10-digit seq>     "TOPIC:orders" (a LITERAL change)
    /kafka-acl-extended-changes/acl_changes_<seq>     {"version":1,"resourceType":"TOPIC",
                                                       "name":"app-","patternType":"PREFIXED"}

    {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
                          "operation":"Read","host":"*"}]}          (protocol/acl.py)

Writing (`ZkAclStore.update`, from CreateAcls / DeleteAcls on any broker): read the pattern's
node and its version, compute the new set, write it only if the version is still the one read
(create if absent; delete the node when the set becomes empty), and retry from the read when
another writer got there first. Then announce the pattern under the matching change path and
put the new set in this broker's cache at once.

Following (every broker): at start every pattern node is read into the cache (`sink.replace`);
then a children watch on each change path wakes one task that, for each notification after the
last one processed, re-reads the pattern it names. A notification purged before it was read, or
a LOST session (watches may have missed events), makes it read every node again. So a change
made through one broker reaches every broker's cache as fast as ZooKeeper's watch fires.

Old notifications: a writer keeps the newest `MAX_CHANGES_KEPT` (1,000) of each change path and
deletes the rest (Kafka deletes those older than 15 minutes; a count bounds the children list
without clocks, and a reader that finds a purged one reloads everything). It was 100: a
CreateAcls of 500 bindings then left every other broker reloading all nodes again and again
while the burst lasted (docs/benchmarks.md, ACLs). A follower reads notifications and nodes
LOAD_BATCH at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Protocol

from coordinator.cluster.config_changes import pending_changes, sequence_of, stale_changes
from coordinator.cluster.zk import (
    WatchHandle,
    ZkBadVersion,
    ZkClient,
    ZkConnectionLost,
    ZkError,
    ZkNodeExists,
    ZkNoNode,
    ZkState,
)
from protocol.acl import (
    AclEntry,
    PatternType,
    ResourcePattern,
    ResourceType,
    decode_change,
    entries_from_json,
    entries_to_json,
    extended_change,
    literal_change,
    parse_enum,
    pascal_name,
)
from protocol.errors import InvalidRequestError

log = logging.getLogger("odradek.coordinator.acls")

KAFKA_ACL = "/kafka-acl"
KAFKA_ACL_PREFIXED = "/kafka-acl-extended/prefixed"
KAFKA_ACL_CHANGES = "/kafka-acl-changes"
KAFKA_ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
MAX_CHANGES_KEPT = 1000  # a follower further behind than this reloads every ACL node
UPDATE_ATTEMPTS_MAX = 50  # conditional writes lost to other writers before giving up
LOAD_BATCH = 200  # node reads in flight at once when loading everything
RETRY_DELAY_S = 1.0

Entries = frozenset[AclEntry]
Sleep = Callable[[float], Awaitable[None]]


class AclSink(Protocol):
    """Where the ACLs read go: the broker's AclCache (broker/security/authorizer.py)."""

    def replace(self, pattern: ResourcePattern, entries: Iterable[AclEntry]) -> None: ...

    def replace_all(self, sets: Mapping[ResourcePattern, Entries]) -> None: ...


def pattern_path(pattern: ResourcePattern) -> str:
    """The znode of a pattern's entry set; InvalidRequestError for a name ZooKeeper cannot
    hold as one node (Kafka's ZooKeeper authorizer had the same limit)."""
    name = pattern.name
    if "/" in name or name in (".", "..") or "\x00" in name:
        raise InvalidRequestError(
            f"resource name {name!r} cannot be stored in ZooKeeper (no '/', '.', '..' or NUL)"
        )
    root = {PatternType.LITERAL: KAFKA_ACL, PatternType.PREFIXED: KAFKA_ACL_PREFIXED}.get(
        pattern.pattern_type
    )
    if root is None:
        raise InvalidRequestError(f"an ACL's pattern is LITERAL or PREFIXED, not {pattern}")
    return f"{root}/{pascal_name(pattern.resource_type)}/{name}"


def change_of(pattern: ResourcePattern) -> tuple[str, bytes]:
    """(change path, notification value) announcing a change of `pattern`."""
    if pattern.pattern_type == PatternType.LITERAL:
        return KAFKA_ACL_CHANGES, literal_change(pattern)
    return KAFKA_ACL_EXTENDED_CHANGES, extended_change(pattern)


class ZkAclStore:
    """ACL storage in ZooKeeper plus the notification follower that keeps `sink` current."""

    def __init__(self, zk: ZkClient, sink: AclSink, sleep: Sleep = asyncio.sleep) -> None:
        self.zk = zk
        self.sink = sink
        self.changes_applied = 0
        self._sleep = sleep
        self._last_seq = {KAFKA_ACL_CHANGES: -1, KAFKA_ACL_EXTENDED_CHANGES: -1}
        self._children: dict[str, list[str]] = {
            KAFKA_ACL_CHANGES: [],
            KAFKA_ACL_EXTENDED_CHANGES: [],
        }
        self._reload = False  # set when a full reload is due (LOST session, purged notification)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watches: list[WatchHandle] = []

    # ----- reading --------------------------------------------------------------------------

    async def read(self, pattern: ResourcePattern) -> tuple[Entries, int | None]:
        """The pattern's entry set and its node's version (None: no node)."""
        try:
            data, version = await self.zk.get(pattern_path(pattern))
        except ZkNoNode:
            return frozenset(), None
        try:
            return entries_from_json(data), version
        except ValueError as exc:
            log.warning("ACL node %s is not Kafka's JSON, read as empty: %s", pattern, exc)
            return frozenset(), version

    async def load_all(self) -> int:
        """Read every pattern node and make them the sink's whole content; the number of
        patterns read."""
        patterns = [p async for p in self._all_patterns()]
        found: dict[ResourcePattern, Entries] = {}
        for start in range(0, len(patterns), LOAD_BATCH):
            batch = patterns[start : start + LOAD_BATCH]
            sets = await asyncio.gather(*(self.read(p) for p in batch))
            for pattern, (entries, _) in zip(batch, sets, strict=True):
                if entries:
                    found[pattern] = entries
        self.sink.replace_all(found)
        return len(found)

    async def _all_patterns(self) -> AsyncIterator[ResourcePattern]:
        for root, kind in (
            (KAFKA_ACL, PatternType.LITERAL),
            (KAFKA_ACL_PREFIXED, PatternType.PREFIXED),
        ):
            try:
                types = await self.zk.get_children(root)
            except ZkNoNode:
                continue
            for type_name in types:
                try:
                    resource_type = parse_enum(ResourceType, type_name)
                except InvalidRequestError:
                    log.warning("ignoring ACLs under %s/%s: not a resource type", root, type_name)
                    continue
                with contextlib.suppress(ZkNoNode):
                    for name in await self.zk.get_children(f"{root}/{type_name}"):
                        yield ResourcePattern(resource_type, name, kind)

    # ----- writing --------------------------------------------------------------------------

    async def update(
        self, pattern: ResourcePattern, change: Callable[[Entries], Entries]
    ) -> tuple[Entries, Entries]:
        """Replace the pattern's set by `change(current)`, conditionally on the version read;
        returns (before, after). Announces the change and updates the local sink."""
        path = pattern_path(pattern)
        for _ in range(UPDATE_ATTEMPTS_MAX):
            before, version = await self.read(pattern)
            after = frozenset(change(before))
            if after == before:
                return before, after
            try:
                await self._write(path, version, after)
            except (ZkBadVersion, ZkNodeExists, ZkNoNode):
                continue  # another writer changed it since our read: read again
            self.sink.replace(pattern, after)
            await self._announce(pattern)
            log.info("ACLs of %s: %d entries (were %d)", pattern, len(after), len(before))
            return before, after
        raise ZkError(f"ACLs of {pattern} changed under us {UPDATE_ATTEMPTS_MAX} times", path)

    async def _write(self, path: str, version: int | None, after: Entries) -> None:
        if version is None:
            await self.zk.create(path, entries_to_json(after), makepath=True)
        elif after:
            await self.zk.set(path, entries_to_json(after), version)
        else:
            await self.zk.delete(path, version)

    async def _announce(self, pattern: ResourcePattern) -> None:
        root, value = change_of(pattern)
        await self.zk.ensure_path(root)
        await self.zk.create(f"{root}/{CHANGE_PREFIX}", value, sequence=True)
        for child in stale_changes(
            await self.zk.get_children(root), MAX_CHANGES_KEPT, CHANGE_PREFIX
        ):
            with contextlib.suppress(ZkNoNode):  # another writer purged it first
                await self.zk.delete(f"{root}/{child}")

    # ----- following ------------------------------------------------------------------------

    async def start(self) -> None:
        """Load every ACL, then follow the change notifications."""
        for root in (KAFKA_ACL, KAFKA_ACL_PREFIXED, *self._last_seq):
            await self.zk.ensure_path(root)
        self.zk.add_state_listener(self._on_state)
        for root in self._last_seq:  # the current notifications: all covered by the load
            seqs = (sequence_of(c, CHANGE_PREFIX) for c in await self.zk.get_children(root))
            self._last_seq[root] = max((s for s in seqs if s is not None), default=-1)
        await self.load_all()
        self._task = asyncio.get_running_loop().create_task(self._run())
        for root in self._last_seq:
            self._watches.append(await self.zk.watch_children(root, self._on_children(root)))

    async def stop(self) -> None:
        self.zk.remove_state_listener(self._on_state)
        for watch in self._watches:
            watch.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _on_children(self, root: str) -> Callable[[list[str]], None]:
        def on_children(children: list[str]) -> None:
            self._children[root] = children
            self._wake.set()

        return on_children

    def _on_state(self, state: ZkState) -> None:
        if state == "LOST":
            self._reload = True
            self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.process()
            except ZkError as exc:
                level = logging.INFO if isinstance(exc, ZkConnectionLost) else logging.WARNING
                log.log(level, "ACL changes not applied yet: %s", exc)
                await self._sleep(RETRY_DELAY_S)
                self._wake.set()
            except Exception:  # a bug: say so, and keep following
                log.exception("applying ACL changes failed")

    async def process(self) -> set[ResourcePattern]:
        """Re-read the patterns the new notifications name (or everything, see the module
        docstring); the patterns re-read (empty after a full reload)."""
        changed: set[ResourcePattern] = set()
        last = dict(self._last_seq)
        reload = self._reload
        for root, children in self._children.items():
            todo = pending_changes(children, last[root], CHANGE_PREFIX)
            for start in range(0, len(todo), LOAD_BATCH):  # reads in flight together
                batch = todo[start : start + LOAD_BATCH]
                got = await asyncio.gather(
                    *(self.zk.get(f"{root}/{child}") for _, child in batch),
                    return_exceptions=True,
                )
                for (seq, child), result in zip(batch, got, strict=True):
                    reload = self._note(root, child, result, changed) or reload
                    last[root] = seq
        if reload:
            self._reload = True
            await self.load_all()
            self._reload = False
            changed = set()
        else:
            patterns = list(changed)
            for start in range(0, len(patterns), LOAD_BATCH):
                chunk = patterns[start : start + LOAD_BATCH]
                sets = await asyncio.gather(*(self.read(p) for p in chunk))
                for pattern, (entries, _) in zip(chunk, sets, strict=True):
                    self.sink.replace(pattern, entries)
        self._last_seq = last
        self.changes_applied += 1
        return changed

    def _note(
        self,
        root: str,
        child: str,
        result: tuple[bytes, int] | BaseException,
        changed: set[ResourcePattern],
    ) -> bool:
        """Add the pattern a notification names to `changed`; True when it was purged before
        we read it (then we do not know what changed: reload everything)."""
        if isinstance(result, ZkNoNode):
            return True
        if isinstance(result, BaseException):
            raise result  # ZooKeeper trouble: _run retries from last_seq
        try:
            changed.add(decode_change(result[0]))
        except ValueError as exc:
            log.warning("ignoring ACL change %s/%s: %s", root, child, exc)
        return False
