"""JoinGroup (classic groups): answered when the rebalance the member takes part in completes.

Two kinds of member join the same groups: a Kafka member names its protocol type and its
protocols (name, metadata), and the leader it may become gets every member's metadata to
assign with (the coordinator's `join_classic`); a native member names its topics (or a
pattern) and an assignor, and the coordinator assigns for it (`join`, the answer carries the
partitions to own). Kafka v4+ without a member id gets MEMBER_ID_REQUIRED and its id
(KIP-394, `require_known_member_id`); a static member (group instance id, KIP-345) joins at
once, and one back from a restart gets its old place without a rebalance; a static leader's
rejoin may get `skip_assignment` (KIP-814, Kafka v9). A Kafka member of a consumer group
(KIP-848, during an online migration: coordinator/group/classic_in_consumer.py) is answered at
once, as a follower, with its member epoch as the generation. A reason given (Kafka v8+) is
logged.

Refusals: no Read on the group is GROUP_AUTHORIZATION_FAILED; no group coordinator on this
broker COORDINATOR_NOT_AVAILABLE (the native door said NOT_COORDINATOR).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api import group
from protocol.errors import GroupAuthorizationFailedError

API = "JoinGroup"
log = logging.getLogger("odradek.broker.join_group")
Partitions = tuple[tuple[str, tuple[int, ...]], ...]  # (topic, partitions)


@dataclass(frozen=True, slots=True)
class NativeSubscription:
    """A native member's interest: the coordinator assigns for it."""

    topics: tuple[str, ...]
    topic_pattern: str | None
    assignment_strategy: str


@dataclass(frozen=True, slots=True)
class JoinGroup:
    group_id: str
    member_id: str  # "": a new member
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str = ""
    client_host: str = ""
    group_instance_id: str | None = None
    protocol_type: str = ""  # a Kafka member's ("consumer", "connect", ...)
    protocols: tuple[tuple[str, bytes], ...] = ()  # a Kafka member's (name, metadata)
    native: NativeSubscription | None = None  # a native member's, else None
    require_known_member_id: bool = False  # Kafka v4+ (KIP-394)
    skip_assignment_allowed: bool = False  # Kafka v9+ (KIP-814)
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    error_code: int
    generation_id: int
    member_id: str
    error_message: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinedMember, ...] = ()  # the leader's: every member's metadata
    partitions_to_own: Partitions = ()  # a native member's assignment


async def run(ctx: BrokerContext, session: Session, req: JoinGroup) -> JoinGroupResult:
    if req.reason:
        log.info("group %s: member %r (instance %r) joins: %s", req.group_id, req.member_id,
                 req.group_instance_id, req.reason)  # fmt: skip
    if not rules.allows(ctx, session, rules.READ, rules.GROUP, req.group_id, api=API):
        return JoinGroupResult(GroupAuthorizationFailedError.code, -1, req.member_id)
    if req.native is not None:
        n = req.native
        joined = await ctx.groups.join(group.JoinGroupRequest(
            req.group_id, req.session_timeout_ms, list(n.topics), req.member_id,
            n.assignment_strategy, req.rebalance_timeout_ms, req.client_id, n.topic_pattern,
            req.group_instance_id,
        ))  # fmt: skip
        return JoinGroupResult(
            joined.error_code, joined.generation_id, joined.member_id, joined.error_message,
            partitions_to_own=tuple((t.topic, tuple(t.partitions))
                                    for t in joined.partitions_to_own),
        )  # fmt: skip
    answer = await ctx.groups.join_classic(
        req.group_id, req.member_id, req.client_id, req.client_host, req.session_timeout_ms,
        req.rebalance_timeout_ms, req.protocol_type, list(req.protocols),
        req.require_known_member_id, req.group_instance_id, req.skip_assignment_allowed,
    )  # fmt: skip
    return JoinGroupResult(
        answer.error_code, answer.generation_id, answer.member_id, answer.error_message,
        answer.protocol_type, answer.protocol_name, answer.leader, answer.skip_assignment,
        tuple(JoinedMember(m, answer.instances.get(m), md) for m, md in answer.members),
    )  # fmt: skip
