"""The group coordinator running inside a broker: ownership, loading, appending, timers.

A group's coordinator is the leader of partition `partition_for(group, N)` of
`__consumer_offsets` (records.py). The topic is created on the first FindCoordinator, with N
partitions and a replication factor of min(configured, live brokers), compacted
(coordinator/internal_topics.py), through the same TopicStore CreateTopics uses.

Ownership follows leadership (seed 000's coordinator failover): `on_leadership_change` (called
after LeaderAndIsr and StopReplica, and on every tick as a safety net) compares the offsets
partitions this broker leads with those it coordinates, and every group request first checks
that its partition is still led in the epoch it was loaded in (a zombie fenced from ZooKeeper
must not answer OffsetFetch from its cache). A newly led partition is Catch up: its
log is replayed (group.replay) from the log start to the log end, while requests for its groups
get COORDINATOR_LOAD_IN_PROGRESS; then Ready. A partition no longer led goes Down: its groups are
dropped and waiting joins get NOT_COORDINATOR.

Every operation calls a pure function of group.py, appends the records it returns to the
offsets partition as leader with acks=all semantics (answering only once the high watermark
passes them), then answers; a failed append answers NOT_COORDINATOR (or the retriable error),
so a client never sees a commit succeed that a new coordinator could not load. A JoinGroup
waits on a future completed when its rebalance's group record is replicated.

A background task ticks every `tick_interval_ms`: leadership check, session expiry, rebalance
timeouts, partition-count changes and new topics matching patterns (group.tick).

The partitions are reached only through `GroupLog` (group_log.py; the broker's ReplicaManager):
which offsets partitions this broker leads, their records, and replicated appends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coordinator.group import group as ops
from coordinator.group.group import ClassicJoinAnswer, Group, GroupLimits, Result, SyncAnswer
from coordinator.group.group_log import GroupLog
from coordinator.group.records import (
    MAX_RECORDS_PER_BATCH,
    OFFSETS_TOPIC,
    CoordinatorRecord,
    OffsetKey,
    build,
    decode,
    partition_for,
)
from coordinator.group.states import State, kafka_name
from coordinator.internal_topics import OFFSETS_SEGMENT_BYTES, OFFSETS_TOPIC_CONFIGS
from protocol.api.group import (
    DeletedGroup,
    DescribeGroupsResponse,
    FetchedOffset,
    FetchedTopic,
    FindCoordinatorResponse,
    GroupDescription,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    ListedGroup,
    MemberDescription,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
    TopicResult,
)
from protocol.batch import decode_all
from protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    InvalidGroupIdError,
    NotCoordinatorError,
    NotLeaderForPartitionError,
    OdradekError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from protocol.kafka.consumer_protocol import assigned_partitions

if TYPE_CHECKING:
    from broker.context import TopicStore
    from broker.metadata_cache import MetadataCache
    from protocol.clock import Clock

log = logging.getLogger("odradek.coordinator.group")
NONE = 0
READ_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class GroupConfig:
    offsets_partitions: int = 10
    offsets_replication_factor: int = 3  # capped at the live brokers
    tick_interval_ms: int = 100
    append_timeout_ms: int = 5000
    topic_create_wait_ms: int = 5000
    limits: GroupLimits = field(default_factory=GroupLimits)
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # Kafka's offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000
    offsets_segment_bytes: int = OFFSETS_SEGMENT_BYTES  # the topic's segment.bytes at creation


@dataclass(slots=True)
class OwnedPartition:
    """One offsets partition this broker leads: Catch up while loading, then Ready."""

    index: int
    leader_epoch: int
    state: State = State.CATCH_UP
    groups: dict[str, Group] = field(default_factory=dict)
    load_task: asyncio.Task[None] | None = None


class GroupCoordinator:
    def __init__(
        self,
        broker_id: int,
        offsets_log: GroupLog,
        metadata: MetadataCache,
        topics: TopicStore,
        clock: Clock,
        config: GroupConfig = GroupConfig(),
        new_member_id: Callable[[str], str] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.offsets_log = offsets_log
        self.metadata = metadata
        self.topics = topics
        self.clock = clock
        self.config = config
        self.owned: dict[int, OwnedPartition] = {}
        self._pending: dict[tuple[str, str], asyncio.Future[Any]] = {}  # JoinGroups waiting
        self._syncs: dict[tuple[str, str], asyncio.Future[SyncAnswer]] = {}  # SyncGroups waiting
        self._new_member_id = new_member_id or (
            lambda client: f"{client or 'consumer'}-{uuid.uuid4()}"
        )
        self._creating: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._last_expiry_ms = self.clock.monotonic_ms()  # offsets.retention.check.interval.ms
        self._empty_since: dict[str, int] = {}  # group -> when a sweep first found it empty

    # ----- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._ticker = asyncio.ensure_future(self._run())

    async def shutdown(self) -> None:
        tasks = [t for t in (self._ticker, self._creating, *self._tasks) if t is not None]
        tasks += [o.load_task for o in self.owned.values() if o.load_task is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for index in list(self.owned):
            self._resign(index)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.config.tick_interval_ms / 1000)
            try:
                self.tick()
            except Exception:  # a bug must not stop the timers of every group
                log.exception("group coordinator tick failed")

    def tick(self) -> None:
        self.on_leadership_change()
        now = self.clock.monotonic_ms()
        counts = self._partition_counts()
        expire = now - self._last_expiry_ms >= self.config.offsets_retention_check_interval_ms
        if expire:
            self._last_expiry_ms = now
        wall = self.clock.time_ms()
        for owned in list(self.owned.values()):
            if owned.state is not State.READY:
                continue
            for group in list(owned.groups.values()):
                result = ops.tick(group, now, counts)
                self._after(group)
                if result.records or result.joins or result.syncs:
                    self._spawn(self._finish(owned, group.group_id, result))
                elif expire:
                    self._expire(owned, group, wall)

    def _expire(self, owned: OwnedPartition, group: Group, wall_ms: int) -> None:
        """KIP-211: tombstones for an empty group's offsets past offsets.retention.minutes
        (and for the group itself once nothing is left), so compaction forgets it."""
        if group.members:
            self._empty_since.pop(group.group_id, None)
            return
        since = self._empty_since.setdefault(group.group_id, wall_ms)
        result = ops.expire_offsets(group, wall_ms, self.config.offsets_retention_ms, since)
        if result.records:
            self._spawn(self._finish_expiry(owned, result))

    async def _finish_expiry(self, owned: OwnedPartition, result: Result) -> None:
        if await self._append(owned, result.records) == NONE:
            for record in result.records:
                ops.replay(owned.groups, record, self.clock.monotonic_ms())

    def _spawn(self, coro: Coroutine[Any, Any, object]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----- ownership (seed 000: Down -> Catch up -> Ready) ------------------------------------

    def on_leadership_change(self) -> None:
        led = self.offsets_log.led_partitions(OFFSETS_TOPIC)
        for index in list(self.owned):
            if led.get(index) != self.owned[index].leader_epoch:
                self._resign(index)
        for index, epoch in led.items():
            if index not in self.owned:
                owned = self.owned[index] = OwnedPartition(index, epoch)
                owned.load_task = asyncio.ensure_future(self._load(owned))

    def _resign(self, index: int) -> None:
        owned = self.owned.pop(index)
        if owned.load_task is not None and not owned.load_task.done():
            owned.load_task.cancel()
        for gid in owned.groups:
            for key in [k for k in self._pending if k[0] == gid]:
                fut = self._pending.pop(key)
                if not fut.done():
                    fut.set_result(JoinGroupResponse(NotCoordinatorError.code, -1, key[1], []))
            self._drop_syncs(gid, NotCoordinatorError.code)
        log.info("no longer coordinator for %s-%d (%d groups)", OFFSETS_TOPIC, index,
                 len(owned.groups))  # fmt: skip

    async def _load(self, owned: OwnedPartition) -> None:
        """Catch up: replay the partition; a failure gives the partition up (the next tick
        takes it again and retries), so it never stays stuck in Catch up."""
        try:
            count = await self._replay(owned)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("loading %s-%d failed; will retry", OFFSETS_TOPIC, owned.index)
            if self.owned.get(owned.index) is owned:
                self._resign(owned.index)
            return
        owned.state = State.READY
        log.info("coordinator for %s-%d: loaded %d records, %d groups", OFFSETS_TOPIC,
                 owned.index, count, len(owned.groups))  # fmt: skip

    async def _replay(self, owned: OwnedPartition) -> int:
        bounds = self.offsets_log.log_range(OFFSETS_TOPIC, owned.index)
        if bounds is None:
            return 0
        (offset, end), count = bounds, 0
        while offset < end:
            read = self.offsets_log.read_records(
                OFFSETS_TOPIC, owned.index, offset, READ_BYTES, end
            )
            if read is None:
                break
            data, next_offset = read
            now = self.clock.monotonic_ms()
            for rec in decode_all(data):
                if rec.offset < offset:
                    continue
                try:
                    ops.replay(owned.groups, decode(rec.key, rec.value), now)
                    count += 1
                except (OdradekError, KeyError, TypeError, ValueError) as exc:
                    log.warning("%s-%d offset %d: record skipped: %s", OFFSETS_TOPIC,
                                owned.index, rec.offset, exc)  # fmt: skip
            offset = next_offset
            await asyncio.sleep(0)
        return count

    def _locate(self, group_id: str) -> tuple[OwnedPartition | None, int]:
        if not group_id:
            return None, InvalidGroupIdError.code
        parts = self.metadata.topics.get(OFFSETS_TOPIC)
        n = len(parts) if parts else self.config.offsets_partitions
        owned = self.owned.get(partition_for(group_id, n))
        if owned is None:
            return None, NotCoordinatorError.code
        if not self.offsets_log.leads(OFFSETS_TOPIC, owned.index, owned.leader_epoch):
            self._resign(owned.index)  # the leadership ended since the last check
            return None, NotCoordinatorError.code
        if owned.state is not State.READY:
            return None, CoordinatorLoadInProgressError.code
        return owned, NONE

    def _partition_counts(self) -> dict[str, int]:
        return {t: len(ps) for t, ps in self.metadata.topics.items() if not t.startswith("__")}

    # ----- appending --------------------------------------------------------------------------

    async def _append(self, owned: OwnedPartition, records: list[CoordinatorRecord]) -> int:
        """Append as leader and wait for the HW to pass the records; an error code."""
        for i in range(0, len(records), MAX_RECORDS_PER_BATCH):
            code = await self._append_batch(owned, records[i : i + MAX_RECORDS_PER_BATCH])
            if code != NONE:
                return code
        return NONE

    async def _append_batch(self, owned: OwnedPartition, records: list[CoordinatorRecord]) -> int:
        if self.owned.get(owned.index) is not owned:
            return NotCoordinatorError.code
        batch = build(records, self.clock.time_ms())
        code = await self.offsets_log.append_replicated(
            OFFSETS_TOPIC, owned.index, batch, self.config.append_timeout_ms
        )
        if code in (NotLeaderForPartitionError.code, UnknownTopicOrPartitionError.code):
            return NotCoordinatorError.code
        return code

    async def _finish(self, owned: OwnedPartition, group_id: str, result: Result) -> int:
        """Append the records, then complete the joins the operation finished."""
        code = await self._append(owned, result.records) if result.records else NONE
        for member_id, response in result.joins.items():
            fut = self._pending.pop((group_id, member_id), None)
            if fut is not None and not fut.done():
                fut.set_result(response if code == NONE else
                               JoinGroupResponse(code, -1, member_id, []))  # fmt: skip
        for member_id, answer in result.syncs.items():
            sync = self._syncs.pop((group_id, member_id), None)
            if sync is not None and not sync.done():
                sync.set_result(answer if code == NONE else SyncAnswer(code))
        return code

    def _after(self, group: Group) -> None:
        """A group that went back to rebalancing (or emptied) fails its waiting SyncGroups."""
        if group.state in (State.PREPARE_FOR_REBALANCE, State.EMPTY):
            self._drop_syncs(group.group_id, ops.RebalanceInProgressError.code)

    def _drop_syncs(self, group_id: str, code: int) -> None:
        for key in [k for k in self._syncs if k[0] == group_id]:
            fut = self._syncs.pop(key)
            if not fut.done():
                fut.set_result(SyncAnswer(code))

    # ----- requests ---------------------------------------------------------------------------

    async def find_coordinator(self, group_id: str) -> FindCoordinatorResponse:
        if not group_id:
            return FindCoordinatorResponse(InvalidGroupIdError.code, "empty group id", -1, "", 0)
        if not self.metadata.all_partitions_led(OFFSETS_TOPIC):
            await self._ensure_offsets_topic()
        parts = self.metadata.topics.get(OFFSETS_TOPIC)
        if not parts:
            return FindCoordinatorResponse(
                CoordinatorNotAvailableError.code, f"{OFFSETS_TOPIC} is being created", -1, "", 0
            )
        state = parts.get(partition_for(group_id, len(parts)))
        broker = self.metadata.brokers.get(state.leader) if state is not None else None
        if broker is None:
            return FindCoordinatorResponse(
                CoordinatorNotAvailableError.code, "the group's offsets partition has no leader",
                -1, "", 0,
            )  # fmt: skip
        return FindCoordinatorResponse(NONE, None, broker.node_id, broker.host, broker.port)

    async def _ensure_offsets_topic(self) -> None:
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create_offsets_topic())
        with contextlib.suppress(Exception):
            await asyncio.shield(self._creating)

    def _offsets_configs(self) -> dict[str, str]:
        return {**OFFSETS_TOPIC_CONFIGS, "segment.bytes": str(self.config.offsets_segment_bytes)}

    async def _create_offsets_topic(self) -> None:
        if not self.metadata.has_topic(OFFSETS_TOPIC):
            live = self.metadata.live_broker_ids()
            rf = max(1, min(self.config.offsets_replication_factor, len(live)))
            try:
                await self.topics.create_topic(
                    OFFSETS_TOPIC, self.config.offsets_partitions, rf, self._offsets_configs(), live
                )
                log.info("created %s: %d partitions, replication factor %d", OFFSETS_TOPIC,
                         self.config.offsets_partitions, rf)  # fmt: skip
            except TopicAlreadyExistsError:
                pass
        await self.metadata.wait_until(
            lambda: self.metadata.all_partitions_led(OFFSETS_TOPIC),
            self.config.topic_create_wait_ms,
        )

    async def join(self, req: JoinGroupRequest) -> JoinGroupResponse:
        owned, code = self._locate(req.group_id)
        if owned is None:
            return JoinGroupResponse(code, -1, req.member_id, [])
        group = owned.groups.setdefault(req.group_id, Group(req.group_id))
        if req.member_id and req.member_id not in group.members:
            return JoinGroupResponse(ops.UnknownMemberIdError.code, -1, req.member_id, [])
        member_id = req.member_id or self._new_member_id(req.client_id)
        key = (req.group_id, member_id)
        old = self._pending.pop(key, None)
        if old is not None and not old.done():
            old.set_result(JoinGroupResponse(ops.RebalanceInProgressError.code, -1, member_id, []))
        fut: asyncio.Future[JoinGroupResponse] = asyncio.get_running_loop().create_future()
        self._pending[key] = fut
        result = ops.join(
            group, member_id, req.client_id, req.session_timeout_ms, req.rebalance_timeout_ms,
            req.topics, req.topic_pattern, req.assignment_strategy, self.clock.monotonic_ms(),
            self._partition_counts(), self.config.limits,
        )  # fmt: skip
        if result.response is not None:
            self._pending.pop(key, None)
            response: JoinGroupResponse = result.response
            return response
        await self._finish(owned, req.group_id, result)
        try:
            async with asyncio.timeout((req.rebalance_timeout_ms + req.session_timeout_ms) / 1000):
                return await asyncio.shield(fut)
        except TimeoutError:
            self._pending.pop(key, None)
            return JoinGroupResponse(ops.RebalanceInProgressError.code, -1, member_id, [])

    def heartbeat(self, req: HeartbeatRequest) -> int:
        owned, code = self._locate(req.group_id)
        if owned is None:
            return code
        group = owned.groups.get(req.group_id)
        if group is None:
            return ops.UnknownMemberIdError.code
        code = ops.heartbeat(
            group, req.generation_id, req.member_id, self.clock.monotonic_ms()
        ).response
        return int(code)

    async def leave(self, group_id: str, member_id: str) -> int:
        owned, code = self._locate(group_id)
        if owned is None:
            return code
        group = owned.groups.get(group_id)
        if group is None:
            return ops.UnknownMemberIdError.code
        result = ops.leave(group, member_id, self.clock.monotonic_ms(), self._partition_counts())
        if result.response != NONE:
            return int(result.response)
        self._after(group)
        await self._finish(owned, group_id, result)
        return NONE

    async def commit(self, req: OffsetCommitRequest) -> OffsetCommitResponse:
        owned, code = self._locate(req.group_id)
        offsets = [
            (t.name, p.partition, p.offset, p.metadata) for t in req.topics for p in t.partitions
        ]
        if owned is not None:
            group = owned.groups.setdefault(req.group_id, Group(req.group_id))
            result = ops.commit(group, req.generation_id, req.member_id, offsets,
                                self.clock.monotonic_ms(), self.clock.time_ms())  # fmt: skip
            code = int(result.response)
            if code == NONE and result.records:
                code = await self._append(owned, result.records)
                if code == NONE and self.owned.get(owned.index) is owned:
                    for record in result.records:
                        ops.replay(owned.groups, record, self.clock.monotonic_ms())
        return OffsetCommitResponse([
            TopicResult(t.name, [PartitionResult(p.partition, code) for p in t.partitions])
            for t in req.topics
        ])  # fmt: skip

    def fetch_offsets(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        owned, code = self._locate(req.group_id)
        if owned is None:
            return OffsetFetchResponse(code, [])
        group = owned.groups.get(req.group_id)
        committed = group.offsets if group is not None else {}
        wanted: dict[str, list[int]] = {}
        if req.topics is None:
            for t, p in sorted(committed):
                wanted.setdefault(t, []).append(p)
        else:
            wanted = {t.topic: list(t.partitions) for t in req.topics}
        topics = []
        for topic, partitions in wanted.items():
            found = []
            for p in partitions:
                entry = committed.get((topic, p))
                found.append(FetchedOffset(p, entry.offset if entry else -1,
                                           entry.metadata if entry else None, NONE))  # fmt: skip
            topics.append(FetchedTopic(topic, found))
        return OffsetFetchResponse(NONE, topics)

    def describe(self, group_ids: list[str]) -> DescribeGroupsResponse:
        """Kafka groups too: their kind, Kafka's state name, each member's host and the
        partitions decoded from the assignment its leader handed out in SyncGroup."""
        out = []
        for gid in group_ids:
            owned, code = self._locate(gid)
            group = owned.groups.get(gid) if owned is not None else None
            if owned is not None and group is None:
                code = GroupIdNotFoundError.code
            if group is None:
                out.append(GroupDescription(code, gid, State.DEAD.value, -1, "", [], None,
                                            kafka_name(State.DEAD)))  # fmt: skip
                continue
            members = [
                MemberDescription(m.member_id, m.client_id, ops.to_wire(
                    assigned_partitions(m.assignment_bytes) if group.is_kafka else m.assignment
                ), m.client_host)
                for m in sorted(group.members.values(), key=lambda m: m.member_id)
            ]  # fmt: skip
            out.append(GroupDescription(NONE, gid, group.state.value, group.generation,
                                        group.strategy or "", members, group.protocol_type,
                                        kafka_name(group.state)))  # fmt: skip
        return DescribeGroupsResponse(out)

    def list_groups(self, states: list[str] | None) -> list[ListedGroup]:
        """`states`: names either way (native, e.g. Ready, or Kafka's, e.g. Stable)."""
        out = []
        for owned in self.owned.values():
            if owned.state is State.READY:
                for g in owned.groups.values():
                    names = {g.state.value, kafka_name(g.state)}
                    if states is None or names & set(states):
                        out.append(ListedGroup(g.group_id, g.state.value, g.protocol_type,
                                               kafka_name(g.state)))  # fmt: skip
        return sorted(out, key=lambda g: g.group_id)

    async def delete(self, group_ids: list[str]) -> list[DeletedGroup]:
        out = []
        for gid in group_ids:
            owned, code = self._locate(gid)
            group = owned.groups.get(gid) if owned is not None else None
            if owned is not None and group is None:
                code = GroupIdNotFoundError.code
            if owned is not None and group is not None:
                result = ops.delete(group)
                code = int(result.response)
                if code == NONE:
                    code = await self._append(owned, result.records)
                    if code == NONE:
                        for record in result.records:
                            ops.replay(owned.groups, record, self.clock.monotonic_ms())
            out.append(DeletedGroup(gid, code))
        return out

    # ----- Kafka groups (the classic protocol) -----------------------------------------------

    async def join_classic(
        self,
        group_id: str,
        member_id: str,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
    ) -> ClassicJoinAnswer:
        """A Kafka JoinGroup: answered when the rebalance it takes part in completes."""
        owned, code = self._locate(group_id)
        if owned is None:
            return ClassicJoinAnswer(code, -1, None, None, "", member_id)
        group = owned.groups.setdefault(group_id, Group(group_id))
        fresh = None if member_id else self._new_member_id(client_id)
        if fresh is not None and not require_known_member_id:
            group.pending_members[fresh] = self.clock.monotonic_ms() + session_timeout_ms
            member_id, fresh = fresh, None
        key = (group_id, member_id)
        old = self._pending.pop(key, None) if member_id else None
        if old is not None and not old.done():
            old.set_result(ClassicJoinAnswer(ops.RebalanceInProgressError.code, -1, None, None,
                                             "", member_id))  # fmt: skip
        result = ops.join_classic(
            group, member_id, client_id, client_host, session_timeout_ms, rebalance_timeout_ms,
            protocol_type, protocols, self.clock.monotonic_ms(), fresh, self.config.limits,
        )  # fmt: skip
        self._after(group)
        if result.response is not None:
            answer: ClassicJoinAnswer = result.response
            return answer
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[key] = fut
        await self._finish(owned, group_id, result)
        try:
            async with asyncio.timeout((rebalance_timeout_ms + session_timeout_ms) / 1000):
                got = await asyncio.shield(fut)
        except TimeoutError:
            self._pending.pop(key, None)
            got = None
        if isinstance(got, ClassicJoinAnswer):
            return got
        code = ops.RebalanceInProgressError.code if got is None else got.error_code
        return ClassicJoinAnswer(code, -1, None, None, "", member_id)

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        assignments: dict[str, bytes],
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncAnswer:
        """A Kafka SyncGroup: the leader's brings the assignment; the others wait for it."""
        owned, code = self._locate(group_id)
        if owned is None:
            return SyncAnswer(code)
        group = owned.groups.get(group_id)
        if group is None:
            return SyncAnswer(ops.UnknownMemberIdError.code)
        result = ops.sync(group, generation, member_id, assignments, protocol_type, protocol_name)
        if result.response is None:
            key = (group_id, member_id)
            old = self._syncs.pop(key, None)
            if old is not None and not old.done():
                old.set_result(SyncAnswer(ops.RebalanceInProgressError.code))
            fut: asyncio.Future[SyncAnswer] = asyncio.get_running_loop().create_future()
            self._syncs[key] = fut
            timeout_ms = max(group.rebalance_deadline_ms - self.clock.monotonic_ms(), 0) + 1000
            try:
                async with asyncio.timeout(timeout_ms / 1000):
                    return await asyncio.shield(fut)
            except TimeoutError:
                self._syncs.pop(key, None)
                return SyncAnswer(ops.RebalanceInProgressError.code)
        answer: SyncAnswer = result.response
        if result.records or result.syncs:
            code = await self._finish(owned, group_id, result)
            if code != NONE:
                return SyncAnswer(code)
        return answer

    def group_view(self, group_id: str) -> tuple[int, Group | None]:
        """(error code, the group) for describing it; (NONE, None): no such group here."""
        owned, code = self._locate(group_id)
        if owned is None:
            return code, None
        return NONE, owned.groups.get(group_id)

    def all_groups(self) -> list[Group]:
        """Every group of every offsets partition this broker coordinates and has loaded."""
        return [
            g
            for owned in self.owned.values()
            if owned.state is State.READY
            for g in owned.groups.values()
        ]

    async def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]], subscribed: set[str]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete: tombstones for the partitions of topics the group is not subscribed to
        (`subscribed`: the members' topics, worked out by the caller from their metadata)."""
        owned, code = self._locate(group_id)
        group = owned.groups.get(group_id) if owned is not None else None
        if owned is None or group is None:
            return (code if owned is None else GroupIdNotFoundError.code), {}
        codes = {tp: NONE for tp in partitions}
        records = []
        for tp in partitions:
            if tp[0] in subscribed:
                codes[tp] = GroupSubscribedToTopicError.code
            elif tp in group.offsets:
                records.append(CoordinatorRecord(OffsetKey(group_id, tp[0], tp[1]), None))
        if records:
            code = await self._append(owned, records)
            if code != NONE:
                return code, {}
            for record in records:
                ops.replay(owned.groups, record, self.clock.monotonic_ms())
        return NONE, codes


def error_code(exc: BaseException) -> int:
    return exc.code if isinstance(exc, OdradekError) else -1
