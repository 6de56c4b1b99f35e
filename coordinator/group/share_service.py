"""The share-group side of the group coordinator (KIP-932): what ShareGroupHeartbeat,
ShareGroupDescribe and ListGroups reach through `GroupCoordinator.share`.

A share group belongs to the coordinator of its `__consumer_offsets` partition, as every group
does (FindCoordinator key type GROUP): each request first asks the coordinator where the group
lives (`ShareHost.locate`), and answers its error (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS) when it is not here and ready.

In memory only, for now: the groups are kept here, beside the offsets partition's shard they
belong to, and forgotten when that partition is no longer this broker's (a group found under
another loading of its partition starts again: its members get UNKNOWN_MEMBER_ID and join
anew). Kafka writes share groups' records (types 10-14) to `__consumer_offsets`; that is later
work, as is the share coordinator's durable state (`__share_group_state`).

A group id that a classic or consumer group has is refused (GROUP_ID_NOT_FOUND, "not a share
group"), as Kafka answers a heartbeat of the wrong kind; the other way round, service.py and
consumer_service.py ask `is_share_group` (a classic JoinGroup is INCONSISTENT_GROUP_PROTOCOL, a
consumer heartbeat GROUP_ID_NOT_FOUND, "not a consumer group", as Kafka's
GroupMetadataManager). DeleteGroups deletes an Empty share group (`delete`): NON_EMPTY_GROUP
while it has members, as Kafka's. The leaders' share partitions of a deleted group stay in
their memory until their leader changes (Kafka deletes them through the share coordinator,
DeleteShareGroupState: later work, with `__share_group_state`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from coordinator.group import share_group as sg
from coordinator.group.share_group import (
    ShareConfig,
    ShareGroup,
    ShareHeartbeatIn,
    ShareHeartbeatOut,
    TopicsView,
)
from coordinator.runtime.log import ClusterView

log = logging.getLogger("odradek.coordinator.group")
NONE = 0
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
GROUP_TYPE = "share"


class ShareHost(Protocol):
    """What ShareGroups uses of the GroupCoordinator (service.py), which makes it."""

    def locate(self, group_id: str) -> tuple[object | None, int]:
        """(the offsets partition owning the group, or None; the error code when None)."""
        ...

    def group_view(self, group_id: str) -> tuple[int, object | None]:
        """(error code, the classic or consumer group with this id, or None)."""
        ...


class ShareGroups:
    def __init__(
        self, host: ShareHost, cluster: ClusterView, config: Callable[[str], ShareConfig]
    ) -> None:
        self.host = host
        self.cluster = cluster
        self.config = config  # a group's settings: the broker's with the group's share.* configs
        self._groups: dict[str, tuple[object, ShareGroup]] = {}  # id -> (its partition, group)

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
        held = self._groups.get(group_id)
        if held is None:
            return NONE, None
        if held[0] is not owned:  # the partition was lost and loaded again since
            del self._groups[group_id]
            return NONE, None
        return NONE, held[1]

    def heartbeat(self, beat: ShareHeartbeatIn, now_ms: int) -> ShareHeartbeatOut:
        code, group = self.find(beat.group_id)
        if code != NONE:
            return ShareHeartbeatOut(code)
        if group is None:
            _, other = self.host.group_view(beat.group_id)
            if other is not None:
                why = f"Group {beat.group_id} is not a share group."
                return ShareHeartbeatOut(GROUP_ID_NOT_FOUND, why)
            if beat.member_epoch != 0:
                config = self.config(beat.group_id)
                return sg.heartbeat(ShareGroup(beat.group_id), beat, {}, config, now_ms)
            owned, _ = self.host.locate(beat.group_id)
            group = ShareGroup(beat.group_id)
            self._groups[beat.group_id] = (owned, group)
        return sg.heartbeat(group, beat, self.topics(), self.config(beat.group_id), now_ms)

    def find_or_create(self, group_id: str) -> tuple[int, ShareGroup | None]:
        """AlterShareGroupOffsets' group: the share group, made Empty when no group has the id
        (as Kafka's); GROUP_ID_NOT_FOUND for a classic or consumer group's id."""
        code, group = self.find(group_id)
        if code != NONE or group is not None:
            return code, group
        owned, _ = self.host.locate(group_id)
        if self.host.group_view(group_id)[1] is not None:
            return GROUP_ID_NOT_FOUND, None
        group = ShareGroup(group_id)
        self._groups[group_id] = (owned, group)
        return NONE, group

    def is_share_group(self, group_id: str) -> bool:
        return self.find(group_id)[1] is not None

    def delete(self, group_id: str) -> int:
        """DeleteGroups of a share group: NONE (deleted), NON_EMPTY_GROUP (it has members),
        GROUP_ID_NOT_FOUND (no share group by that id here), or where it is not (NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS)."""
        code, group = self.find(group_id)
        if code != NONE:
            return code
        if group is None:
            return GROUP_ID_NOT_FOUND
        if group.members:
            return NON_EMPTY_GROUP
        del self._groups[group_id]
        log.info("share group %s deleted", group_id)
        return NONE

    def groups(self) -> list[ShareGroup]:
        """The share groups this broker coordinates now."""
        return [g for gid in list(self._groups) if (g := self.find(gid)[1]) is not None]

    def tick(self, now_ms: int) -> None:
        """Expire silent members; forget the groups of partitions no longer here."""
        groups = self.groups()
        topics = self.topics() if groups else {}
        for group in groups:
            for member_id in sg.expire(group, topics, now_ms):
                log.info("share group %s: member %s expired (session timeout)",
                         group.group_id, member_id)  # fmt: skip
