"""JoinGroup (11), v0-v9: a Kafka consumer joins a group on the coordinator's classic protocol
(coordinator/group/group.py `join_classic`): answered when the rebalance completes, the leader
with every member's metadata. v4+ without a member id gets MEMBER_ID_REQUIRED and its id
(KIP-394). v5+ carries group_instance_id (static membership, KIP-345): a static member joins
at once, and one back from a restart gets its old place without a rebalance. v6+ is flexible,
v7 answers the protocol type and name, v8 brings a reason (logged only), v9 answers
skip_assignment (KIP-814: a static leader's rejoin gets the members but must not assign)."""

from __future__ import annotations

import logging
from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.group import ClassicJoinAnswer
from protocol.errors import CoordinatorNotAvailableError, GroupAuthorizationFailedError
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class
from protocol.kafka.versions import JOIN_GROUP

log = logging.getLogger("odradek.broker.join_group")
REQUIRE_KNOWN_MEMBER_ID_FROM = 4
SKIP_ASSIGNMENT_FROM = 9


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    instance_id = getattr(req, "group_instance_id", None) or None
    if getattr(req, "reason", None):
        log.info("group %s: member %r (instance %r) joins: %s", req.group_id, req.member_id,
                 instance_id, req.reason)  # fmt: skip
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api="JoinGroup"):
        answer = ClassicJoinAnswer(GroupAuthorizationFailedError.code, -1, None, None, "",
                                   req.member_id)  # fmt: skip
    elif ctx.groups is None:
        answer = ClassicJoinAnswer(CoordinatorNotAvailableError.code, -1, None, None, "",
                                   req.member_id)  # fmt: skip
    else:
        session_ms = millis(req.session_timeout)
        rebalance_ms = millis(getattr(req, "rebalance_timeout", req.session_timeout))
        answer = await ctx.groups.join_classic(
            req.group_id, req.member_id, request.header.client_id or "", request.client_host,
            session_ms, rebalance_ms, req.protocol_type,
            [(p.name, bytes(p.metadata)) for p in req.protocols],
            version >= REQUIRE_KNOWN_MEMBER_ID_FROM, instance_id,
            version >= SKIP_ASSIGNMENT_FROM,
        )  # fmt: skip
    cls = response_class(JOIN_GROUP, version)
    member_cls = nested(cls, "JoinGroupResponseMember")
    return make(
        cls, throttle_time=0, error_code=answer.error_code, generation_id=answer.generation_id,
        protocol_type=answer.protocol_type, protocol_name=answer.protocol_name or "",
        leader=answer.leader, member_id=answer.member_id, skip_assignment=answer.skip_assignment,
        members=tuple(make(member_cls, member_id=m, group_instance_id=answer.instances.get(m),
                           metadata=md)
                      for m, md in answer.members),
    )  # fmt: skip
