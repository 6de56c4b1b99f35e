"""ConsumerGroupDescribe (69), v0-v1: KIP-848 consumer groups with their epochs, assignor and
members (epoch, subscription, current assignment and target assignment, by topic id and name).
A group that is not a consumer group answers GROUP_ID_NOT_FOUND, as Kafka does; v1 adds each
member's type (1: consumer protocol; odradek's consumer groups have no classic members)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.consumer_group import GROUP_ID_NOT_FOUND, ConsumerConfig, ConsumerGroup
from coordinator.group.consumer_service import consumer_of
from protocol.errors import CoordinatorNotAvailableError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import CONSUMER_GROUP_DESCRIBE

CONSUMER_MEMBER_TYPE = 1
NO_OPERATIONS = -(2**31)


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    cls = response_class(CONSUMER_GROUP_DESCRIBE, request.header.api_version)
    groups = []
    body = request.body
    refused = rules.denied(ctx, session, rules.DESCRIBE, rules.GROUP, body.group_ids,
                           api="ConsumerGroupDescribe")  # fmt: skip
    asked = bool(getattr(body, "include_authorized_operations", False))
    for gid in body.group_ids:
        found = None
        if gid in refused:
            err = rules.refusal(session, rules.DESCRIBE, rules.GROUP, gid)
            groups.append(make(
                nested(cls, "DescribedGroup"), error_code=err.code, error_message=err.message,
                group_id=gid, group_state="", group_epoch=-1, assignment_epoch=-1,
                assignor_name="", members=(), authorized_operations=NO_OPERATIONS,
            ))  # fmt: skip
            continue
        if ctx.groups is None:
            code, group = CoordinatorNotAvailableError.code, None
        else:
            code, found = ctx.groups.group_view(gid)
            group = consumer_of(found)
        if group is None or group.deleted or ctx.groups is None:
            code = code or GROUP_ID_NOT_FOUND
            message = (
                f"Group {gid} not found."
                if found is None
                else (f"Group {gid} is not a consumer group.")
            )
            groups.append(
                make(
                    nested(cls, "DescribedGroup"),
                    error_code=code,
                    error_message=message if code == GROUP_ID_NOT_FOUND else None,
                    group_id=gid,
                    group_state="Dead",
                    group_epoch=-1,
                    assignment_epoch=-1,
                    assignor_name="",
                    members=(),
                    authorized_operations=NO_OPERATIONS,
                )
            )
            continue
        ops = (
            rules.authorized_operations(ctx, session, rules.GROUP, gid) if asked else NO_OPERATIONS
        )
        groups.append(describe(cls, group, ctx.groups.config.consumer, ctx.metadata.topic_by_id,
                               ops))  # fmt: skip
    return make(cls, throttle_time=0, groups=tuple(groups))


def _assignment(
    cls: Any, parts: Mapping[uuid.UUID, frozenset[int]], name_of: Callable[[uuid.UUID], str | None]
) -> Any:
    tp_cls = nested(cls, "TopicPartitions")
    return make(
        nested(cls, "Assignment"),
        topic_partitions=tuple(
            make(tp_cls, topic_id=t, topic_name=name_of(t) or "", partitions=tuple(sorted(ps)))
            for t, ps in sorted(parts.items(), key=lambda kv: str(kv[0]))
            if ps
        ),
    )


def describe(
    cls: Any,
    group: ConsumerGroup,
    config: ConsumerConfig,
    name_of: Callable[[uuid.UUID], str | None],
    ops: int = NO_OPERATIONS,
) -> Any:
    member_cls = nested(cls, "Member")
    members = tuple(
        make(
            member_cls,
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=_assignment(cls, m.assignment.assigned, name_of),
            target_assignment=_assignment(cls, group.target.get(m.member_id, {}), name_of),
            member_type=CONSUMER_MEMBER_TYPE,
        )
        for m in sorted(group.members.values(), key=lambda m: m.member_id)
    )
    assignor = group.preferred_assignor(config)
    return make(
        nested(cls, "DescribedGroup"),
        error_code=0,
        error_message=None,
        group_id=group.group_id,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.target_epoch,
        assignor_name=assignor,
        members=members,
        authorized_operations=ops,
    )
