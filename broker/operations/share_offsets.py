"""What DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets
(KIP-932) share: finding the share group at its coordinator, and a topic's partitions.

Kafka's GroupCoordinatorService does these through the persister, the share coordinator's
client (here `ctx.share_persister`, broker/share/persister.py): ReadShareGroupStateSummary
for describe, InitializeShareGroupState at a new state epoch for alter, DeleteShareGroupState
for delete. A share partition held by this broker (its leader) is dropped after an alter or a
delete, so its next fetch loads the new state; a leader elsewhere finds out at its next write
(FENCED_STATE_EPOCH) and loads it then. Both run only on an Empty group, so no member fetches.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from coordinator.group.share_group import ShareGroup

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69


@dataclass(frozen=True, slots=True)
class Found:
    error_code: int
    error_message: str | None = None
    group: ShareGroup | None = None


async def find(ctx: BrokerContext, group_id: str, *, create: bool = False) -> Found:
    """The share group `group_id` at its coordinator, or why not: NOT_COORDINATOR or loading,
    GROUP_ID_NOT_FOUND (no group, or one of another type). `create` makes an Empty one for an
    id no group has (AlterShareGroupOffsets, as Kafka's)."""
    share = ctx.groups.share
    code, group = await share.find_or_create(group_id) if create else share.find(group_id)
    if code == NONE and group is not None:
        return Found(NONE, None, group)
    if code not in (NONE, GROUP_ID_NOT_FOUND):
        return Found(code)
    _, other = ctx.groups.group_view(group_id)
    why = f"Group {group_id} " + ("not found." if other is None else "is not a share group.")
    return Found(GROUP_ID_NOT_FOUND, why)


def must_be_empty(found: Found, group_id: str) -> Found:
    """Alter and delete refuse a group with members (GROUP_NOT_EMPTY), as Kafka's."""
    if found.group is not None and found.group.members:
        return Found(NON_EMPTY_GROUP, f"The group {group_id} is not empty.")
    return found


def partitions(ctx: BrokerContext, topic: str) -> list[int] | None:
    """The topic's partitions, None for a topic this broker does not know."""
    parts = ctx.metadata.topics.get(topic)
    return None if parts is None else sorted(parts)


def forget(ctx: BrokerContext, group_id: str, topic: str, partition: int) -> None:
    """Drop this broker's in-memory share partition (it leads it) after its state changed."""
    ctx.share.forget(group_id, topic, partition)
