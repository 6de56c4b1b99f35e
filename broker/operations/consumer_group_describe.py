"""ConsumerGroupDescribe (Kafka only; KIP-848 consumer groups): each asked group's state,
epochs, assignor and members (epoch, subscription, current and target assignment by topic id,
with each topic's name where the metadata cache knows it; members sorted by id), in the order
asked; a classic-protocol member (online migration) is marked as one. With
`include_authorized_operations` (KIP-430) a described group carries the
principal's operations on it as a bit field.

Refusals, each per group: no Describe on it is GROUP_AUTHORIZATION_FAILED (state ""); no group
coordinator on this broker COORDINATOR_NOT_AVAILABLE, not its coordinator NOT_COORDINATOR; an
unknown group, a deleted one or one that is not a consumer group GROUP_ID_NOT_FOUND with
Kafka's message; those are Dead.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.consumer_group import GROUP_ID_NOT_FOUND, ConsumerGroup
from coordinator.group.consumer_service import consumer_of

API = "ConsumerGroupDescribe"
NO_OPERATIONS = -(2**31)  # Kafka's "not asked" (INT32_MIN)


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribe:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True)
class AssignedTopic:
    topic_id: uuid.UUID
    name: str | None  # None: the metadata cache does not know the id
    partitions: tuple[int, ...]  # sorted


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[AssignedTopic, ...]
    target_assignment: tuple[AssignedTopic, ...]
    classic: bool = False  # a classic-protocol member inside the group (online migration)


@dataclass(frozen=True, slots=True)
class Described:
    group_id: str
    error_code: int
    error_message: str | None = None
    state: str = ""
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor_name: str = ""
    members: tuple[Member, ...] = ()
    authorized_operations: int = NO_OPERATIONS


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeResult:
    groups: tuple[Described, ...]  # in the order asked


def run(
    ctx: BrokerContext, session: Session, req: ConsumerGroupDescribe
) -> ConsumerGroupDescribeResult:
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.GROUP, req.group_ids, api=API)
    out = []
    for gid in req.group_ids:
        if gid in refused:
            err = rules.refusal(session, rules.DESCRIBE, rules.GROUP, gid)
            out.append(Described(gid, err.code, err.message))
            continue
        described = _describe(ctx, gid)
        if req.include_authorized_operations and described.error_code == 0:
            ops = rules.authorized_operations(ctx, session, rules.GROUP, gid)
            described = dataclasses.replace(described, authorized_operations=ops)
        out.append(described)
    return ConsumerGroupDescribeResult(tuple(out))


def _describe(ctx: BrokerContext, gid: str) -> Described:
    code, found = ctx.groups.group_view(gid)
    group = consumer_of(found)
    if group is None or group.deleted:
        if code:
            return Described(gid, code, None, "Dead")
        why = f"Group {gid} " + ("not found." if found is None else "is not a consumer group.")
        return Described(gid, GROUP_ID_NOT_FOUND, why, "Dead")
    return Described(
        group.group_id, 0, None, group.state.value, group.group_epoch, group.target_epoch,
        group.preferred_assignor(ctx.groups.config.consumer), _members(ctx, group),
    )  # fmt: skip


def _members(ctx: BrokerContext, group: ConsumerGroup) -> tuple[Member, ...]:
    return tuple(
        Member(m.member_id, m.instance_id, m.rack_id, m.epoch, m.client_id, m.client_host,
               tuple(m.subscribed_topic_names), m.subscribed_topic_regex,
               _topics(ctx, m.assignment.assigned),
               _topics(ctx, group.target.get(m.member_id, {})), m.classic is not None)
        for m in sorted(group.members.values(), key=lambda m: m.member_id)
    )  # fmt: skip


def _topics(
    ctx: BrokerContext, parts: Mapping[uuid.UUID, frozenset[int]]
) -> tuple[AssignedTopic, ...]:
    return tuple(
        AssignedTopic(t, ctx.metadata.topic_by_id(t), tuple(sorted(ps)))
        for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0]))
        if ps
    )
