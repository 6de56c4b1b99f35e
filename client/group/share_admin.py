"""Share groups' administration (KIP-932) for `odradek share-groups` (deploy/cli_share_groups.py):
list, describe and delete, as Kafka's ShareGroupCommand does them through its Admin client.

`ShareGroupAdmin` is GroupAdmin (admin.py: ListGroups of every broker, the coordinator found
and followed while it moves) with the share requests: ListGroups rows of type "share",
ShareGroupDescribe at the coordinator (native door), and DeleteGroups, refused before it is
sent, as Kafka's tool refuses it, for an id that is not a share group's ("Group 'g' is not a
share group.") or a group that is not Empty ("Share group 'g' is not EMPTY.").

The share-partition start offsets and lag that Kafka's describe shows come from the share
coordinator's durable state (DescribeShareGroupOffsets at the group's coordinator); a lag the
coordinator cannot give (it does not lead the partition) is the partition's end offset less
the start offset, as Kafka's tool computed it before KIP-1226. `reset_share_offsets` is
AlterShareGroupOffsets (only an Empty group), its targets resolved here as Kafka's tool does
(earliest, latest, an offset, a timestamp by ListOffsets); `delete_share_offsets` is
DeleteShareGroupOffsets.
"""

from __future__ import annotations

from dataclasses import dataclass

from client.group.admin import GroupAdmin
from protocol.api.group import DeleteGroupsRequest, DeleteGroupsResponse, ListedGroup
from protocol.api.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from protocol.api.share import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupDescription,
)
from protocol.api.share_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareOffsetsGroupRequest,
    ShareOffsetToSet,
    ShareTopicToSet,
)
from protocol.errors import GroupIdNotFoundError, NonEmptyGroupError, UsageError, for_code

NONE = 0
SHARE = "share"
STATES = ("Empty", "Stable", "Dead")  # Kafka's GroupState.groupStatesForType(SHARE)


@dataclass(frozen=True, slots=True)
class ShareOffsetRow:
    topic: str
    partition: int
    start_offset: int | None  # None: no state yet
    leader_epoch: int | None
    lag: int | None  # None: unknown


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

    async def share_offsets(self, group_id: str) -> list[ShareOffsetRow]:
        """The group's share partitions with state: start offset, leader epoch and lag."""
        request = DescribeShareGroupOffsetsRequest([ShareOffsetsGroupRequest(group_id, None)])
        resp: DescribeShareGroupOffsetsResponse = await self._ask(group_id, request)
        (group,) = resp.groups
        if group.error_code != NONE:
            raise for_code(group.error_code)(group.error_message or f"group {group_id!r}")
        rows = [(t.topic, p) for t in group.topics for p in t.partitions]
        for _, p in rows:
            if p.error_code != NONE:
                raise for_code(p.error_code)(p.error_message or f"partition {p.partition}")
        unknown = [(t, p.partition) for t, p in rows if p.start_offset >= 0 and p.lag < 0]
        ends = await self.offsets(unknown, LATEST_TIMESTAMP) if unknown else {}
        out = []
        for topic, p in sorted(rows, key=lambda r: (r[0], r[1].partition)):
            start = p.start_offset if p.start_offset >= 0 else None
            lag: int | None = p.lag if p.lag >= 0 else None
            end = ends.get((topic, p.partition))
            if lag is None and start is not None and end is not None:
                lag = max(0, end - start)
            epoch = p.leader_epoch if p.leader_epoch >= 0 else None
            out.append(ShareOffsetRow(topic, p.partition, start, epoch, lag))
        return out

    async def share_offset_targets(
        self, tps: list[tuple[str, int]], to: str, value: int | None = None
    ) -> dict[tuple[str, int], int]:
        """Kafka's tool's targets: `earliest`, `latest`, `offset` (value), or `timestamp` (value,
        ms: the first offset at or after it, the end offset when none is)."""
        if to == "offset":
            if value is None or value < 0:
                raise UsageError("--to-offset needs a non-negative offset")
            return dict.fromkeys(tps, value)
        if to in ("earliest", "latest"):
            return await self.offsets(tps, EARLIEST_TIMESTAMP if to == "earliest"
                                      else LATEST_TIMESTAMP)  # fmt: skip
        assert value is not None
        found = await self.offsets(tps, value)
        missing = [tp for tp in tps if found.get(tp, -1) < 0]
        latest = await self.offsets(missing, LATEST_TIMESTAMP) if missing else {}
        return {tp: found[tp] if found.get(tp, -1) >= 0 else latest[tp] for tp in tps
                if tp in found or tp in latest}  # fmt: skip

    async def topic_partitions(self, topic: str) -> list[tuple[str, int]]:
        return [(topic, p.partition) for p in await self._topic_metadata(topic)]

    async def reset_share_offsets(self, group_id: str, targets: dict[tuple[str, int], int]) -> None:
        """AlterShareGroupOffsets: the group's start offsets; only for an Empty group."""
        topics: dict[str, list[ShareOffsetToSet]] = {}
        for (t, p), o in sorted(targets.items()):
            topics.setdefault(t, []).append(ShareOffsetToSet(p, o))
        request = AlterShareGroupOffsetsRequest(
            group_id, [ShareTopicToSet(t, ps) for t, ps in topics.items()]
        )
        resp: AlterShareGroupOffsetsResponse = await self._ask(group_id, request)
        if resp.error_code == NonEmptyGroupError.code:
            raise NonEmptyGroupError(f"Share group '{group_id}' is not empty.")
        if resp.error_code != NONE:
            raise for_code(resp.error_code)(resp.error_message or f"group {group_id!r}")
        for altered in resp.topics:
            for part in altered.partitions:
                if part.error_code != NONE:
                    what = part.error_message or f"{altered.topic}-{part.partition}"
                    raise for_code(part.error_code)(what)

    async def delete_share_offsets(
        self, group_id: str, topics: list[str]
    ) -> dict[str, tuple[int, str | None]]:
        """DeleteShareGroupOffsets: forget the group's state on `topics` (an Empty group); each
        topic's (error code, message), as kafka-share-groups.sh reports them. A group-level
        error raises (NON_EMPTY_GROUP with Kafka's tool's line)."""
        request = DeleteShareGroupOffsetsRequest(group_id, topics)
        resp: DeleteShareGroupOffsetsResponse = await self._ask(group_id, request)
        if resp.error_code == NonEmptyGroupError.code:
            raise NonEmptyGroupError(f"Share group '{group_id}' is not empty.")
        if resp.error_code != NONE:
            raise for_code(resp.error_code)(resp.error_message or f"group {group_id!r}")
        return {d.topic: (d.error_code, d.error_message) for d in resp.topics}
