"""Share groups' administration (KIP-932) for `odradek share-groups` (deploy/cli_share_groups.py):
list, describe and delete, as Kafka's ShareGroupCommand does them through its Admin client.

`ShareGroupAdmin` is GroupAdmin (admin.py: ListGroups of every broker, the coordinator found
and followed while it moves) with the share requests: ListGroups rows of type "share",
ShareGroupDescribe at the coordinator (native door), and DeleteGroups, refused before it is
sent, as Kafka's tool refuses it, for an id that is not a share group's ("Group 'g' is not a
share group.") or a group that is not Empty ("Share group 'g' is not EMPTY.").

The share-partition start offsets and lag that Kafka's describe shows come from the share
coordinator's durable state (DescribeShareGroupOffsets), which odradek does not have yet: the
rows name the partitions the members are assigned, with those columns unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from client.group.admin import GroupAdmin
from protocol.api.group import DeleteGroupsRequest, DeleteGroupsResponse, ListedGroup
from protocol.api.share import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupDescription,
)
from protocol.errors import GroupIdNotFoundError, NonEmptyGroupError, UsageError, for_code

NONE = 0
SHARE = "share"
STATES = ("Empty", "Stable", "Dead")  # Kafka's GroupState.groupStatesForType(SHARE)


@dataclass(frozen=True, slots=True)
class Coordinator:
    node_id: int
    host: str
    port: int


def parse_states(text: str) -> set[str]:
    """`--state Stable,Empty` as Kafka's tool reads it (any case); UsageError with its line."""
    by_lower = {s.lower(): s for s in STATES}
    wanted = {s.strip().lower() for s in text.split(",") if s.strip()}
    if not wanted <= set(by_lower):
        raise UsageError(f"Invalid state list '{text}'. Valid states are: {', '.join(STATES)}")
    return {by_lower[s] for s in wanted}


class ShareGroupAdmin(GroupAdmin):
    async def share_groups(self, states: set[str] | None = None) -> list[ListedGroup]:
        """Every share group of every broker (in `states`, when given), by id."""
        return [g for g in await self.listed_groups()
                if g.group_type == SHARE and (states is None or g.state in states)]  # fmt: skip

    async def describe_share_group(self, group_id: str) -> ShareGroupDescription:
        """The group as its coordinator describes it; Dead (GROUP_ID_NOT_FOUND, with the
        coordinator's line: not found, or not a share group) is returned, not raised."""
        resp: ShareGroupDescribeResponse = await self._ask(
            group_id, ShareGroupDescribeRequest([group_id])
        )
        (desc,) = resp.groups
        if desc.error_code not in (NONE, GroupIdNotFoundError.code):
            raise for_code(desc.error_code)(desc.error_message or f"group {group_id!r}")
        return desc

    async def coordinator(self, group_id: str) -> Coordinator:
        node_id = await self.find_coordinator(group_id)
        broker = self.cluster.metadata.brokers.get(node_id)
        if broker is None:
            meta = await self.cluster.request_update()
            broker = meta.brokers.get(node_id)
        host, port = (broker.host, broker.port) if broker is not None else ("-", -1)
        return Coordinator(node_id, host, port)

    async def delete_share_group(self, group_id: str) -> None:
        listed = {g.group_id: g for g in await self.share_groups()}
        found = listed.get(group_id)
        if found is None:
            raise GroupIdNotFoundError(f"Group '{group_id}' is not a share group.")
        if found.state != "Empty":
            raise NonEmptyGroupError(f"Share group '{group_id}' is not EMPTY.")
        resp: DeleteGroupsResponse = await self._ask(group_id, DeleteGroupsRequest([group_id]))
        for result in resp.results:
            if result.error_code == NonEmptyGroupError.code:  # a member joined meanwhile
                raise NonEmptyGroupError(f"Share group '{group_id}' is not EMPTY.")
            if result.error_code != NONE:
                raise for_code(result.error_code)(f"group {group_id!r}")
