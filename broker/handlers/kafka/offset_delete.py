"""OffsetDelete (47), v0: delete a group's committed offsets for some partitions. Partitions of
topics the group's members are subscribed to get GROUP_SUBSCRIBED_TO_TOPIC (for a Kafka group,
read from its members' consumer-protocol metadata; a group of another protocol type with
members gets NON_EMPTY_GROUP, as Kafka)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.session import Session
from coordinator.group.group import Group
from protocol.errors import CoordinatorNotAvailableError, NonEmptyGroupError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.consumer_protocol import subscribed_topics
from protocol.kafka.versions import OFFSET_DELETE

CONSUMER = "consumer"


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    wanted = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
    code: int = CoordinatorNotAvailableError.code
    codes: dict[tuple[str, int], int] = {}
    if ctx.groups is not None:
        group = ctx.groups.group_view(req.group_id)[1]
        if group is not None and group.members and group.protocol_type not in (None, CONSUMER):
            code = NonEmptyGroupError.code
        else:
            topics = _subscribed(group) if group is not None else set()
            code, codes = await ctx.groups.delete_offsets(req.group_id, wanted, topics)
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
