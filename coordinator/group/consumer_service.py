"""The KIP-848 side of the group coordinator: what GroupCoordinator (service.py) delegates to.

A consumer group lives in the same shard as classic groups, as `Group.consumer` of its group
(the offsets stay in `Group.offsets`, shared by both kinds). Each operation runs a pure
function over consumer_group.py's state (consumer_heartbeat.py; consumer_replay.py loads and
deletes), which applies its records to memory at once (so concurrent
heartbeats of one group see each other, as Kafka's timeline does), then appends them with
acks=all and answers only once they are replicated; a failed append answers its error (the
partition is usually lost then, and a new leader reloads from the log).

Kinds: a group of protocol type "consumer" migrates online between the two protocols, as
Kafka 4.x does (group_consumer_migration_policy, migration.py): a consumer-protocol member
joining a classic group with members converts it into a consumer group (upgrade); classic
members inside a consumer group are served by translating their JoinGroup, SyncGroup,
Heartbeat and LeaveGroup (classic_in_consumer.py); when the last consumer-protocol member
leaves or is fenced and classic members remain, the group converts back into a classic group
that rebalances (downgrade). A refused upgrade (the policy, another protocol type, a malformed
subscription) answers GROUP_ID_NOT_FOUND with why, logged once a minute, as librdkafka retries
it silently. An empty group of either kind is taken over by the other (Kafka's conversion on
empty): an empty consumer group's records are tombstoned before a classic member joins it. A
native (odradek protocol) member is refused by a consumer group with members.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from coordinator.group import classic_in_consumer, consumer_heartbeat, consumer_replay, migration
from coordinator.group import consumer_group as cg
from coordinator.group.classic_in_consumer import ClassicJoin
from coordinator.group.consumer_group import (
    ConsumerConfig,
    ConsumerGroup,
    HeartbeatIn,
    HeartbeatOut,
    Topics,
)
from coordinator.group.consumer_records import ConsumerKey
from coordinator.group.group import (
    DEFAULT_LIMITS,
    ClassicJoinAnswer,
    Group,
    GroupLimits,
    SyncAnswer,
    load_group_value,
    prepare_rebalance,
)
from coordinator.group.group_configs import GroupConfigs
from coordinator.group.records import CoordinatorRecord, GroupKey, offset_record
from coordinator.group.shard import GroupShard
from coordinator.group.states import State
from coordinator.runtime.log import ClusterView
from coordinator.runtime.runtime import CoordinatorRuntime, Owned, Spawner
from protocol.api.group import (
    GroupDescription,
    ListedGroup,
    MemberDescription,
    OffsetCommitRequest,
    OffsetCommitResponse,
    PartitionResult,
    TopicPartitions,
    TopicResult,
)
from protocol.errors import (
    InconsistentGroupProtocolError,
    NonEmptyGroupError,
    RebalanceInProgressError,
)
from protocol.log_limit import LogLimit

if TYPE_CHECKING:
    from protocol.clock import Clock

log = logging.getLogger("odradek.coordinator.group")
NONE = 0


def consumer_of(group: Group | None) -> ConsumerGroup | None:
    """The group's KIP-848 state, when it is a consumer group."""
    consumer = group.consumer if group is not None else None
    return consumer if isinstance(consumer, ConsumerGroup) else None


def check_txn_commit(group: Group, member_id: str, member_epoch: int) -> int | None:
    """TxnOffsetCommit into a consumer group: Kafka's ConsumerGroup.validateOffsetCommit, the
    member known and at its epoch (a classic member inside: its generation), the code to answer;
    None when the group is no consumer group (the classic checks then apply)."""
    consumer = consumer_of(group)
    return None if consumer is None else cg.check_commit(consumer, member_id, member_epoch)[0]


def has_members(group: Group) -> bool:
    consumer = consumer_of(group)
    return consumer is not None and bool(consumer.members)


def is_classic_active(group: Group) -> bool:
    return bool(group.members) or group.state is not State.EMPTY


def replay(groups: dict[str, Group], record: CoordinatorRecord, now_ms: int) -> None:
    """Apply one KIP-848 record while loading (or after an append)."""
    key = record.key
    assert isinstance(key, ConsumerKey)
    group = groups.setdefault(key.group_id, Group(key.group_id))
    consumer = consumer_of(group)
    if consumer is None:
        consumer = group.consumer = ConsumerGroup(key.group_id)
    consumer_replay.replay(consumer, key, record.value, now_ms)
    if consumer.deleted:
        group.consumer = None
        if not group.offsets and not is_classic_active(group) and group.generation == 0:
            groups.pop(key.group_id, None)


def with_group_deleted(group: Group, records: list[CoordinatorRecord]) -> list[CoordinatorRecord]:
    """`records` deleting the group (its GroupKey tombstone among them, offsets expired) also
    tombstone an empty consumer group's records, first, so a reload does not bring it back."""
    consumer = consumer_of(group)
    deleting = any(isinstance(r.key, GroupKey) and r.value is None for r in records)
    if consumer is None or consumer.members or not deleting:
        return records
    return consumer_replay.delete_records(consumer) + records


PROTOCOL_TYPE = "consumer"  # how the native door and `odradek groups` show the kind
GROUP_TYPE = "consumer"  # Kafka's group type (ListGroups v5); a classic group's is "classic"


def listed(group: Group) -> ListedGroup | None:
    """The native ListGroups row of a consumer group (None: not one)."""
    consumer = consumer_of(group)
    if consumer is None:
        return None
    state = consumer.state.value
    return ListedGroup(group.group_id, state, PROTOCOL_TYPE, state, GROUP_TYPE)


REFUSAL_LOG_INTERVAL_MS = 60_000  # a refused kind is logged once a minute per group
MAX_REFUSALS_REMEMBERED = 10_000


class GroupHost(Protocol):
    """What ConsumerGroups uses of the GroupCoordinator (service.py), which makes it: the
    shards, their runtime and the tasks of the appends that nobody waits for."""

    @property
    def clock(self) -> Clock: ...

    @property
    def metadata(self) -> ClusterView: ...

    @property
    def runtime(self) -> CoordinatorRuntime[GroupShard, CoordinatorRecord]: ...

    @property
    def owned(self) -> dict[int, Owned[GroupShard]]: ...

    def locate(self, group_id: str) -> tuple[Owned[GroupShard] | None, int]: ...

    @property
    def tasks(self) -> Spawner: ...

    def on_leadership_change(self) -> None: ...

    def new_member_id(self, client_id: str) -> str: ...

    def fail_waiting(self, group_id: str, code: int) -> None: ...

    def is_share_group(self, group_id: str) -> bool: ...


class ConsumerGroups:
    def __init__(
        self, coordinator: GroupHost, configs: GroupConfigs, limits: GroupLimits = DEFAULT_LIMITS
    ) -> None:
        self.co = coordinator
        self.limits = limits  # the classic groups': a classic member's session, their size
        self.configs = configs  # each group's settings: the broker's, with its overrides
        self._refusal_log = LogLimit(
            REFUSAL_LOG_INTERVAL_MS, lambda: self.co.clock.monotonic_ms(), MAX_REFUSALS_REMEMBERED
        )

    def config(self, group_id: str) -> ConsumerConfig:
        """The broker's group.consumer.* settings with the group's configs (KIP-848)."""
        return self.configs.consumer_config(group_id)

    def _log_refusal(self, group_id: str, kind: str, why: str) -> None:
        """One WARNING a minute per group and kind: a refused member of the wrong kind retries
        (librdkafka 2.12 retries GROUP_ID_NOT_FOUND without telling its application), so the
        broker's log is where an operator sees why the consumer does not start."""
        if self._refusal_log.allow((group_id, kind)):
            log.warning("group %s: %s", group_id, why)

    def topics(self) -> Topics:
        """The cluster's topics with their ids (a topic without an id yet is left out)."""
        found: dict[str, tuple[uuid.UUID, int]] = {}
        for name, parts in self.co.metadata.topics.items():
            topic_id = self.co.metadata.topic_id(name)
            if topic_id is not None and parts:
                found[name] = (topic_id, len(parts))
        return Topics(found)

    async def heartbeat(self, req: HeartbeatIn, new_member_id: Callable[[], str]) -> HeartbeatOut:
        owned, code = self.co.locate(req.group_id)
        if owned is None:
            return HeartbeatOut(code, None, req.member_id or None)
        group = owned.shard.get(req.group_id)
        if group is None and self.co.is_share_group(req.group_id):  # Kafka's answer
            why = f"Group {req.group_id} is not a consumer group."
            return HeartbeatOut(cg.GROUP_ID_NOT_FOUND, why, req.member_id or None)
        config = self.config(req.group_id)
        upgrade: list[CoordinatorRecord] = []
        if group is not None and consumer_of(group) is None and is_classic_active(group):
            refused = self._upgrade_refusal(group, req, config)
            if refused is not None:
                return refused
            upgrade = self._upgrade(group, config)
        if req.member_epoch != 0 and consumer_of(group) is None:
            if req.member_epoch > 0:
                return HeartbeatOut(
                    cg.UNKNOWN_MEMBER_ID,
                    f"Consumer group {req.group_id} not found: rejoin with member epoch 0.",
                    req.member_id,
                )
            return HeartbeatOut(NONE, None, req.member_id, req.member_epoch)  # a leave: done
        if group is None:
            group = owned.shard.setdefault(req.group_id, Group(req.group_id))
        consumer = consumer_of(group)
        if consumer is None:  # a new group, or an empty classic one taken over
            consumer = group.consumer = ConsumerGroup(req.group_id)
        if req.member_epoch == cg.LEAVE_EPOCH and self._downgrade_due(consumer, req.member_id):
            code = await self.append_or_reload(owned, self._downgrade(group, req.member_id))
            return HeartbeatOut(code, None, req.member_id, cg.LEAVE_EPOCH)
        now = self.co.clock.monotonic_ms()
        out = consumer_heartbeat.heartbeat(consumer, req, self.topics(), now, config, new_member_id)
        if not consumer.members and not out.records and consumer.group_epoch == 0:
            group.consumer = None  # a refused first join leaves no group behind
        records = upgrade + out.records
        if records:
            code = await self.append_or_reload(owned, records)
            if code != NONE:
                return HeartbeatOut(
                    code, "the group's records could not be replicated", req.member_id or None
                )
        return out.response

    def _upgrade_refusal(
        self, group: Group, req: HeartbeatIn, config: ConsumerConfig
    ) -> HeartbeatOut | None:
        """A consumer-protocol member meets a classic group with members: None if it may be
        upgraded (a valid join, epoch 0, that the policy and the group allow), else the
        answer (Kafka's GroupIdNotFoundException, "not a consumer group", with why)."""
        bad = consumer_heartbeat.validate(req, config)
        if bad is not None:
            return HeartbeatOut(bad[0], bad[1], req.member_id or None)
        why = migration.upgrade_refusal(group, config)
        if req.member_epoch != 0 and why is None:
            why = f"Group {req.group_id} is a classic group: rejoin with member epoch 0."
        if why is None:
            return None
        self._log_refusal(
            req.group_id,
            "consumer",
            f"consumer-protocol (KIP-848) member {req.member_id!r} of client "
            f"{req.client_id!r} refused: {why} (this is logged once a minute)",
        )
        return HeartbeatOut(cg.GROUP_ID_NOT_FOUND, why, req.member_id or None)

    def _upgrade(self, group: Group, config: ConsumerConfig) -> list[CoordinatorRecord]:
        """Convert the classic group into a consumer group (migration.to_consumer); its
        waiting JoinGroups and SyncGroups are answered REBALANCE_IN_PROGRESS (they rejoin)."""
        now = self.co.clock.monotonic_ms()
        self.co.fail_waiting(group.group_id, RebalanceInProgressError.code)
        group.consumer, records = migration.to_consumer(group, self.topics(), now, config)
        log.info("group %s: upgraded from the classic to the consumer protocol online (%d "
                 "members)", group.group_id, len(group.consumer.members))  # fmt: skip
        return records

    def _downgrade_due(self, consumer: ConsumerGroup, leaving_id: str) -> bool:
        config = self.config(consumer.group_id)
        return leaving_id in consumer.members and migration.downgrade_due(
            consumer, leaving_id, config, self.limits.max_members
        )

    def _downgrade(self, group: Group, leaving_id: str) -> list[CoordinatorRecord]:
        """Convert the consumer group into a classic group without `leaving_id`, which then
        rebalances (migration.to_classic); memory is what replaying the records gives."""
        consumer = consumer_of(group)
        assert consumer is not None
        names = {tid: name for name, (tid, _) in self.topics().by_name.items()}
        records, value = migration.to_classic(consumer, leaving_id, names)
        now = self.co.clock.monotonic_ms()
        group.consumer = None
        load_group_value(group, value, now)
        prepare_rebalance(group, now)
        log.info("group %s: downgraded from the consumer to the classic protocol online (%d "
                 "members)", group.group_id, len(group.members))  # fmt: skip
        return records

    # ----- classic members inside a consumer group (classic_in_consumer.py) --------------------

    async def classic_join(self, owned: Any, group: Group, req: ClassicJoin) -> ClassicJoinAnswer:
        consumer = consumer_of(group)
        assert consumer is not None
        now = self.co.clock.monotonic_ms()
        answer = classic_in_consumer.join(
            consumer, req, self.topics(), now, self.config(group.group_id),
            lambda: self.co.new_member_id(req.client_id), self.limits,
        )  # fmt: skip
        records = answer.records
        if answer.replaced_consumer and migration.downgrade_due(
            consumer, "", self.config(group.group_id), self.limits.max_members
        ):  # the last consumer-protocol member's instance came back classic: downgrade
            records = records + self._downgrade(group, "")
        if records:
            code = await self.append_or_reload(owned, records)
            if code != NONE:
                return ClassicJoinAnswer(code, -1, None, None, "", answer.member_id)
        if answer.code != NONE:
            return ClassicJoinAnswer(answer.code, -1, None, None, "", answer.member_id,
                                     error_message=answer.message)  # fmt: skip
        return ClassicJoinAnswer(NONE, answer.generation, PROTOCOL_TYPE, answer.protocol_name,
                                 "", answer.member_id)  # fmt: skip

    def classic_sync(
        self, group: Group, member_id: str, instance_id: str | None, generation: int,
        protocol_type: str | None, protocol_name: str | None,
    ) -> SyncAnswer:  # fmt: skip
        consumer = consumer_of(group)
        assert consumer is not None
        names = {tid: name for name, (tid, _) in self.topics().by_name.items()}
        now = self.co.clock.monotonic_ms()
        answer = classic_in_consumer.sync(consumer, member_id, instance_id, generation,
                                          protocol_type, protocol_name, names, now)  # fmt: skip
        return SyncAnswer(answer.code, answer.assignment)

    def classic_heartbeat(
        self, group: Group, member_id: str, instance_id: str | None, generation: int
    ) -> int:
        consumer = consumer_of(group)
        assert consumer is not None
        now = self.co.clock.monotonic_ms()
        return classic_in_consumer.heartbeat(consumer, member_id, instance_id, generation, now).code

    async def classic_leave(
        self, owned: Any, group: Group, member_id: str, instance_id: str | None
    ) -> int:
        """A classic member leaves the consumer group: fenced, or, if only classic members
        would remain, the group goes back to the classic protocol without it."""
        consumer = consumer_of(group)
        assert consumer is not None
        member = classic_in_consumer.classic_member(consumer, member_id, instance_id)
        if isinstance(member, classic_in_consumer.Answer):
            return member.code
        if self._downgrade_due(consumer, member.member_id):
            records = self._downgrade(group, member.member_id)
        else:
            now, config = self.co.clock.monotonic_ms(), self.config(group.group_id)
            records = consumer_heartbeat.fence(consumer, member.member_id, self.topics(), now,
                                               config)  # fmt: skip
        return await self.append_or_reload(owned, records)

    async def append_or_reload(self, owned: Any, records: list[CoordinatorRecord]) -> int:
        """Append with acks=all. The records are in memory already: if they could not be
        written while this broker still leads the partition, memory is ahead of the log, so
        the partition is given up and loaded again from the log (Kafka reverts to its last
        committed snapshot instead); its clients retry on NOT_COORDINATOR / the load."""
        code, index = int(await self.co.runtime.append(owned, records)), owned.index
        if code != NONE and self.co.owned.get(index) is owned:
            log.warning(
                "%d group records not written (error %d): reloading offsets "
                "partition %d from its log",
                len(records),
                code,
                index,
            )
            self.co.runtime.resign(index)
            self.co.on_leadership_change()
        return code

    def tick(self, owned: Any, group: Group, now_ms: int) -> bool:
        """Fence expired members; True if records were written (spawned)."""
        consumer = consumer_of(group)
        if consumer is None or not consumer.members:
            return False
        config = self.config(group.group_id)
        late = consumer_heartbeat.late_members(consumer, now_ms, config)
        if late and self._downgrade_due(consumer, late[0]):  # the others expire as classic
            records = self._downgrade(group, late[0])
        else:
            records = consumer_heartbeat.tick(consumer, self.topics(), now_ms, config)
        if records:
            self.co.tasks.spawn(self.append_or_reload(owned, records))
        return bool(records)

    def is_consumer_group(self, group_id: str) -> bool:
        owned, _ = self.co.locate(group_id)
        return owned is not None and consumer_of(owned.shard.get(group_id)) is not None

    async def commit(self, req: OffsetCommitRequest) -> OffsetCommitResponse:
        """OffsetCommit into a consumer group: generation_id is the member epoch (v9+), checked
        as Kafka does (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID); then written with acks=all."""
        owned, code = self.co.locate(req.group_id)
        group = owned.shard.get(req.group_id) if owned is not None else None
        consumer = consumer_of(group)
        if owned is not None and consumer is not None:
            code, _ = cg.check_commit(consumer, req.member_id, req.generation_id)
            if code == NONE:
                now = self.co.clock.time_ms()
                records = [
                    offset_record(
                        req.group_id, t.name, p.partition, p.offset, p.metadata, now, p.leader_epoch
                    )
                    for t in req.topics
                    for p in t.partitions
                ]
                if records:
                    code = await self.co.runtime.write(owned, records)
        return OffsetCommitResponse(
            [
                TopicResult(t.name, [PartitionResult(p.partition, code) for p in t.partitions])
                for t in req.topics
            ]
        )

    def check_fetch(self, group_id: str, member_id: str | None, epoch: int) -> int:
        """OffsetFetch v9+ with a member id and epoch (a consumer-protocol member): the member
        must be known and at its epoch; an admin (no member id) always fetches."""
        if member_id is None or epoch < 0:
            return NONE
        owned, code = self.co.locate(group_id)
        if owned is None:
            return code
        consumer = consumer_of(owned.shard.get(group_id))
        if consumer is None:
            return NONE
        return cg.check_commit(consumer, member_id, epoch)[0]

    def describe(self, group: Group) -> GroupDescription | None:
        """The native DescribeGroups answer for a consumer group (what `odradek groups
        describe` shows): generation = the group epoch, each member's current assignment by
        topic name. None: not a consumer group."""
        consumer = consumer_of(group)
        if consumer is None:
            return None
        members = []
        for m in sorted(consumer.members.values(), key=lambda m: m.member_id):
            parts = self._by_name(m.assignment.assigned)
            target = self._by_name(consumer.target.get(m.member_id, {}))
            members.append(
                MemberDescription(
                    m.member_id, m.client_id, parts, m.client_host, m.instance_id, m.epoch, target
                )
            )
        state = consumer.state.value
        return GroupDescription(
            NONE,
            group.group_id,
            state,
            consumer.group_epoch,
            consumer.preferred_assignor(self.config(group.group_id)),
            members,
            PROTOCOL_TYPE,
            state,
            GROUP_TYPE,
            consumer.group_epoch,
            consumer.target_epoch,
        )

    def _by_name(self, parts: Mapping[uuid.UUID, frozenset[int]]) -> list[TopicPartitions]:
        return [
            TopicPartitions(self.co.metadata.topic_by_id(t) or str(t), sorted(ps))
            for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0]))
            if ps
        ]

    async def before_classic_join(self, owned: Any, group: Group) -> int:
        """A classic member joining a consumer group without members: the empty consumer group
        is deleted first (its records tombstoned) so the classic one starts. A native member
        (odradek's own protocol) is refused while it has members."""
        consumer = consumer_of(group)
        if consumer is None:
            return NONE
        if consumer.members:
            self._log_refusal(
                group.group_id,
                "classic",
                "native (odradek protocol) member refused: the group is a consumer (KIP-848) "
                "group with members (this is logged once a minute)",
            )
            return InconsistentGroupProtocolError.code
        records = consumer_replay.delete_records(consumer)
        group.consumer = None
        return await self.append_or_reload(owned, records)

    async def delete(self, owned: Any, group: Group) -> int:
        consumer = consumer_of(group)
        if consumer is None:
            return NONE
        if consumer.members:
            return NonEmptyGroupError.code
        records = consumer_replay.delete_records(consumer)
        group.consumer = None
        return await self.append_or_reload(owned, records)
