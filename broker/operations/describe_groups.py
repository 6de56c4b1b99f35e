"""DescribeGroups: each asked group's state (native and Kafka's name), generation, protocol
and members, in the order asked. A classic group's members come in join order (as Kafka lists
them) with their metadata for the chosen protocol and their assignment: a Kafka group's as the
leader sent it in SyncGroup (`assignment_bytes`), a native group's as partitions
(`assignment`); each codec turns the one its door cannot say into the other. A KIP-848
consumer group is described with its epochs and each member's target assignment (the native
door shows it; Kafka's DescribeGroups v0-v5 answer it as Dead, the Kafka codec's concern).

Refusals, each per group: no Describe on it is GROUP_AUTHORIZATION_FAILED (state ""); no group
coordinator on this broker COORDINATOR_NOT_AVAILABLE, not its coordinator NOT_COORDINATOR (the
client finds the coordinator again), an unknown group GROUP_ID_NOT_FOUND (Kafka v6's answer;
v0-v5 say NONE and Dead, the Kafka codec's concern); those are Dead. With
`include_authorized_operations` (KIP-430) each described group carries the principal's
operations on it as a bit field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.consumer_service import consumer_of
from coordinator.group.group import Group
from coordinator.group.states import State, kafka_name
from protocol.api.group import GroupDescription
from protocol.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
)

API = "DescribeGroups"
NO_OPERATIONS = -2147483648  # Kafka's "not asked" (INT32_MIN)
DEAD = State.DEAD.value

Partitions = tuple[tuple[str, tuple[int, ...]], ...]  # (topic, partitions) by topic


@dataclass(frozen=True, slots=True)
class DescribeGroups:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None
    metadata: bytes  # a Kafka member's for the chosen protocol; b"": a native one
    assignment: Partitions | None  # None: a Kafka group's, in assignment_bytes
    assignment_bytes: bytes | None  # as the leader sent it; None: a native group's
    member_epoch: int = -1  # a consumer group's (KIP-848)
    target: Partitions | None = None  # a consumer group's target assignment


@dataclass(frozen=True, slots=True)
class Described:
    error_code: int
    group_id: str
    state: str  # the native name; "" when refused
    kafka_state: str  # Kafka's name; "" when refused
    generation_id: int = -1
    protocol_type: str | None = None  # None: a native group (or one with no members)
    protocol: str = ""  # the assignor chosen
    members: tuple[Member, ...] = ()
    group_type: str = "classic"
    group_epoch: int = -1
    target_assignment_epoch: int = -1
    authorized_operations: int = NO_OPERATIONS


@dataclass(frozen=True, slots=True)
class DescribeGroupsResult:
    groups: tuple[Described, ...]  # in the order asked


def run(ctx: BrokerContext, session: Session, req: DescribeGroups) -> DescribeGroupsResult:
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.GROUP, req.group_ids, api=API)
    out = []
    for gid in req.group_ids:
        if gid in refused:
            out.append(Described(GroupAuthorizationFailedError.code, gid, "", ""))
            continue
        described = _describe(ctx, gid)
        if req.include_authorized_operations and described.error_code == 0:
            ops = rules.authorized_operations(ctx, session, rules.GROUP, gid)
            described = dataclasses.replace(described, authorized_operations=ops)
        out.append(described)
    return DescribeGroupsResult(tuple(out))


def _describe(ctx: BrokerContext, gid: str) -> Described:
    code, group = ctx.groups.group_view(gid)
    if group is None:
        return _dead(gid, code or GroupIdNotFoundError.code)
    if consumer_of(group) is not None:
        consumer = ctx.groups.consumer.describe(group)
        assert consumer is not None
        return _consumer(consumer)
    return Described(
        0, gid, group.state.value, kafka_name(group.state), group.generation,
        group.protocol_type, group.strategy or "", _members(group),
    )  # fmt: skip


def _members(group: Group) -> tuple[Member, ...]:
    kafka = group.is_kafka
    return tuple(
        Member(m.member_id, m.client_id, m.client_host, m.instance_id,
               m.metadata_for(group.strategy) if kafka else b"",
               None if kafka else _partitions(m.assignment),
               m.assignment_bytes if kafka else None)
        for m in group.members.values()
    )  # fmt: skip


def _consumer(d: GroupDescription) -> Described:
    members = tuple(
        Member(m.member_id, m.client_id, m.client_host, m.group_instance_id, b"",
               tuple((t.topic, tuple(t.partitions)) for t in m.assignment), None,
               m.member_epoch,
               None if m.target_assignment is None else
               tuple((t.topic, tuple(t.partitions)) for t in m.target_assignment))
        for m in d.members
    )  # fmt: skip
    return Described(d.error_code, d.group_id, d.state, d.kafka_state or d.state,
                     d.generation_id, d.protocol_type, d.assignment_strategy, members,
                     d.group_type, d.group_epoch, d.target_assignment_epoch)  # fmt: skip


def _partitions(tps: Iterable[tuple[str, int]]) -> Partitions:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(tps):
        by_topic.setdefault(topic, []).append(partition)
    return tuple((t, tuple(ps)) for t, ps in by_topic.items())


def _dead(gid: str, code: int) -> Described:
    return Described(code, gid, DEAD, kafka_name(State.DEAD))
