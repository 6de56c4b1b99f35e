"""Group administration for the CLI and tools: list, describe (with lag), reset offsets, delete.

`GroupAdmin` sits on a `Cluster`: ListGroups goes to every broker (each knows only the groups
it coordinates); the other requests go to the group's coordinator (FindCoordinator first).
`describe` joins DescribeGroups, OffsetFetch and ListOffsets into seed 004's listing:
GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG OWNER.

The coordinator moves (its broker died, the group's offsets partition got a new leader): every
request follows it within one deadline, `request_timeout_ms` from the call. FindCoordinator is
asked again, after `RETRY_BACKOFF_S`, while the answer is a retriable error (no coordinator yet),
the broker it names refuses connections (its death not yet noticed), or that broker answers
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS. ListGroups and
ListOffsets retry the same way while a broker the metadata still lists cannot be reached. The
error raised at the deadline is the last one met, saying how long it was tried.

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
from client.group_offsets_admin import commit_request, raise_commit_errors
from client.types import TopicPartition
from protocol.api.group import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    GroupDescription,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    MemberDescription,
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
    UsageError,
    for_code,
)
from transport.connection import BrokerConnection
from transport.security import SecurityConfig

NONE = 0
RETRY_BACKOFF_S = 0.25  # between attempts to find and reach a moving coordinator


@dataclass(frozen=True, slots=True)
class LagRow:
    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None  # None: not known (the partition has no leader, or it is down)
    owner: str | None

    @property
    def lag(self) -> int | None:
        """None when either offset is not known: a lag from a missing end would be a lie."""
        if self.current_offset is None or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.current_offset


class GroupAdmin:
    def __init__(
        self, bootstrap_servers: str | Iterable[str], request_timeout_ms: int = 30_000,
        **security: Any,
    ) -> None:  # fmt: skip
        """`security`: TLS/SASL settings, kafka-python's names (transport/security.py)."""
        self.cluster = Cluster(bootstrap_servers, request_timeout_ms=request_timeout_ms,
                               security=SecurityConfig.from_options(security))  # fmt: skip
        self.timeout_ms = request_timeout_ms

    async def __aenter__(self) -> GroupAdmin:
        await self.cluster.request_update()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.cluster.close()

    def _deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.timeout_ms / 1000

    @staticmethod
    def _left_ms(deadline: float) -> float:
        return max(1.0, (deadline - asyncio.get_running_loop().time()) * 1000)

    async def _retry_or_raise(self, deadline: float, last: OdradekError, what: str) -> None:
        """Back off before the next attempt, or raise `last` (retriable) once time is up."""
        if asyncio.get_running_loop().time() + RETRY_BACKOFF_S >= deadline:
            raise type(last)(f"{what}: still failing after {self.timeout_ms} ms: {last.message}")
        await asyncio.sleep(RETRY_BACKOFF_S)

    async def find_coordinator(self, group_id: str, deadline: float | None = None) -> int:
        """The node id of the group's coordinator (retried while none is known)."""
        conn, node_id = await self._connect_coordinator(group_id, deadline)
        await conn.close()
        return node_id

    async def _coordinator(self, group_id: str, deadline: float | None = None) -> BrokerConnection:
        conn, _node_id = await self._connect_coordinator(group_id, deadline)
        return conn

    async def _connect_coordinator(
        self, group_id: str, deadline: float | None
    ) -> tuple[BrokerConnection, int]:
        """FindCoordinator, then a connection of our own to it (closed by the caller);
        retriable failures of either are retried until `deadline`."""
        deadline = self._deadline() if deadline is None else deadline
        while True:
            try:
                resp: FindCoordinatorResponse = await self.cluster.send_to_any(
                    FindCoordinatorRequest(group_id), self._left_ms(deadline), read=True
                )
                if resp.error_code != NONE:
                    why = resp.error_message or "FindCoordinator refused"
                    raise for_code(resp.error_code)(f"group {group_id!r}: {why}")
                conn = await BrokerConnection.connect(
                    resp.host, resp.port, client_id=self.cluster.client_id,
                    connect_timeout_ms=int(min(self._left_ms(deadline), 5000)),
                    security=self.cluster.security,
                )  # fmt: skip
                return conn, resp.node_id
            except OdradekError as exc:
                if not exc.retriable:
                    raise
                await self._retry_or_raise(deadline, exc, f"group {group_id!r}: no coordinator")

    async def _ask(self, group_id: str, request: Any) -> Any:
        """Send to the group's coordinator, following it while it moves or loads."""
        deadline = self._deadline()
        while True:
            conn = await self._coordinator(group_id, deadline)  # retries until the deadline
            try:
                resp = await conn.send(request, self._left_ms(deadline))
            except OdradekError as exc:
                if not exc.retriable:
                    raise
                last = exc
            else:
                code = _first_code(resp)
                if code == NONE or not for_code(code).retriable:
                    return resp
                last = for_code(code)(f"group {group_id!r}")
            finally:
                await conn.close()
            await self._retry_or_raise(deadline, last, f"group {group_id!r}")

    async def list_groups(self) -> list[tuple[str, str]]:
        return [(g.group_id, g.state) for g in await self.listed_groups()]

    async def listed_groups(self) -> list[ListedGroup]:
        """Every group of every broker, with its kind and Kafka's state name. A broker that
        cannot be reached (dead, still in the metadata) means asking all again, until the
        deadline: its groups move to the others."""
        deadline = self._deadline()
        while True:
            try:
                return await self._list_groups_once(deadline)
            except OdradekError as exc:
                if not exc.retriable:
                    raise
                await self._retry_or_raise(deadline, exc, "listing groups")

    async def _list_groups_once(self, deadline: float) -> list[ListedGroup]:
        meta = await self.cluster.request_update()
        found: dict[str, ListedGroup] = {}
        for node in meta.brokers:
            conn = await self.cluster.connection(node)
            request = ListGroupsRequest(None)
            resp: ListGroupsResponse = await conn.send(request, self._left_ms(deadline))
            if resp.error_code != NONE:  # loading its groups, say: asked again
                raise for_code(resp.error_code)(f"ListGroups at broker {node}")
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
        rows = [LagRow(group_id, t, p, committed.get((t, p)), ends.get((t, p)),
                       owners.get((t, p))) for t, p in tps]  # fmt: skip
        return desc, rows

    async def offsets(
        self, tps: list[tuple[str, int]], timestamp: int
    ) -> dict[tuple[str, int], int]:
        """Each partition's offset at `timestamp` (-1 latest, -2 earliest), from its leader.
        Partitions without a leader are left out; a leader that cannot be reached (it died,
        the metadata does not know yet) or answers a retriable error is asked again after a
        metadata refresh, until the deadline."""
        self.cluster.add_topics(t for t, _ in tps)
        deadline = self._deadline()
        out: dict[tuple[str, int], int] = {}
        pending = list(tps)
        while True:
            meta = await self.cluster.request_update()
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for t, p in pending:
                by_leader.setdefault(meta.leader_for(t, p), []).append((t, p))
            by_leader.pop(-1, None)  # no leader: no log end offset to show
            pending, last = [], None
            for leader, parts in by_leader.items():
                try:
                    codes = await self._list_offsets(leader, parts, timestamp, deadline)
                except OdradekError as exc:
                    if not exc.retriable:
                        raise
                    pending, last = pending + parts, exc
                    continue
                for tp, (code, offset) in codes.items():
                    if code == NONE:
                        out[tp] = offset
                    elif for_code(code).retriable:
                        pending.append(tp)
                        last = for_code(code)(f"{tp[0]}-{tp[1]}")
            if last is None:
                return out
            await self._retry_or_raise(deadline, last, "listing offsets")

    async def _list_offsets(
        self, leader: int, parts: list[tuple[str, int]], timestamp: int, deadline: float
    ) -> dict[tuple[str, int], tuple[int, int]]:
        topics: dict[str, list[ListOffsetsPartition]] = {}
        for t, p in parts:
            topics.setdefault(t, []).append(ListOffsetsPartition(p, timestamp, -1))
        conn = await self.cluster.connection(leader)
        req = ListOffsetsRequest(-1, [ListOffsetsTopic(t, ps) for t, ps in topics.items()])
        resp: ListOffsetsResponse = await conn.send(req, self._left_ms(deadline))
        return {(t.name, p.partition): (p.error_code, p.offset) for t in resp.topics
                for p in t.partitions}  # fmt: skip

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
        request = commit_request(group_id, {TopicPartition(*tp): o for tp, o in targets.items()})
        raise_commit_errors(group_id, await self._ask(group_id, request))
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

    async def remove_members(self, group_id: str, instance_ids: list[str]) -> dict[str, int]:
        """Remove static members by group instance id (KIP-345, as Kafka's
        removeMembersFromConsumerGroup): each leaves at once, so the group rebalances now
        instead of at the member's session timeout. The error code of each instance id (NONE,
        or UNKNOWN_MEMBER_ID for one the group does not have)."""
        codes = {}
        for instance_id in instance_ids:
            request = LeaveGroupRequest(group_id, "", instance_id)
            resp: LeaveGroupResponse = await self._ask(group_id, request)
            codes[instance_id] = resp.error_code
        return codes

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
            if p.error_code != NONE:  # any partition's (one the coordinator's cache lacks)
                return int(p.error_code)
    return NONE
