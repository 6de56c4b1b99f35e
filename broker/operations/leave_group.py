"""LeaveGroup (classic groups): members leave at once (no session timeout to wait for), and a
rebalance starts for the rest. Each member is named by member id and/or group instance id
(KIP-345): member id "" with an instance id removes that static member (an admin's
removeMembersFromConsumerGroup); a member id with another member's instance id gets
FENCED_INSTANCE_ID; each member gets its own error code. A reason given (Kafka v5) is logged.

Refusals, each for the whole request with no member listed (Kafka's GroupCoordinator answers
them before it looks at a member): no Read on the group is GROUP_AUTHORIZATION_FAILED; no group
coordinator on this broker is COORDINATOR_NOT_AVAILABLE; a group this broker does not coordinate
is NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while it loads; INVALID_GROUP_ID for ""), so a
client looks the coordinator up again instead of reading the answer as its members' fate.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import GroupAuthorizationFailedError

API = "LeaveGroup"
log = logging.getLogger("odradek.broker.leave_group")


@dataclass(frozen=True, slots=True)
class LeavingMember:
    member_id: str  # "" with an instance id: remove the static member of that id
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroup:
    group_id: str
    members: tuple[LeavingMember, ...]


@dataclass(frozen=True, slots=True)
class MemberLeft:
    member_id: str
    group_instance_id: str | None
    error_code: int


@dataclass(frozen=True, slots=True)
class LeaveGroupResult:
    error_code: int  # the whole request's refusal (then no members); members' are their own
    members: tuple[MemberLeft, ...]


async def run(ctx: BrokerContext, session: Session, req: LeaveGroup) -> LeaveGroupResult:
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api=API):
        return LeaveGroupResult(GroupAuthorizationFailedError.code, ())
    _, refusal = ctx.groups.locate(req.group_id)
    if refusal:
        return LeaveGroupResult(refusal, ())
    out = []
    for m in req.members:
        if m.reason:
            log.info("group %s: member %r (instance %r) leaves: %s", req.group_id, m.member_id,
                     m.group_instance_id, m.reason)  # fmt: skip
        code = await ctx.groups.leave(req.group_id, m.member_id, m.group_instance_id)
        out.append(MemberLeft(m.member_id, m.group_instance_id, code))
    return LeaveGroupResult(0, tuple(out))
