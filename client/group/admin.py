"""Group administration for the CLI and tools: list, describe (with lag), reset offsets, delete.

`GroupAdmin` sits on a `Cluster`: ListGroups goes to every broker (each knows only the groups
it coordinates); the other requests go to the group's coordinator (FindCoordinator first).
`describe` joins DescribeGroups, OffsetFetch and ListOffsets into seed 004's listing:
GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG OWNER.

Kafka clients' groups (Kafka's classic protocol, on the same coordinator) are described over
the same native requests: the coordinator decodes each member's assignment, and OWNER shows a
Kafka client as `client-id@host`, as Kafka's CLIENT-ID and HOST columns would. As with Kafka's
tool, offsets are reset and groups deleted only while the group has no members (Empty).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from client.cluster import Cluster
from client.connection import BrokerConnection
from protocol.api.group import (
    CommitPartition,
    CommitTopic,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    GroupDescription,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    MemberDescription,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from protocol.api.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.errors import (
    GroupIdNotFoundError,
    NonEmptyGroupError,
    OdradekError,
    UnknownMemberIdError,
    UsageError,
    for_code,
)

NONE = 0
RETRIES = 20


@dataclass(frozen=True, slots=True)
class LagRow:
    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int
    owner: str | None

    @property
    def lag(self) -> int | None:
        return None if self.current_offset is None else self.log_end_offset - self.current_offset


class GroupAdmin:
    def __init__(self, bootstrap_servers: str | Iterable[str], request_timeout_ms: int = 30_000):
        self.cluster = Cluster(bootstrap_servers, request_timeout_ms=request_timeout_ms)
        self.timeout_ms = request_timeout_ms

    async def __aenter__(self) -> GroupAdmin:
        await self.cluster.request_update()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.cluster.close()

    async def _coordinator(self, group_id: str) -> BrokerConnection:
        for _ in range(RETRIES):
            resp: FindCoordinatorResponse = await self.cluster.send_to_any(
                FindCoordinatorRequest(group_id), self.timeout_ms
            )
            if resp.error_code == NONE:
                return await BrokerConnection.connect(resp.host, resp.port)
            if not for_code(resp.error_code).retriable:
                raise for_code(resp.error_code)(resp.error_message)
            await asyncio.sleep(0.25)
        raise for_code(resp.error_code)(resp.error_message)

    async def _ask(self, group_id: str, request: Any) -> Any:
        """Send to the group's coordinator, retrying while it moves or loads."""
        last: OdradekError | None = None
        for _ in range(RETRIES):
            conn = await self._coordinator(group_id)
            try:
                resp = await conn.send(request, self.timeout_ms)
            finally:
                await conn.close()
            code = _first_code(resp)
            if code == NONE or not for_code(code).retriable:
                return resp
            last = for_code(code)()
            await asyncio.sleep(0.25)
        raise last or OdradekError("coordinator not found")

    async def list_groups(self) -> list[tuple[str, str]]:
        return [(g.group_id, g.state) for g in await self.listed_groups()]

    async def listed_groups(self) -> list[ListedGroup]:
        """Every group of every broker, with its kind and Kafka's state name."""
        meta = await self.cluster.request_update()
        found: dict[str, ListedGroup] = {}
        for node in meta.brokers:
            conn = await self.cluster.connection(node)
            resp: ListGroupsResponse = await conn.send(ListGroupsRequest(None), self.timeout_ms)
            found.update({g.group_id: g for g in resp.groups})
        return [found[g] for g in sorted(found)]

    async def describe_group(self, group_id: str) -> GroupDescription:
        resp: DescribeGroupsResponse = await self._ask(group_id, DescribeGroupsRequest([group_id]))
        (desc,) = resp.groups
        if desc.error_code != NONE:
            raise for_code(desc.error_code)(f"group {group_id!r}")
        return desc

    async def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        resp: OffsetFetchResponse = await self._ask(group_id, OffsetFetchRequest(group_id, None))
        if resp.error_code != NONE:
            raise for_code(resp.error_code)(f"group {group_id!r}")
        return {(t.name, p.partition): p.offset for t in resp.topics for p in t.partitions
                if p.offset >= 0}  # fmt: skip

    async def lag(self, group_id: str) -> tuple[GroupDescription, list[LagRow]]:
        desc = await self.describe_group(group_id)
        committed = await self.committed(group_id)
        owners = {(tp.topic, p): owner(desc, m) for m in desc.members
                  for tp in m.assignment for p in tp.partitions}  # fmt: skip
        tps = sorted(set(committed) | set(owners))
        ends = await self.offsets(tps, LATEST_TIMESTAMP)
        rows = [LagRow(group_id, t, p, committed.get((t, p)), ends.get((t, p), -1),
                       owners.get((t, p))) for t, p in tps]  # fmt: skip
        return desc, rows

    async def offsets(
        self, tps: list[tuple[str, int]], timestamp: int
    ) -> dict[tuple[str, int], int]:
        self.cluster.add_topics(t for t, _ in tps)
        meta = await self.cluster.request_update()
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for t, p in tps:
            by_leader.setdefault(meta.leader_for(t, p), []).append((t, p))
        out: dict[tuple[str, int], int] = {}
        for leader, parts in by_leader.items():
            if leader < 0:
                continue
            topics: dict[str, list[ListOffsetsPartition]] = {}
            for t, p in parts:
                topics.setdefault(t, []).append(ListOffsetsPartition(p, timestamp, -1))
            conn = await self.cluster.connection(leader)
            req = ListOffsetsRequest(-1, [ListOffsetsTopic(t, ps) for t, ps in topics.items()])
            resp: ListOffsetsResponse = await conn.send(req, self.timeout_ms)
            for topic in resp.topics:
                for part in topic.partitions:
                    if part.error_code == NONE:
                        out[(topic.name, part.partition)] = part.offset
        return out

    async def reset_offsets(self, group_id: str, topic: str, to: str, offset: int | None = None
                            ) -> dict[int, int]:  # fmt: skip
        """Commit new offsets for every partition of `topic`; only for an inactive group."""
        await self._require_empty(group_id, "resetting offsets")
        meta = await self._topic_metadata(topic)
        parts = [(topic, p.partition) for p in meta]
        if to == "offset":
            if offset is None or offset < 0:
                raise UsageError("--to-offset needs a non-negative offset")
            targets = {tp: offset for tp in parts}
        else:
            ts = EARLIEST_TIMESTAMP if to == "earliest" else LATEST_TIMESTAMP
            targets = await self.offsets(parts, ts)
        request = OffsetCommitRequest(group_id, -1, "", [CommitTopic(
            topic, [CommitPartition(p, o) for (_, p), o in sorted(targets.items())])])  # fmt: skip
        resp: OffsetCommitResponse = await self._ask(group_id, request)
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code == UnknownMemberIdError.code:
                    raise NonEmptyGroupError(
                        f"group {group_id!r} has members: stop them before resetting offsets"
                    )
                if p.error_code != NONE:
                    raise for_code(p.error_code)(f"{topic}-{p.partition}")
        return {p: o for (_, p), o in sorted(targets.items())}

    async def _topic_metadata(self, topic: str) -> list[Any]:
        self.cluster.add_topics([topic])
        meta = await self.cluster.request_update()
        parts = meta.partitions_for(topic)
        if not parts:
            raise for_code(meta.topic_errors.get(topic, 3))(f"topic {topic!r}")
        return parts

    async def delete_group(self, group_id: str) -> None:
        await self._require_empty(group_id, "deleting the group")
        resp: DeleteGroupsResponse = await self._ask(group_id, DeleteGroupsRequest([group_id]))
        for result in resp.results:
            if result.error_code == NonEmptyGroupError.code:  # a member joined meanwhile
                raise NonEmptyGroupError(f"group {group_id!r} has members: stop them first")
            if result.error_code != NONE:
                raise for_code(result.error_code)(f"group {group_id!r}")

    async def _require_empty(self, group_id: str, doing: str) -> None:
        """Refuse, naming the group's state, unless it has no members (as Kafka's tool). The
        coordinator refuses too; this says why before anything is sent."""
        try:
            desc = await self.describe_group(group_id)
        except GroupIdNotFoundError:
            return  # no such group yet: a reset creates it, a delete reports it
        if desc.members:
            raise NonEmptyGroupError(
                f"group {group_id!r} has members ({len(desc.members)}, state "
                f"{state_name(desc)}): stop them before {doing}; only an Empty group can be"
            )


def state_name(desc: GroupDescription) -> str:
    """Kafka's name for a Kafka group's state (Stable, ...), odradek's for a native group's."""
    return desc.kafka_state if desc.protocol_type is not None and desc.kafka_state else desc.state


def owner(desc: GroupDescription, member: MemberDescription) -> str:
    """The OWNER column: a Kafka client as `client-id@host` (its CLIENT-ID and HOST in Kafka's
    tool), an odradek consumer by its client id (or member id)."""
    name = member.client_id or member.member_id
    if desc.protocol_type is not None:
        return f"{name}@{member.client_host or '-'}"
    return name


def _first_code(resp: Any) -> int:
    """The first error code in a coordinator response (to tell 'retry elsewhere' apart)."""
    if hasattr(resp, "error_code"):
        return int(resp.error_code)
    for attr in ("groups", "results"):
        for item in getattr(resp, attr, []) or []:
            return int(item.error_code)
    for t in getattr(resp, "topics", []) or []:
        for p in t.partitions:
            return int(p.error_code)
    return NONE
