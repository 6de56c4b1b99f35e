"""SyncGroup (classic Kafka groups): the leader hands out the assignment and every member gets
its part (coordinator/group/group.py `sync`); a follower's waits for the leader's. A static
member (KIP-345) names its group instance id: a fenced one gets FENCED_INSTANCE_ID. The answer
carries the group's protocol type and chosen assignor as the coordinator has them (None when
it has no such group; the request's, as Kafka answers, for a classic member inside a consumer
group).

Refusals, in order: no Read on the group (GROUP_AUTHORIZATION_FAILED), then no group
coordinator on this broker (COORDINATOR_NOT_AVAILABLE). The native door has no SyncGroup: its
JoinGroup answers with the assignment.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import GroupAuthorizationFailedError

API = "SyncGroup"


@dataclass(frozen=True, slots=True)
class SyncGroup:
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[tuple[str, bytes], ...] = ()  # the leader's: (member id, assignment)
    protocol_type: str | None = None  # v5+: checked against the group's
    protocol_name: str | None = None
    group_instance_id: str | None = None  # a static member's (KIP-345)


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    error_code: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


async def run(ctx: BrokerContext, session: Session, req: SyncGroup) -> SyncGroupResult:
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api=API):
        return SyncGroupResult(GroupAuthorizationFailedError.code)
    answer = await ctx.groups.sync(
        req.group_id, req.generation_id, req.member_id, dict(req.assignments),
        req.protocol_type, req.protocol_name, req.group_instance_id or None,
    )  # fmt: skip
    group = ctx.groups.group_view(req.group_id)[1]
    if ctx.groups.consumer.is_consumer_group(req.group_id):  # a classic member inside (KIP-848)
        return SyncGroupResult(
            answer.error_code, answer.assignment, req.protocol_type, req.protocol_name
        )
    if group is None:
        return SyncGroupResult(answer.error_code, answer.assignment)
    return SyncGroupResult(
        answer.error_code, answer.assignment, group.protocol_type, group.strategy
    )
