"""One `__consumer_offsets` partition's shard of the group coordinator: what loading the
partition by replay builds (coordinator/runtime/runtime.py), and what the coordinator's
operations read and change.

The shard is a dict of the partition's classic and consumer groups by id (group.py's `Group`,
with its committed offsets and its KIP-848 state), and beside it, in `share`, the partition's
share groups by id (share_group.py's `ShareGroup`): a share group has no offsets and is no
classic group, so the code walking the groups (expiry, ListGroups, describe) never meets one.
"""

from __future__ import annotations

from coordinator.group.group import Group
from coordinator.group.share_group import ShareGroup


class GroupShard(dict[str, Group]):
    __slots__ = ("share",)

    def __init__(self) -> None:
        super().__init__()
        self.share: dict[str, ShareGroup] = {}
