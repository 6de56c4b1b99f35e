"""LeaveGroup (13), v0-v5: members leave at once (a rebalance starts for the rest), through the
same service as the native LeaveGroup. v3+ names several members, each by member id and/or
group instance id (KIP-345): member id "" with an instance id removes that static member (an
admin's removeMembersFromConsumerGroup); each member gets its own error code (UNKNOWN_MEMBER_ID,
FENCED_INSTANCE_ID when the instance id is another member's). v5 adds a reason (logged)."""

from __future__ import annotations

import logging
from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import CoordinatorNotAvailableError, GroupAuthorizationFailedError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import LEAVE_GROUP

log = logging.getLogger("odradek.broker.leave_group")
BATCH_FROM = 3


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    cls = response_class(LEAVE_GROUP, version)
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api="LeaveGroup"):
        return make(cls, throttle_time=0, error_code=GroupAuthorizationFailedError.code,
                    members=())  # fmt: skip
    leaving: list[tuple[str, str | None]] = (
        [(m.member_id, m.group_instance_id or None) for m in req.members]
        if version >= BATCH_FROM else [(req.member_id, None)]
    )  # fmt: skip
    for m in req.members if version >= BATCH_FROM else ():
        if getattr(m, "reason", None):
            log.info("group %s: member %r (instance %r) leaves: %s", req.group_id, m.member_id,
                     m.group_instance_id, m.reason)  # fmt: skip
    codes = []
    for member_id, instance_id in leaving:
        if ctx.groups is None:
            codes.append(CoordinatorNotAvailableError.code)
        else:
            codes.append(await ctx.groups.leave(req.group_id, member_id, instance_id))
    member_cls = nested(cls, "MemberResponse") if version >= BATCH_FROM else None
    members = tuple(
        make(member_cls, member_id=m, group_instance_id=i, error_code=c)
        for (m, i), c in zip(leaving, codes, strict=True)
    ) if member_cls is not None else ()  # fmt: skip
    top = codes[0] if version < BATCH_FROM and codes else 0
    return make(cls, throttle_time=0, error_code=top, members=members)
