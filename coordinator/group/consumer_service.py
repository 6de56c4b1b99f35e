"""The KIP-848 side of the group coordinator: what GroupCoordinator (service.py) delegates to.

A consumer group lives in the same shard as classic groups, as `Group.consumer` of its group
(the offsets stay in `Group.offsets`, shared by both kinds). Each operation runs a pure
function over consumer_group.py's state (consumer_heartbeat.py; consumer_replay.py loads and
deletes), which applies its records to memory at once (so concurrent
heartbeats of one group see each other, as Kafka's timeline does), then appends them with
acks=all and answers only once they are replicated; a failed append answers its error (the
partition is usually lost then, and a new leader reloads from the log).

Kinds: a consumer-protocol heartbeat for a group with classic members is refused with
GROUP_ID_NOT_FOUND (Kafka's "is not a consumer group"; odradek does not migrate non-empty
groups online, so the message says so), a classic JoinGroup for a consumer group with members
with INCONSISTENT_GROUP_PROTOCOL. An empty group of either kind is taken over by the other
(Kafka's conversion on empty, which every group.consumer.migration.policy allows): an empty
consumer group's records are tombstoned before a classic member joins it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from coordinator.group import consumer_group as cg
from coordinator.group import consumer_heartbeat, consumer_replay
from coordinator.group.consumer_group import (
    ConsumerConfig,
    ConsumerGroup,
    HeartbeatIn,
    HeartbeatOut,
    Topics,
)
from coordinator.group.consumer_records import ConsumerKey
from coordinator.group.group import Group
from coordinator.group.group_configs import GroupConfigs
from coordinator.group.records import CoordinatorRecord, GroupKey, offset_record
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
from protocol.errors import InconsistentGroupProtocolError, NonEmptyGroupError
from protocol.log_limit import LogLimit

if TYPE_CHECKING:
    from protocol.clock import Clock

log = logging.getLogger("odradek.coordinator.group")
NONE = 0


def consumer_of(group: Group | None) -> ConsumerGroup | None:
    """The group's KIP-848 state, when it is a consumer group."""
    consumer = group.consumer if group is not None else None
    return consumer if isinstance(consumer, ConsumerGroup) else None


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
    def runtime(self) -> CoordinatorRuntime[dict[str, Group], CoordinatorRecord]: ...

    @property
    def owned(self) -> dict[int, Owned[dict[str, Group]]]: ...

    def locate(self, group_id: str) -> tuple[Owned[dict[str, Group]] | None, int]: ...

    @property
    def tasks(self) -> Spawner: ...

    def on_leadership_change(self) -> None: ...


class ConsumerGroups:
    def __init__(self, coordinator: GroupHost, configs: GroupConfigs) -> None:
        self.co = coordinator
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
        if group is not None and consumer_of(group) is None and is_classic_active(group):
            self._log_refusal(
                req.group_id,
                "consumer",
                f"consumer-protocol (KIP-848) member {req.member_id!r} of client "
                f"{req.client_id!r} refused: the group is a classic group with members, and "
                "odradek does not migrate a non-empty group online (this is logged once a minute)",
            )
            return HeartbeatOut(
                cg.GROUP_ID_NOT_FOUND,
                f"Group {req.group_id} is not a consumer "
                "group: it is a classic group with members, and odradek does not "
                "migrate a non-empty group to the consumer protocol online; "
                "retry once it is empty.",
                req.member_id or None,
            )
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
        now = self.co.clock.monotonic_ms()
        out = consumer_heartbeat.heartbeat(
            consumer, req, self.topics(), now, self.config(req.group_id), new_member_id
        )
        if not consumer.members and not out.records and consumer.group_epoch == 0:
            group.consumer = None  # a refused first join leaves no group behind
        if out.records:
            code = await self._append(owned, out.records)
            if code != NONE:
                return HeartbeatOut(
                    code, "the group's records could not be replicated", req.member_id or None
                )
        return out.response

    async def _append(self, owned: Any, records: list[CoordinatorRecord]) -> int:
        """Append with acks=all. The records are in memory already: if they could not be
        written while this broker still leads the partition, memory is ahead of the log, so
        the partition is given up and loaded again from the log (Kafka reverts to its last
        committed snapshot instead); its clients retry on NOT_COORDINATOR / the load."""
        code, index = int(await self.co.runtime.append(owned, records)), owned.index
        if code != NONE and self.co.owned.get(index) is owned:
            log.warning(
                "%d KIP-848 records not written (error %d): reloading offsets "
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
        records = consumer_heartbeat.tick(
            consumer, self.topics(), now_ms, self.config(group.group_id)
        )
        if records:
            self.co.tasks.spawn(self._append(owned, records))
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
        """A classic member joining: refused while the consumer group has members; an empty
        consumer group is deleted first (its records tombstoned) so the classic one starts."""
        consumer = consumer_of(group)
        if consumer is None:
            return NONE
        if consumer.members:
            self._log_refusal(
                group.group_id,
                "classic",
                "classic member refused: the group is a consumer (KIP-848) group with "
                "members, and odradek does not migrate a non-empty group online (this is "
                "logged once a minute)",
            )
            return InconsistentGroupProtocolError.code
        records = consumer_replay.delete_records(consumer)
        group.consumer = None
        return await self._append(owned, records)

    async def delete(self, owned: Any, group: Group) -> int:
        consumer = consumer_of(group)
        if consumer is None:
            return NONE
        if consumer.members:
            return NonEmptyGroupError.code
        records = consumer_replay.delete_records(consumer)
        group.consumer = None
        return await self._append(owned, records)
