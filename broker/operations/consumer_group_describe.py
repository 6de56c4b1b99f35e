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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

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
    return ConsumerGroupDescribeResult(describe_each(
        ctx, session, API, req.group_ids, req.include_authorized_operations, _describe, Described,
    ))  # fmt: skip


class Answer(Protocol):
    @property
    def error_code(self) -> int: ...


A = TypeVar("A", bound=Answer)


def describe_each(
    ctx: BrokerContext, session: Session, api: str, group_ids: tuple[str, ...],
    include_operations: bool, describe: Callable[[BrokerContext, str], A],
    refused: Callable[[str, int, str | None], A],
) -> tuple[A, ...]:  # fmt: skip
    """Each group asked, in order: refused without Describe on it (one check for all), else
    `describe`d, with the principal's operations on it when asked (KIP-430) and described;
    ConsumerGroupDescribe's and ShareGroupDescribe's common walk."""
    denied = rules.denied(ctx, session, rules.DESCRIBE, rules.GROUP, group_ids, api=api)
    out = []
    for gid in group_ids:
        if gid in denied:
            err = rules.refusal(session, rules.DESCRIBE, rules.GROUP, gid)
            out.append(refused(gid, err.code, err.message))
            continue
        described = describe(ctx, gid)
        if include_operations and described.error_code == 0:
            ops = rules.authorized_operations(ctx, session, rules.GROUP, gid)
            described = dataclasses.replace(described, authorized_operations=ops)  # type: ignore[type-var]
        out.append(described)
    return tuple(out)


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
               assigned_topics(ctx, m.assignment.assigned),
               assigned_topics(ctx, group.target.get(m.member_id, {})), m.classic is not None)
        for m in sorted(group.members.values(), key=lambda m: m.member_id)
    )  # fmt: skip


def assigned_topics(
    ctx: BrokerContext, parts: Mapping[uuid.UUID, frozenset[int]]
) -> tuple[AssignedTopic, ...]:
    return tuple(
        AssignedTopic(t, ctx.metadata.topic_by_id(t), tuple(sorted(ps)))
        for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0]))
        if ps
    )
