"""AsyncConsumer: the low-level consumer with manual assignment (seeds 000 and 001).

The user assigns partitions, optionally seeks, and polls. `poll` is a short loop:

    raise an error a fetch left behind (OFFSET_OUT_OF_RANGE with auto_offset_reset="none", ...)
    look up positions for partitions that have none (ListOffsets, per auto_offset_reset)
    hand out buffered records, up to max_records           -> return them (after sending the
                                                              fetches of partitions behind
                                                              their high watermark, so they
                                                              overlap with the user's work)
    send fetches for fetchable partitions (one per leader node)
    wait for a fetch to finish, until the timeout

The subscription state (client/subscription.py) holds positions and pause flags; the fetcher
(client/fetcher.py) holds the network side, ListOffsets look-ups apart (client/offset_lookup.py).

Consumer groups (issue 5): with `group_id`, `subscribe(topics or pattern, listener)` makes the
coordinator assign the partitions (client/group/consumer_group.py runs at the top of every poll
step: join or rejoin, listener callbacks, auto commit); `commit`, `commit_async` and
`committed` store and read the group's offsets. Without `group_id` only `assign` is allowed.
`group_instance_id` makes the member static (KIP-345): it sends no LeaveGroup on close, so a
restart within `session_timeout_ms` gets its partitions back without a rebalance, and a second
consumer with the same id fences this one (poll raises FencedInstanceIdError).
`group_protocol="consumer"` joins with KIP-848's consumer group protocol instead of the
classic one (client/group/consumer_protocol.py): the coordinator assigns and the member
reconciles incrementally; the classic-only settings are refused with it.

Transactions (KIP-98): `isolation_level="read_committed"` reads only committed transactions'
records (up to each partition's last stable offset; aborted ones are dropped, see
client/read_committed.py), and `end_offsets` / `seek_to_end` give the last stable offset;
"read_uncommitted" (the default, as Kafka's) reads everything up to the high watermark.
Transaction markers are never returned at either level.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any, TypeVar

from client._lifecycle import ClusterClient
from client.cluster import Cluster
from client.explain import leaderless_reason, waiting_reasons
from client.fetcher import FetchConfig, Fetcher
from client.group.consumer_group import ConsumerGroup, RebalanceListener
from client.group.consumer_protocol import (
    CLASSIC,
    CONSUMER,
    ConsumerProtocolGroup,
    check_group_protocol,
)
from client.group.membership import GroupSettings
from client.offset_lookup import OffsetLookup
from client.read_committed import READ_UNCOMMITTED, isolation_level_code
from client.subscription import EARLIEST, LATEST, SubscriptionState
from client.types import ConsumerRecord, TopicPartition, partition_words, partitions_words
from protocol.api.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from protocol.errors import NetworkError, OdradekError, RequestTimedOutError, UsageError
from transport.security import SecurityConfig

T = TypeVar("T")


def _or(given: T | None, default: T) -> T:
    """A classic-only setting: the default when not given (0 stays 0, and is refused)."""
    return default if given is None else given


class AsyncConsumer(ClusterClient):
    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        client_id: str | None = None,
        auto_offset_reset: str = LATEST,
        max_poll_records: int = 500,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 50 * 1024 * 1024,
        max_partition_fetch_bytes: int = 1024 * 1024,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        check_crcs: bool = True,
        group_id: str | None = None,
        assignment_strategy: str | None = None,  # classic only; "range" by default
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        session_timeout_ms: int | None = None,  # classic only; 10 s by default
        heartbeat_interval_ms: int | None = None,  # classic only; 3 s by default
        max_poll_interval_ms: int = 300_000,
        isolation_level: str = READ_UNCOMMITTED,
        group_instance_id: str | None = None,
        group_protocol: str = CLASSIC,
        group_remote_assignor: str | None = None,  # "consumer" only: uniform, range
        **security: Any,  # TLS/SASL, kafka-python's names (transport/security.py)
    ) -> None:
        classic_only = {"assignment_strategy": assignment_strategy,
                        "session_timeout_ms": session_timeout_ms,
                        "heartbeat_interval_ms": heartbeat_interval_ms}  # fmt: skip
        check_group_protocol(group_protocol, [k for k, v in classic_only.items() if v is not None])
        self.group_protocol = group_protocol
        if max_poll_records < 1:
            raise UsageError("max_poll_records must be at least 1")
        try:
            isolation = isolation_level_code(isolation_level)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.isolation_level = isolation_level
        self.max_poll_records = max_poll_records
        self.request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._cluster = Cluster(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms, security=SecurityConfig.from_options(security),
        )  # fmt: skip
        self._subs = SubscriptionState(auto_offset_reset)
        config = FetchConfig(
            fetch_min_bytes, fetch_max_bytes, fetch_max_wait_ms, max_partition_fetch_bytes,
            request_timeout_ms, retry_backoff_ms, check_crcs, isolation,
        )  # fmt: skip
        self._fetcher = Fetcher(self._cluster, self._subs, config)
        self._lookup = OffsetLookup(
            self._cluster, self._subs, isolation, request_timeout_ms, self._fetcher.refresh_metadata
        )
        self._group: ConsumerGroup | None = None
        if group_id is not None:
            settings = GroupSettings(
                group_id, _or(assignment_strategy, "range"), _or(session_timeout_ms, 10_000),
                _or(heartbeat_interval_ms, 3000), max_poll_interval_ms, request_timeout_ms,
                retry_backoff_ms, group_instance_id=group_instance_id or None,
            )  # fmt: skip
            if group_protocol == CONSUMER:
                self._group = ConsumerProtocolGroup(
                    self, self._cluster, self._subs, settings, enable_auto_commit,
                    auto_commit_interval_ms, group_remote_assignor,
                )  # fmt: skip
            else:
                self._group = ConsumerGroup(
                    self, self._cluster, self._subs, settings, enable_auto_commit,
                    auto_commit_interval_ms,
                )  # fmt: skip
        self._started = False
        self._closed = False

    # ----- life cycle -------------------------------------------------------------------------

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._group is not None:
            await self._group.close()
        await self._fetcher.close()
        await self._cluster.close()

    # ----- assignment and positions -----------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._check_open()
        if self._group is not None and self._group.subscribed:
            raise UsageError("assign() cannot be mixed with subscribe()")
        self.apply_assignment(partitions)

    def apply_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        """Own `partitions` (the group's rebalances call it; `assign` checks, then calls it)."""
        self._subs.assign(partitions)
        self._fetcher.clear(
            {tp for tp in self._fetcher.buffered() if not self._subs.is_assigned(tp)}
        )
        self._cluster.add_topics(self._subs.topics())

    def assignment(self) -> set[TopicPartition]:
        return self._subs.assignment()

    # ----- consumer groups --------------------------------------------------------------------

    def subscribe(
        self,
        topics: Iterable[str] = (),
        pattern: str | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        """Join `group_id` for `topics` and/or the topics matching the regex `pattern`."""
        self._check_open()
        if self._group is None:
            raise UsageError("subscribe() needs a group_id")
        if isinstance(topics, str):
            topics = [topics]
        topics = list(topics)
        if not topics and not pattern:
            raise UsageError("subscribe() needs topics or a pattern")
        self._group.subscribe(topics, pattern, listener)

    async def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        """Commit `offsets` (default: the positions, i.e. every record handed out so far)."""
        await self._group_or_fail().commit(offsets)

    def commit_async(
        self, offsets: dict[TopicPartition, int] | None = None, callback: Any = None
    ) -> asyncio.Task[None]:
        return self._group_or_fail().commit_async(offsets, callback)

    async def committed(self, tp: TopicPartition) -> int | None:
        """The group's committed offset for `tp` (None when nothing is committed)."""
        await self._ensure_started()
        return await self._group_or_fail().committed(tp)

    def _group_or_fail(self) -> ConsumerGroup:
        if self._group is None:
            raise UsageError("this consumer has no group_id")
        return self._group

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._subs.seek(tp, offset)
        self._fetcher.clear({tp})

    def seek_to_beginning(self, *tps: TopicPartition) -> None:
        self._reset(tps, EARLIEST)

    def seek_to_end(self, *tps: TopicPartition) -> None:
        self._reset(tps, LATEST)

    def _reset(self, tps: Iterable[TopicPartition], strategy: str) -> None:
        targets = set(tps) or self._subs.assignment()
        for tp in targets:
            self._subs.request_reset(tp, strategy)
        self._fetcher.clear(targets)

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record `poll` will return for `tp` (looked up if needed)."""
        self._subs.position(tp)  # UsageError if not assigned
        await self._ensure_started()
        deadline = asyncio.get_running_loop().time() + self.request_timeout_ms / 1000
        while (position := self._subs.position(tp)) is None:
            if asyncio.get_running_loop().time() > deadline:
                why = self.waiting().get(tp)
                raise RequestTimedOutError(
                    f"no position for {partition_words(tp)} within the request timeout"
                    + (f": {why}" if why else "")
                )
            await self._update_metadata_if_needed()
            await self._lookup.reset_positions()
            if self._subs.position(tp) is None:
                await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)
        return position

    def waiting(self) -> dict[TopicPartition, str]:
        """Why an assigned partition gives no records: for each one (not paused) without a live
        leader in the metadata, why it has none ("partition t-1 has no leader: its replica 2 is
        down"). `poll` goes on meanwhile with the others, and reads it once it has a leader."""
        paused = self._subs.paused()
        assigned = sorted(tp for tp in self._subs.assignment() if tp not in paused)
        return waiting_reasons(self._cluster.metadata, assigned, {})

    def pause(self, *tps: TopicPartition) -> None:
        self._subs.pause(tps)

    def resume(self, *tps: TopicPartition) -> None:
        self._subs.resume(tps)

    def paused(self) -> set[TopicPartition]:
        return self._subs.paused()

    def highwater(self, tp: TopicPartition) -> int:
        """The last high watermark a fetch reported for `tp` (-1 before any)."""
        return self._subs.high_watermark(tp)

    async def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return await self._offsets(tps, EARLIEST_TIMESTAMP)

    async def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return await self._offsets(tps, LATEST_TIMESTAMP)

    async def _offsets(self, tps: Iterable[TopicPartition], ts: int) -> dict[TopicPartition, int]:
        """Every partition's offset from its leader; a partition whose leader answered an error
        (moved, or OFFSET_NOT_AVAILABLE right after an election: KIP-207) is asked again after
        retry_backoff_ms, until request_timeout_ms."""
        await self._ensure_started()
        wanted = list(tps)
        self._cluster.add_topics(tp.topic for tp in wanted)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_timeout_ms / 1000
        out: dict[TopicPartition, int] = {}
        while True:
            meta = await self._cluster.request_update()
            by_node: dict[int, dict[TopicPartition, int]] = {}
            for tp in wanted:
                leader = meta.leader_for(tp.topic, tp.partition)
                if leader < 0:
                    why = leaderless_reason(meta, tp.topic, tp.partition)
                    raise NetworkError(why or f"{partition_words(tp)} has no leader")
                if tp not in out:
                    by_node.setdefault(leader, {})[tp] = ts
            for node, query in by_node.items():
                out.update(await self._lookup.list_offsets(node, query))
            missing = [tp for tp in wanted if tp not in out]
            if not missing:
                return out
            if loop.time() >= deadline:
                raise RequestTimedOutError(f"no offset listed for {partitions_words(missing)}")
            await asyncio.sleep(self._retry_backoff_ms / 1000)

    # ----- polling ----------------------------------------------------------------------------

    async def poll(
        self, timeout_ms: float = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records for the assigned partitions, at most `max_records` (max_poll_records)."""
        self._check_open()
        limit = max_records if max_records is not None else self.max_poll_records
        if limit < 1:
            raise UsageError("max_records must be at least 1")
        await self._ensure_started()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        while True:
            if self._group is not None:
                await self._group.ensure_active()
            self._fetcher.raise_errors()
            if self._metadata_needed():
                await self._update_metadata()
            if self._subs.needs_position():
                await self._lookup.reset_positions()
            records = self._fetcher.drain(limit)
            # with records to return, only fetches that read more now; long polls wait
            self._fetcher.send_fetches(ahead_only=bool(records))
            if records:
                return records
            remaining = deadline - loop.time()
            if remaining <= 0:
                return {}
            await self._fetcher.wait(remaining)

    getmany = poll

    async def __anext__(self) -> ConsumerRecord:
        while True:
            batch = await self.poll(timeout_ms=self.request_timeout_ms, max_records=1)
            for records in batch.values():
                return records[0]

    def __aiter__(self) -> AsyncConsumer:
        return self

    # ----- internals --------------------------------------------------------------------------

    async def _ensure_started(self) -> None:
        if not self._started:
            await self.start()

    async def _update_metadata_if_needed(self) -> None:
        if self._metadata_needed():
            await self._update_metadata()

    def _metadata_needed(self) -> bool:
        known = self._cluster.metadata.partitions
        stale = self._cluster.metadata_is_stale()
        return stale or any(t not in known for t in self._subs.topics())

    async def _update_metadata(self) -> None:
        with contextlib.suppress(OdradekError):  # none reachable now: fetches retry later
            await self._cluster.request_update()

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("the consumer is closed")
