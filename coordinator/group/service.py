"""The group coordinator running inside a broker, on the coordinator runtime.

A group's coordinator is the leader of partition `partition_for(group, N)` of
`__consumer_offsets` (records.py). The topic is created on the first FindCoordinator, with N
partitions and a replication factor of min(configured, live brokers), compacted
(coordinator/internal_topics.py). Ownership, loading by replay and appending are the runtime's
(coordinator/runtime/runtime.py): a partition being loaded answers COORDINATOR_LOAD_IN_PROGRESS,
one no longer led NOT_COORDINATOR (its waiting joins and syncs are failed with it).

Every operation calls a pure function of group.py, appends the records it returns to the
offsets partition as leader with acks=all semantics (answering only once the high watermark
passes them), then answers; a failed append answers NOT_COORDINATOR (or the retriable error),
so a client never sees a commit succeed that a new coordinator could not load. A JoinGroup
waits on a future completed when its rebalance's group record is replicated.

A background task ticks every `tick_interval_ms`: leadership check, session expiry, rebalance
timeouts, partition-count changes and new topics matching patterns (group.tick).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coordinator.group import classic, consumer_service, membership, share_replay
from coordinator.group import group as group_ops
from coordinator.group import offsets as offset_ops
from coordinator.group.classic_in_consumer import ClassicJoin
from coordinator.group.consumer_group import ConsumerConfig
from coordinator.group.consumer_service import ConsumerGroups
from coordinator.group.group import ClassicJoinAnswer, Group, GroupLimits, Result, SyncAnswer
from coordinator.group.group_configs import ConsumerBounds, GroupConfigs
from coordinator.group.offset_service import GroupOffsets
from coordinator.group.records import (
    MAX_RECORDS_PER_BATCH,
    OFFSETS_TOPIC,
    ConsumerKey,
    CoordinatorRecord,
    build,
    decode,
    partition_for,
)
from coordinator.group.shard import GroupShard
from coordinator.group.share_group import ShareConfig
from coordinator.group.share_records import ShareGroupKey
from coordinator.group.share_service import ShareGroups
from coordinator.group.states import State, kafka_name
from coordinator.internal_topics import OFFSETS_SEGMENT_BYTES, OFFSETS_TOPIC_CONFIGS
from coordinator.runtime.log import ClusterView, CoordinatorLog, TopicCreator
from coordinator.runtime.runtime import CoordinatorRuntime, Owned, RecordCodec, Spawner, TopicSpec
from protocol.api.group import (
    DeletedGroup,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    GroupDescription,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    ListedGroup,
    MemberDescription,
)
from protocol.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupIdNotFoundError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    NonEmptyGroupError,
    NotCoordinatorError,
    OdradekError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from protocol.kafka.consumer_protocol import assigned_partitions

if TYPE_CHECKING:
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
    consumer: ConsumerConfig = field(default_factory=ConsumerConfig)  # KIP-848 group.consumer.*
    share: ShareConfig = field(default_factory=ShareConfig)  # KIP-932 group.share.*


Groups = GroupShard  # one offsets partition's shard: its groups by id (shard.py)
GroupOwned = Owned[Groups]


def _replay(groups: Groups, record: CoordinatorRecord, now_ms: int) -> None:
    if isinstance(record.key, ConsumerKey):  # KIP-848 records: Kafka's types 3-8
        consumer_service.replay(groups, record, now_ms)
    elif isinstance(record.key, ShareGroupKey):  # KIP-932 records: Kafka's types 9-15
        share_replay.replay(groups.share, record.key, record.value)
    else:
        group_ops.replay(groups, record, now_ms)


CODEC = RecordCodec(
    decode, build, _replay, MAX_RECORDS_PER_BATCH, offset_ops.replay_txn, offset_ops.complete_txn
)


class GroupCoordinator:
    def __init__(
        self,
        broker_id: int,
        offsets_log: CoordinatorLog,
        metadata: ClusterView,
        topics: TopicCreator,
        clock: Clock,
        config: GroupConfig = GroupConfig(),
        new_member_id: Callable[[str], str] | None = None,
        configs: GroupConfigs | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.metadata = metadata
        self.clock = clock
        self.config = config
        spec = TopicSpec(
            OFFSETS_TOPIC, config.offsets_partitions, config.offsets_replication_factor,
            {**OFFSETS_TOPIC_CONFIGS, "segment.bytes": str(config.offsets_segment_bytes)},
            config.topic_create_wait_ms,
        )  # fmt: skip
        self.runtime: CoordinatorRuntime[Groups, CoordinatorRecord] = CoordinatorRuntime(
            spec, offsets_log, metadata, topics, clock, CODEC, lambda _: GroupShard(),
            config.append_timeout_ms, self._on_resign,
        )  # fmt: skip
        self._pending: dict[tuple[str, str], asyncio.Future[Any]] = {}  # JoinGroups waiting
        self._syncs: dict[tuple[str, str], asyncio.Future[SyncAnswer]] = {}  # SyncGroups waiting
        self._new_member_id = new_member_id or (
            lambda client: f"{client or 'consumer'}-{uuid.uuid4()}"
        )
        self._ticker: asyncio.Task[None] | None = None
        self.tasks = Spawner()
        self._last_expiry_ms = self.clock.monotonic_ms()  # offsets.retention.check.interval.ms
        self._empty_since: dict[str, int] = {}  # group -> when a sweep first found it empty
        # KIP-848 group configs (group_configs.py) over the broker's group.consumer.* settings
        share = config.share
        self.configs = configs or GroupConfigs(config.consumer, ConsumerBounds(), share=share)
        self.consumer = ConsumerGroups(self, self.configs, config.limits)  # KIP-848
        self.share = ShareGroups(self, metadata, self.configs.share_config)  # KIP-932
        self.offsets = GroupOffsets(self)  # commits, fetches, deletes (offset_service.py)

    @property
    def owned(self) -> dict[int, GroupOwned]:
        return self.runtime.owned

    async def append_or_reload(self, owned: GroupOwned, records: list[CoordinatorRecord]) -> int:
        return await self.consumer.append_or_reload(owned, records)

    def spawn(self, coro: Coroutine[Any, Any, object]) -> None:
        self.tasks.spawn(coro)

    def ready_shards(self) -> list[GroupOwned]:
        return list(self.runtime.ready())

    # ----- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._ticker = asyncio.ensure_future(self._run())

    async def shutdown(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        await self.tasks.cancel_all()
        await self.runtime.shutdown()

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
        self.share.tick(now)
        for owned in self.runtime.ready():
            for group in list(owned.shard.values()):
                self.consumer.tick(owned, group, now)
                result = membership.tick(group, now, counts)
                self._after(group)
                if result.records or result.joins or result.syncs:
                    self.tasks.spawn(self._finish(owned, group.group_id, result))
                elif expire:
                    self._expire(owned, group, wall)

    def _expire(self, owned: GroupOwned, group: Group, wall_ms: int) -> None:
        """KIP-211: tombstones for an empty group's offsets past offsets.retention.minutes
        (and for the group itself once nothing is left), so compaction forgets it."""
        if group.members or consumer_service.has_members(group):
            self._empty_since.pop(group.group_id, None)
            return
        since = self._empty_since.setdefault(group.group_id, wall_ms)
        result = offset_ops.expire_offsets(group, wall_ms, self.config.offsets_retention_ms, since)
        if result.records:
            records = consumer_service.with_group_deleted(group, result.records)  # KIP-848
            self.tasks.spawn(self.runtime.write(owned, records))

    # ----- ownership (the runtime's Down -> Catch up -> Ready) -------------------------------

    def on_leadership_change(self) -> None:
        self.runtime.on_leadership_change()

    def _on_resign(self, owned: GroupOwned) -> None:
        """A partition went Down: its waiting joins and syncs get NOT_COORDINATOR."""
        for gid in owned.shard:
            for key in [k for k in self._pending if k[0] == gid]:
                fut = self._pending.pop(key)
                if not fut.done():
                    fut.set_result(JoinGroupResponse(NotCoordinatorError.code, -1, key[1], []))
            self._drop_syncs(gid, NotCoordinatorError.code)

    def new_member_id(self, client_id: str) -> str:
        return self._new_member_id(client_id)

    def fail_waiting(self, group_id: str, code: int) -> None:
        """The group's waiting JoinGroups and SyncGroups answered `code` (an online upgrade)."""
        for key in [k for k in self._pending if k[0] == group_id]:
            fut = self._pending.pop(key)
            if not fut.done():
                fut.set_result(ClassicJoinAnswer(code, -1, None, None, "", key[1]))
        self._drop_syncs(group_id, code)

    def locate(self, group_id: str) -> tuple[GroupOwned | None, int]:
        if not group_id:
            return None, InvalidGroupIdError.code
        return self.runtime.locate(partition_for(group_id, self.runtime.partition_count()))

    def _partition_counts(self) -> dict[str, int]:
        return {t: len(ps) for t, ps in self.metadata.topics.items() if not t.startswith("__")}

    # ----- appending --------------------------------------------------------------------------

    async def _finish(self, owned: GroupOwned, group_id: str, result: Result) -> int:
        """Append the records, then complete the joins the operation finished."""
        code = await self.runtime.append(owned, result.records) if result.records else NONE
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
            self._drop_syncs(group.group_id, RebalanceInProgressError.code)

    def _fence(self, group_id: str, result: Result) -> None:
        """A static member's replaced id (KIP-345): the JoinGroup or SyncGroup it still waits
        on is answered FENCED_INSTANCE_ID at once (Kafka's replaceStaticMember), before a
        rebalance the rejoin starts could answer it REBALANCE_IN_PROGRESS."""
        fenced = FencedInstanceIdError.code
        for mid, answer in result.syncs.items():
            sync = self._syncs.pop((group_id, mid), None) if answer.error_code == fenced else None
            if sync is not None and not sync.done():
                sync.set_result(answer)
        for mid, joined in result.joins.items():
            fut = self._pending.pop((group_id, mid), None) if joined.error_code == fenced else None
            if fut is not None and not fut.done():
                fut.set_result(joined)

    def _drop_syncs(self, group_id: str, code: int) -> None:
        for key in [k for k in self._syncs if k[0] == group_id]:
            fut = self._syncs.pop(key)
            if not fut.done():
                fut.set_result(SyncAnswer(code))

    # ----- requests ---------------------------------------------------------------------------

    async def find_coordinator(self, group_id: str) -> FindCoordinatorResponse:
        if not group_id:
            return FindCoordinatorResponse(InvalidGroupIdError.code, "empty group id", -1, "", 0)
        await self.runtime.ensure_topic()
        if not self.metadata.topics.get(OFFSETS_TOPIC):
            return FindCoordinatorResponse(
                CoordinatorNotAvailableError.code, f"{OFFSETS_TOPIC} is being created", -1, "", 0
            )
        broker = self.runtime.leader_of(partition_for(group_id, self.runtime.partition_count()))
        if broker is None:
            return FindCoordinatorResponse(
                CoordinatorNotAvailableError.code, "the group's offsets partition has no leader",
                -1, "", 0,
            )  # fmt: skip
        return FindCoordinatorResponse(NONE, None, broker.node_id, broker.host, broker.port)

    async def join(self, req: JoinGroupRequest) -> JoinGroupResponse:
        owned, code = self.locate(req.group_id)
        if owned is None:
            return JoinGroupResponse(code, -1, req.member_id, [])
        if self.share.is_share_group(req.group_id):  # as a Kafka member's join (join_classic)
            return JoinGroupResponse(InconsistentGroupProtocolError.code, -1, "", [],
                                     f"Group {req.group_id} is a share group.")  # fmt: skip
        group = owned.shard.setdefault(req.group_id, Group(req.group_id))
        code = await self.consumer.before_classic_join(owned, group)  # KIP-848 group here?
        if code != NONE:  # a native classic member meets a consumer group with members
            return JoinGroupResponse(code, -1, req.member_id, [], error_message=(
                f"Group {req.group_id} is a consumer group (group_protocol=consumer) with "
                "members: a native member cannot join it (Kafka clients can)."
            ))  # fmt: skip
        if req.member_id and req.member_id not in group.members:
            code = group_ops.check_member(group, req.member_id, req.group_instance_id)
            return JoinGroupResponse(code, -1, req.member_id, [])
        member_id = req.member_id or self._new_member_id(req.client_id)
        key = (req.group_id, member_id)
        old = self._pending.pop(key, None)
        if old is not None and not old.done():
            old.set_result(JoinGroupResponse(RebalanceInProgressError.code, -1, member_id, []))
        fut: asyncio.Future[JoinGroupResponse] = asyncio.get_running_loop().create_future()
        self._pending[key] = fut
        result = membership.join(
            group, member_id, req.client_id, req.session_timeout_ms, req.rebalance_timeout_ms,
            req.topics, req.topic_pattern, req.assignment_strategy, self.clock.monotonic_ms(),
            self._partition_counts(), self.config.limits, req.group_instance_id,
        )  # fmt: skip
        self._fence(req.group_id, result)
        if result.response is not None:
            self._pending.pop(key, None)
            response: JoinGroupResponse = result.response
            if result.records:  # a static member's rejoin: its new id is recorded first
                code = await self._finish(owned, req.group_id, result)
                if code != NONE:
                    if result.undo is not None:
                        result.undo()  # the old id stays the group's; the member retries
                    return JoinGroupResponse(code, -1, "", [])
            return response
        await self._finish(owned, req.group_id, result)
        try:
            async with asyncio.timeout((req.rebalance_timeout_ms + req.session_timeout_ms) / 1000):
                return await asyncio.shield(fut)
        except TimeoutError:
            self._pending.pop(key, None)
            return JoinGroupResponse(RebalanceInProgressError.code, -1, member_id, [])

    def heartbeat(self, req: HeartbeatRequest) -> int:
        owned, code = self.locate(req.group_id)
        if owned is None:
            return code
        group = owned.shard.get(req.group_id)
        if group is None:
            return UnknownMemberIdError.code
        if consumer_service.consumer_of(group) is not None:  # KIP-848: a classic member in it
            return self.consumer.classic_heartbeat(group, req.member_id, req.group_instance_id,
                                                   req.generation_id)  # fmt: skip
        now = self.clock.monotonic_ms()
        result = membership.heartbeat(
            group, req.generation_id, req.member_id, now, req.group_instance_id
        )
        return int(result.response)

    async def leave(self, group_id: str, member_id: str, instance_id: str | None = None) -> int:
        """One member leaves; member id "" with an instance id: that static member is removed."""
        owned, code = self.locate(group_id)
        if owned is None:
            return code
        group = owned.shard.get(group_id)
        if group is None:
            return UnknownMemberIdError.code
        if consumer_service.consumer_of(group) is not None:  # KIP-848: a classic member in it
            return await self.consumer.classic_leave(owned, group, member_id, instance_id)
        now, counts = self.clock.monotonic_ms(), self._partition_counts()
        result = membership.leave(group, member_id, now, counts, instance_id)
        if result.response != NONE:
            return int(result.response)
        self._after(group)
        await self._finish(owned, group_id, result)
        return NONE

    def describe(self, group_ids: list[str]) -> DescribeGroupsResponse:
        """Kafka groups too: their kind, Kafka's state name, each member's host and the
        partitions decoded from the assignment its leader handed out in SyncGroup."""
        out = []
        for gid in group_ids:
            owned, code = self.locate(gid)
            group = owned.shard.get(gid) if owned is not None else None
            if owned is not None and group is None:
                code = GroupIdNotFoundError.code
            if group is None:
                out.append(GroupDescription(code, gid, State.DEAD.value, -1, "", [], None,
                                            kafka_name(State.DEAD)))  # fmt: skip
                continue
            consumer = self.consumer.describe(group)  # a KIP-848 consumer group
            if consumer is not None:
                out.append(consumer)
                continue
            members = [
                MemberDescription(m.member_id, m.client_id, group_ops.to_wire(
                    assigned_partitions(m.assignment_bytes) if group.is_kafka else m.assignment
                ), m.client_host, m.instance_id)
                for m in sorted(group.members.values(), key=lambda m: m.member_id)
            ]  # fmt: skip
            out.append(GroupDescription(NONE, gid, group.state.value, group.generation,
                                        group.strategy or "", members, group.protocol_type,
                                        kafka_name(group.state)))  # fmt: skip
        return DescribeGroupsResponse(out)

    def list_groups(self, states: list[str] | None) -> list[ListedGroup]:
        """`states`: names either way (native, e.g. Ready, or Kafka's, e.g. Stable)."""
        out = []
        for owned in self.runtime.ready():
            for g in owned.shard.values():
                row = consumer_service.listed(g)  # a KIP-848 consumer group
                if row is not None:
                    if states is None or row.state in states:
                        out.append(row)
                    continue
                names = {g.state.value, kafka_name(g.state)}
                if states is None or names & set(states):
                    out.append(ListedGroup(g.group_id, g.state.value, g.protocol_type,
                                           kafka_name(g.state)))  # fmt: skip
        return sorted(out, key=lambda g: g.group_id)

    async def delete(self, group_ids: list[str]) -> list[DeletedGroup]:
        out = []
        for gid in group_ids:
            owned, code = self.locate(gid)
            group = owned.shard.get(gid) if owned is not None else None
            if owned is not None and group is None:
                code = await self.share.delete(gid)  # a share group's, else GROUP_ID_NOT_FOUND
            if owned is not None and group is not None and group.members:
                code = NonEmptyGroupError.code
            elif owned is not None and group is not None:
                code = await self.consumer.delete(owned, group)  # KIP-848 records first
                result = (
                    offset_ops.delete(group) if code == NONE else group_ops.Result(response=code)
                )
                code = int(result.response)
                if code == NONE:
                    code = await self.runtime.write(owned, result.records)
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
        instance_id: str | None = None,
        skip_assignment: bool = False,
    ) -> ClassicJoinAnswer:
        """A Kafka JoinGroup: answered when the rebalance it takes part in completes (at once
        for a static member's rejoin without a rebalance, once its new id is recorded)."""
        owned, code = self.locate(group_id)
        if owned is None:
            return ClassicJoinAnswer(code, -1, None, None, "", member_id)
        if self.share.is_share_group(group_id):  # Kafka's answer to a share group's id
            return ClassicJoinAnswer(InconsistentGroupProtocolError.code, -1, None, None, "", "")
        group = owned.shard.setdefault(group_id, Group(group_id))
        if consumer_service.has_members(group):  # a classic member inside a consumer group
            return await self.consumer.classic_join(owned, group, ClassicJoin(
                member_id, client_id, client_host, session_timeout_ms, rebalance_timeout_ms,
                protocol_type, tuple(protocols), require_known_member_id, instance_id,
            ))  # fmt: skip
        code = await self.consumer.before_classic_join(owned, group)  # an empty one: deleted
        if code != NONE:
            return ClassicJoinAnswer(code, -1, None, None, "", member_id)
        fresh = None if member_id else self._new_member_id(client_id)
        if fresh is not None and not require_known_member_id and not instance_id:
            group.pending_members[fresh] = self.clock.monotonic_ms() + session_timeout_ms
            member_id, fresh = fresh, None
        key = (group_id, member_id)
        old = self._pending.pop(key, None) if member_id else None
        if old is not None and not old.done():
            old.set_result(ClassicJoinAnswer(RebalanceInProgressError.code, -1, None, None,
                                             "", member_id))  # fmt: skip
        result = classic.join_classic(
            group, member_id, client_id, client_host, session_timeout_ms, rebalance_timeout_ms,
            protocol_type, protocols, self.clock.monotonic_ms(), fresh, self.config.limits,
            instance_id, skip_assignment,
        )  # fmt: skip
        self._fence(group_id, result)
        self._after(group)
        if result.response is not None:
            answer: ClassicJoinAnswer = result.response
            if result.records:  # a static member's rejoin: its new id is recorded first
                code = await self._finish(owned, group_id, result)
                if code != NONE:
                    if result.undo is not None:
                        result.undo()  # Kafka's rollback: the old id stays the group's
                    return ClassicJoinAnswer(code, -1, None, None, "", "")
            return answer
        if not member_id and fresh is not None and instance_id:
            member_id = fresh  # a static member joined at once with a new id
            key = (group_id, member_id)
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
        code = RebalanceInProgressError.code if got is None else got.error_code
        return ClassicJoinAnswer(code, -1, None, None, "", member_id)

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        assignments: dict[str, bytes],
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        instance_id: str | None = None,
    ) -> SyncAnswer:
        """A Kafka SyncGroup: the leader's brings the assignment; the others wait for it."""
        owned, code = self.locate(group_id)
        if owned is None:
            return SyncAnswer(code)
        group = owned.shard.get(group_id)
        if group is None:
            return SyncAnswer(UnknownMemberIdError.code)
        if consumer_service.consumer_of(group) is not None:  # KIP-848: a classic member in it
            return self.consumer.classic_sync(group, member_id, instance_id, generation,
                                              protocol_type, protocol_name)  # fmt: skip
        result = classic.sync(group, generation, member_id, assignments, protocol_type,
                              protocol_name, instance_id)  # fmt: skip
        if result.response is None:
            key = (group_id, member_id)
            old = self._syncs.pop(key, None)
            if old is not None and not old.done():
                old.set_result(SyncAnswer(RebalanceInProgressError.code))
            fut: asyncio.Future[SyncAnswer] = asyncio.get_running_loop().create_future()
            self._syncs[key] = fut
            timeout_ms = max(group.rebalance_deadline_ms - self.clock.monotonic_ms(), 0) + 1000
            try:
                async with asyncio.timeout(timeout_ms / 1000):
                    return await asyncio.shield(fut)
            except TimeoutError:
                self._syncs.pop(key, None)
                return SyncAnswer(RebalanceInProgressError.code)
        answer: SyncAnswer = result.response
        if result.records or result.syncs:
            code = await self._finish(owned, group_id, result)
            if code != NONE:
                return SyncAnswer(code)
        return answer

    def is_share_group(self, group_id: str) -> bool:
        return self.share.is_share_group(group_id)

    def group_view(self, group_id: str) -> tuple[int, Group | None]:
        """(error code, the group) for describing it; (NONE, None): no such group here."""
        owned, code = self.locate(group_id)
        if owned is None:
            return code, None
        return NONE, owned.shard.get(group_id)

    def all_groups(self) -> list[Group]:
        """Every group of every offsets partition this broker coordinates and has loaded."""
        return [g for owned in self.runtime.ready() for g in owned.shard.values()]


def error_code(exc: BaseException) -> int:
    return exc.code if isinstance(exc, OdradekError) else -1
