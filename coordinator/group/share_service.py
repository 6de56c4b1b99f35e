"""The share-group side of the group coordinator (KIP-932): what ShareGroupHeartbeat,
ShareGroupDescribe and ListGroups reach through `GroupCoordinator.share`.

A share group belongs to the coordinator of its `__consumer_offsets` partition, as every group
does (FindCoordinator key type GROUP): each request first asks the coordinator where the group
lives (`ShareHost.locate`), and answers its error (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS) when it is not here and ready.

The groups live in the shard of their offsets partition (`GroupShard.share`, shard.py) and
in its log: each operation changes the group in memory (share_group.py), turns the change into
Kafka's records (share_replay.py `changes`) and appends them with acks=all before it answers,
as consumer groups do; loading the partition on a new coordinator replays them, so a
coordinator failover keeps the group epoch, the members with their epochs and assignments, the
target assignment and the topics with share state (members keep heartbeating at their
epochs). A failed append leaves memory ahead of the log: the partition is given up and loaded
again from its log (its members retry on NOT_COORDINATOR / the load), as consumer groups'.

A group id that a classic or consumer group has is refused (GROUP_ID_NOT_FOUND, "not a share
group"), as Kafka answers a heartbeat of the wrong kind; the other way round, service.py and
consumer_service.py ask `is_share_group` (a classic JoinGroup is INCONSISTENT_GROUP_PROTOCOL, a
consumer heartbeat GROUP_ID_NOT_FOUND, "not a consumer group", as Kafka's
GroupMetadataManager). DeleteGroups deletes an Empty share group (`delete`, its records'
tombstones): NON_EMPTY_GROUP while it has members, as Kafka's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from coordinator.group import share_group as sg
from coordinator.group import share_replay
from coordinator.group.records import CoordinatorRecord
from coordinator.group.shard import GroupShard
from coordinator.group.share_group import (
    ShareConfig,
    ShareGroup,
    ShareHeartbeatIn,
    ShareHeartbeatOut,
    TopicsView,
)
from coordinator.runtime.log import ClusterView
from coordinator.runtime.runtime import Owned

log = logging.getLogger("odradek.coordinator.group")
NONE = 0
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
UNKNOWN_TOPIC_OR_PARTITION = 3
GROUP_TYPE = "share"
ShareOwned = Owned[GroupShard]


class ShareHost(Protocol):
    """What ShareGroups uses of the GroupCoordinator (service.py), which makes it."""

    def locate(self, group_id: str) -> tuple[ShareOwned | None, int]:
        """(the offsets partition owning the group, or None; the error code when None)."""
        ...

    def group_view(self, group_id: str) -> tuple[int, object | None]:
        """(error code, the classic or consumer group with this id, or None)."""
        ...

    async def append_or_reload(self, owned: ShareOwned, records: list[CoordinatorRecord]) -> int:
        """Append with acks=all; on failure the partition is loaded again from its log."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, object]) -> None: ...

    def ready_shards(self) -> list[ShareOwned]: ...


class ShareGroups:
    def __init__(
        self, host: ShareHost, cluster: ClusterView, config: Callable[[str], ShareConfig]
    ) -> None:
        self.host = host
        self.cluster = cluster
        self.config = config  # a group's settings: the broker's with the group's share.* configs

    def topics(self) -> TopicsView:
        """The cluster's topics as the assignor sees them (internal ones left out)."""
        out = {}
        for name, partitions in self.cluster.topics.items():
            topic_id = self.cluster.topic_id(name)
            if topic_id is not None and not name.startswith("__"):
                out[name] = (topic_id, len(partitions))
        return out

    def find(self, group_id: str) -> tuple[int, ShareGroup | None]:
        """(error code, the share group): (NONE, None) when there is none here."""
        owned, code = self.host.locate(group_id)
        if owned is None:
            return code, None
        return NONE, owned.shard.share.get(group_id)

    async def _write(
        self, owned: ShareOwned, group: ShareGroup, before: share_replay.Snapshot
    ) -> int:
        """Append the records of `group`'s change since `before`; an error code."""
        records = share_replay.changes(group.group_id, before, share_replay.snapshot(group))
        return await self.host.append_or_reload(owned, records) if records else NONE

    async def heartbeat(self, beat: ShareHeartbeatIn, now_ms: int) -> ShareHeartbeatOut:
        owned, code = self.host.locate(beat.group_id)
        if owned is None:
            return ShareHeartbeatOut(code)
        group = owned.shard.share.get(beat.group_id)
        fresh = group is None
        if group is None:
            _, other = self.host.group_view(beat.group_id)
            if other is not None:
                why = f"Group {beat.group_id} is not a share group."
                return ShareHeartbeatOut(GROUP_ID_NOT_FOUND, why)
            if beat.member_epoch != 0:
                config = self.config(beat.group_id)
                return sg.heartbeat(ShareGroup(beat.group_id), beat, {}, config, now_ms)
            group = owned.shard.share[beat.group_id] = ShareGroup(beat.group_id)
        before = share_replay.snapshot(None if fresh else group)
        out = sg.heartbeat(group, beat, self.topics(), self.config(beat.group_id), now_ms)
        if fresh and out.error_code != NONE:
            del owned.shard.share[beat.group_id]  # a refused first join leaves no group
            return out
        code = await self._write(owned, group, before)
        if code != NONE:
            why = "the group's records could not be replicated"
            return ShareHeartbeatOut(code, why, beat.member_id or None)
        return out

    async def find_or_create(self, group_id: str) -> tuple[int, ShareGroup | None]:
        """AlterShareGroupOffsets' group: the share group, made Empty when no group has the id
        (as Kafka's, and written); GROUP_ID_NOT_FOUND for a classic or consumer group's id."""
        owned, code = self.host.locate(group_id)
        if owned is None:
            return code, None
        group = owned.shard.share.get(group_id)
        if group is not None:
            return NONE, group
        if self.host.group_view(group_id)[1] is not None:
            return GROUP_ID_NOT_FOUND, None
        group = owned.shard.share[group_id] = ShareGroup(group_id)
        code = await self._write(owned, group, share_replay.snapshot(None))
        return (NONE, group) if code == NONE else (code, None)

    async def set_state_topic(self, group_id: str, topic: str, has_state: bool) -> int:
        """The topic's share partitions have state now (AlterShareGroupOffsets), or no longer
        (DeleteShareGroupOffsets, DeleteGroups): the group's topics with state, written."""
        owned, code = self.host.locate(group_id)
        group = owned.shard.share.get(group_id) if owned is not None else None
        if owned is None or group is None:
            return code if owned is None else GROUP_ID_NOT_FOUND
        before = share_replay.snapshot(group)
        if not has_state:
            group.state_topics.pop(topic, None)
        else:
            found = self.topics().get(topic)
            if found is None:
                return UNKNOWN_TOPIC_OR_PARTITION
            group.state_topics[topic] = found
        return await self._write(owned, group, before)

    def is_share_group(self, group_id: str) -> bool:
        return self.find(group_id)[1] is not None

    async def delete(self, group_id: str) -> int:
        """DeleteGroups of a share group: NONE (deleted), NON_EMPTY_GROUP (it has members),
        GROUP_ID_NOT_FOUND (no share group by that id here), or where it is not (NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS)."""
        owned, code = self.host.locate(group_id)
        if owned is None:
            return code
        group = owned.shard.share.get(group_id)
        if group is None:
            return GROUP_ID_NOT_FOUND
        if group.members:
            return NON_EMPTY_GROUP
        del owned.shard.share[group_id]
        code = await self.host.append_or_reload(owned, share_replay.delete_records(group))
        if code == NONE:
            log.info("share group %s deleted", group_id)
        return code

    def groups(self) -> list[ShareGroup]:
        """The share groups this broker coordinates now."""
        return [g for owned in self.host.ready_shards() for g in owned.shard.share.values()]

    def tick(self, now_ms: int) -> None:
        """Expire silent members (their records written in the background)."""
        shards = [o for o in self.host.ready_shards() if o.shard.share]
        topics = self.topics() if shards else {}
        for owned in shards:
            for group in list(owned.shard.share.values()):
                before = share_replay.snapshot(group)
                timeout = self.config(group.group_id).session_timeout_ms
                gone = sg.expire(group, topics, now_ms, timeout)
                for member_id in gone:
                    log.info("share group %s: member %s expired (session timeout)",
                             group.group_id, member_id)  # fmt: skip
                if gone:
                    self.host.spawn(self._write(owned, group, before))
