"""LeaveGroup (13), v0-v4: members leave at once (a rebalance starts for the rest), through the
same service as the native LeaveGroup. v3+ names several members."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from protocol.errors import CoordinatorNotAvailableError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import LEAVE_GROUP


async def handle(ctx: BrokerContext, request: KafkaRequest) -> Any:
    req = request.body
    version = request.header.api_version
    member_ids = [m.member_id for m in req.members] if version >= 3 else [req.member_id]
    codes = []
    for member_id in member_ids:
        if ctx.groups is None:
            codes.append(CoordinatorNotAvailableError.code)
        else:
            codes.append(await ctx.groups.leave(req.group_id, member_id))
    cls = response_class(LEAVE_GROUP, version)
    member_cls = nested(cls, "MemberResponse") if version >= 3 else None
    members = tuple(
        make(member_cls, member_id=m, group_instance_id=None, error_code=c)
        for m, c in zip(member_ids, codes, strict=True)
    ) if member_cls is not None else ()  # fmt: skip
    top = codes[0] if version < 3 and codes else 0
    return make(cls, throttle_time=0, error_code=top, members=members)
