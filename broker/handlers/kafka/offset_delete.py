"""OffsetDelete (47), v0: delete a group's committed offsets for some partitions. Partitions of
topics the group's members are subscribed to get GROUP_SUBSCRIBED_TO_TOPIC (for a Kafka group,
read from its members' consumer-protocol metadata; a group of another protocol type with
members gets NON_EMPTY_GROUP, as Kafka)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from coordinator.group.group import Group
from protocol.errors import (
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    NonEmptyGroupError,
    TopicAuthorizationFailedError,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.consumer_protocol import subscribed_topics
from protocol.kafka.versions import OFFSET_DELETE

CONSUMER = "consumer"


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    refused = rules.NOTHING
    if not rules.allows(ctx, session, rules.DELETE, rules.GROUP, req.group_id, api="OffsetDelete"):
        code: int = GroupAuthorizationFailedError.code
    else:
        code = CoordinatorNotAvailableError.code
        refused = rules.denied(ctx, session, rules.READ, rules.TOPIC,
                               (t.name for t in req.topics), api="OffsetDelete")  # fmt: skip
    wanted = [(t.name, p.partition_index) for t in req.topics for p in t.partitions
              if t.name not in refused]  # fmt: skip
    codes: dict[tuple[str, int], int] = {
        (t.name, p.partition_index): TopicAuthorizationFailedError.code
        for t in req.topics if t.name in refused for p in t.partitions
    }  # fmt: skip
    if ctx.groups is not None and code != GroupAuthorizationFailedError.code:
        group = ctx.groups.group_view(req.group_id)[1]
        if group is not None and group.members and group.protocol_type not in (None, CONSUMER):
            code = NonEmptyGroupError.code
        else:
            topics = _subscribed(group) if group is not None else set()
            code, deleted = await ctx.groups.delete_offsets(req.group_id, wanted, topics)
            codes.update(deleted)
    cls = response_class(OFFSET_DELETE, request.header.api_version)
    topic_cls = nested(cls, "OffsetDeleteResponseTopic")
    part_cls = nested(cls, "OffsetDeleteResponsePartition")
    return make(cls, throttle_time=0, error_code=code, topics=tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition_index,
                 error_code=codes.get((t.name, p.partition_index), 0))
            for p in t.partitions))
        for t in req.topics
    ) if code == 0 else ())  # fmt: skip


def _subscribed(group: Group) -> set[str]:
    topics: set[str] = set()
    for m in group.members.values():
        if group.is_kafka:
            topics |= subscribed_topics(m.metadata_for(group.strategy))
        else:
            topics |= set(m.topics)
    return topics
