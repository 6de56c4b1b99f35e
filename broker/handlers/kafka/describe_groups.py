"""DescribeGroups (15), v0-v5: state (Kafka's names), protocol and members of groups this broker
coordinates. Kafka groups give their members' metadata and assignments as the clients sent them;
native groups show as protocol type "odradek" with their assignments in the consumer protocol's
encoding, so Kafka tools can list them too. v4+ shows each static member's group_instance_id."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.consumer_service import consumer_of
from coordinator.group.group import Group
from coordinator.group.states import kafka_name
from protocol.errors import CoordinatorNotAvailableError, GroupAuthorizationFailedError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.consumer_protocol import NATIVE_PROTOCOL_TYPE, encode_assignment
from protocol.kafka.versions import DESCRIBE_GROUPS

NO_OPERATIONS = -2147483648


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    cls = response_class(DESCRIBE_GROUPS, request.header.api_version)
    body = request.body
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.GROUP, body.groups,
                           api="DescribeGroups")  # fmt: skip
    asked = bool(getattr(body, "include_authorized_operations", False))  # v3+ (KIP-430)
    return make(cls, throttle_time=0, groups=tuple(
        _describe(ctx, cls, gid, gid not in refused,
                  rules.authorized_operations(ctx, session, rules.GROUP, gid)
                  if asked and gid not in refused else NO_OPERATIONS)
        for gid in body.groups))  # fmt: skip


def _describe(ctx: BrokerContext, cls: Any, group_id: str, allowed: bool, ops: int) -> Any:
    group_cls = nested(cls, "DescribedGroup")
    if not allowed:
        return make(group_cls, error_code=GroupAuthorizationFailedError.code, group_id=group_id,
                    group_state="", protocol_type="", protocol_data="", members=(),
                    authorized_operations=NO_OPERATIONS)  # fmt: skip
    if ctx.groups is None:
        code, group = CoordinatorNotAvailableError.code, None
    else:
        code, group = ctx.groups.group_view(group_id)
    if group is None or consumer_of(group) is not None:
        # Kafka answers an unknown group, and (v0-v5) a KIP-848 consumer group, as Dead
        return make(group_cls, error_code=code, group_id=group_id, group_state="Dead",
                    protocol_type="", protocol_data="", members=(),
                    authorized_operations=NO_OPERATIONS)  # fmt: skip
    member_cls = nested(cls, "DescribedGroupMember")
    return make(
        group_cls, error_code=0, group_id=group_id, group_state=kafka_name(group.state),
        protocol_type=group.protocol_type or NATIVE_PROTOCOL_TYPE,
        protocol_data=group.strategy or "", authorized_operations=ops,
        members=tuple(
            make(member_cls, member_id=m.member_id, group_instance_id=m.instance_id,
                 client_id=m.client_id, client_host=m.client_host,
                 member_metadata=m.metadata_for(group.strategy),
                 member_assignment=_assignment(group, m.member_id))
            for m in group.members.values()
        ),
    )  # fmt: skip


def _assignment(group: Group, member_id: str) -> bytes:
    member = group.members[member_id]
    return member.assignment_bytes if group.is_kafka else encode_assignment(member.assignment)
