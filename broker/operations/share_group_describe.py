"""ShareGroupDescribe (KIP-932, Kafka only, v1): each asked share group's state, epochs,
assignor ("simple") and members (epoch, subscription, assignment by topic id with each
topic's name where the metadata cache knows it; members sorted by id), in the order asked.
With `include_authorized_operations` (KIP-430) a described group carries the principal's
operations on it.

Refusals, each per group: no Describe on it is GROUP_AUTHORIZATION_FAILED; not its coordinator
NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while loading); an unknown group, or one that
is a classic or consumer group, GROUP_ID_NOT_FOUND with Kafka's message; those are Dead.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.consumer_group_describe import (
    NO_OPERATIONS,
    AssignedTopic,
    assigned_topics,
    describe_each,
)
from broker.session import Session
from coordinator.group.share_assignor import NAME as ASSIGNOR
from coordinator.group.share_group import ShareGroup

API = "ShareGroupDescribe"
GROUP_ID_NOT_FOUND = 69


@dataclass(frozen=True, slots=True)
class ShareGroupDescribe:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[AssignedTopic, ...]


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
class ShareGroupDescribeResult:
    groups: tuple[Described, ...]  # in the order asked


def run(ctx: BrokerContext, session: Session, req: ShareGroupDescribe) -> ShareGroupDescribeResult:
    return ShareGroupDescribeResult(describe_each(
        ctx, session, API, req.group_ids, req.include_authorized_operations, _describe, Described,
    ))  # fmt: skip


def _describe(ctx: BrokerContext, gid: str) -> Described:
    code, group = ctx.groups.share.find(gid)
    if code:
        return Described(gid, code, None, "Dead")
    if group is None:
        _, other = ctx.groups.group_view(gid)
        why = f"Group {gid} " + ("not found." if other is None else "is not a share group.")
        return Described(gid, GROUP_ID_NOT_FOUND, why, "Dead")
    return Described(
        gid, 0, None, group.state.value, group.group_epoch, group.assignment_epoch, ASSIGNOR,
        _members(ctx, group),
    )  # fmt: skip


def _members(ctx: BrokerContext, group: ShareGroup) -> tuple[Member, ...]:
    return tuple(
        Member(m.member_id, m.rack_id, m.epoch, m.client_id, m.client_host,
               tuple(sorted(m.subscribed_topic_names)), assigned_topics(ctx, m.assignment))
        for m in sorted(group.members.values(), key=lambda m: m.member_id)
    )  # fmt: skip
