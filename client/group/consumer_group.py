"""The consumer's side of a rebalance: what `AsyncConsumer` does around `GroupMembership`.

`ensure_active()` runs at the top of every poll step. When the membership needs a join
(first poll after `subscribe`, or Stopped consumption after a heartbeat said
REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID, or after max_poll_interval_ms):

    commit the positions (auto commit only; best effort: a fenced member's commit is refused)
    listener.on_partitions_revoked(old assignment)
    JoinGroup -> the partitions to own (fetching is stopped meanwhile: poll is here)
    assign them; each partition starts at its committed offset, else keeps its position if it
        was already ours, else auto_offset_reset
    listener.on_partitions_assigned(new assignment)

Auto commit: every `auto_commit_interval_ms` a poll commits the positions (the records handed
out by earlier polls): at-least-once, as docs/consumer-groups.md explains. Listener callbacks
may be plain functions or coroutines.

The group takes its consumer as an `Assignee` (what it reads and changes of it: the assignment
and the positions it starts from), with the consumer's cluster and subscription state, rather
than client/consumer.py's AsyncConsumer, which makes the group.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from client.cluster import Cluster
from client.group.membership import GroupMembership, GroupSettings
from client.subscription import SubscriptionState
from client.types import TopicPartition
from protocol.errors import OdradekError

log = logging.getLogger("odradek.client.group")
MAX_PENDING_COMMITS = 100


class RebalanceListener(Protocol):
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any: ...

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any: ...


class Assignee(Protocol):
    """The consumer as its group sees it: what it owns, and the changes a rebalance makes."""

    def assignment(self) -> set[TopicPartition]: ...

    def apply_assignment(self, partitions: Iterable[TopicPartition]) -> None: ...

    def seek(self, tp: TopicPartition, offset: int) -> None: ...


class ConsumerGroup:
    def __init__(
        self,
        consumer: Assignee,
        cluster: Cluster,
        subs: SubscriptionState,
        settings: GroupSettings,
        enable_auto_commit: bool,
        auto_commit_interval_ms: int,
        membership: GroupMembership | None = None,  # consumer_protocol.py passes its own
    ) -> None:
        self.consumer = consumer
        self.subs = subs
        self.membership = membership or GroupMembership(cluster, settings)
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.listener: RebalanceListener | None = None
        self._next_auto_commit_s = 0.0
        self._last_auto_commit: dict[TopicPartition, int] = {}
        self._commits: set[asyncio.Task[None]] = set()
        self.rebalances = 0

    @property
    def subscribed(self) -> bool:
        return bool(self.membership.topics or self.membership.pattern)

    def subscribe(
        self, topics: Iterable[str], pattern: str | None, listener: RebalanceListener | None
    ) -> None:
        self.listener = listener
        self.membership.subscribe(topics, pattern)

    # ----- the poll step ------------------------------------------------------------------------

    async def ensure_active(self) -> None:
        self.membership.polled()
        if self.membership.needs_join:
            await self._rejoin()
        elif self.enable_auto_commit:
            now = asyncio.get_running_loop().time()
            if now >= self._next_auto_commit_s:
                self._next_auto_commit_s = now + self.auto_commit_interval_ms / 1000
                positions = self.positions()
                if positions and positions != self._last_auto_commit:  # nothing new: no record
                    self._last_auto_commit = positions
                    self.commit_async(positions)

    async def _rejoin(self) -> None:
        old = self.consumer.assignment()
        if old and self.enable_auto_commit:
            try:
                await self.commit()
            except OdradekError as exc:
                log.info("commit before rejoining refused: %s", exc)
        await _call(self.listener.on_partitions_revoked if self.listener else None, old)
        new = set(await self.membership.join())
        # The committed offsets first: from the assignment's change to the assigned callback
        # nothing awaits, so no other task sees the new partitions before the listener does.
        try:
            committed = await self.membership.committed(new) if new else {}
        except BaseException:
            self.consumer.apply_assignment(())  # owns nothing it can start; rejoins next poll
            self.membership.rejoin_later()
            raise
        self.consumer.apply_assignment(new)
        for tp in sorted(new):
            offset = committed.get(tp)
            if offset is not None:
                self.consumer.seek(tp, offset)
            elif tp not in old:
                self.subs.request_reset(tp)
        self.rebalances += 1
        self._next_auto_commit_s = asyncio.get_running_loop().time() + (
            self.auto_commit_interval_ms / 1000
        )
        await _call(self.listener.on_partitions_assigned if self.listener else None, new)

    # ----- commits ----------------------------------------------------------------------------

    def positions(self) -> dict[TopicPartition, int]:
        subs = self.subs
        out = {}
        for tp in subs.assignment():
            position = subs.position(tp)
            if position is not None:
                out[tp] = position
        return out

    async def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        await self.membership.commit(self.positions() if offsets is None else dict(offsets))

    def commit_async(
        self,
        offsets: dict[TopicPartition, int] | None = None,
        callback: Callable[[dict[TopicPartition, int], BaseException | None], Any] | None = None,
    ) -> asyncio.Task[None]:
        """Commit in the background; errors go to `callback` (else the log)."""
        wanted = self.positions() if offsets is None else dict(offsets)

        async def run() -> None:
            try:
                await self.membership.commit(wanted)
            except OdradekError as exc:
                if callback is None:
                    log.info("async commit failed: %s", exc)
                else:
                    callback(wanted, exc)
                return
            if callback is not None:
                callback(wanted, None)

        if len(self._commits) >= MAX_PENDING_COMMITS:
            raise OdradekError(f"more than {MAX_PENDING_COMMITS} async commits are pending")
        task = asyncio.ensure_future(run())
        self._commits.add(task)
        task.add_done_callback(self._commits.discard)
        return task

    async def committed(self, tp: TopicPartition) -> int | None:
        return (await self.membership.committed([tp])).get(tp)

    async def close(self) -> None:
        if self._commits:
            await asyncio.gather(*self._commits, return_exceptions=True)
        if self.enable_auto_commit and self.consumer.assignment():
            try:
                await self.commit()
            except OdradekError as exc:
                log.info("final commit refused: %s", exc)
        await self.membership.close()


async def _call(fn: Callable[[set[TopicPartition]], Any] | None, tps: set[TopicPartition]) -> None:
    if fn is None:
        return
    result = fn(set(tps))
    if inspect.isawaitable(result):
        await result
