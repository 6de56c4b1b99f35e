"""OffsetCommit (8), v2-v7: the same commit as the native OffsetCommit (generation and member
checked, written to `__consumer_offsets` with acks=all before it is answered). Generation -1
with no member id commits for a group without members (an assign()ing consumer). v7 carries
the member's group_instance_id: a fenced static member's commit gets FENCED_INSTANCE_ID. v8 is
flexible; v9's generation id is a KIP-848 member's epoch (checked by the consumer group:
STALE_MEMBER_EPOCH); a member of a KIP-848 group committing below v9 gets UNSUPPORTED_VERSION,
as Kafka answers it."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.offset_commit import refusals
from broker.session import Session
from protocol.api.group import CommitPartition, CommitTopic, OffsetCommitRequest
from protocol.errors import (
    CoordinatorNotAvailableError,
    TopicAuthorizationFailedError,
    UnsupportedVersionError,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import OFFSET_COMMIT

MEMBER_EPOCH_FROM = 9


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    topics = [
        CommitTopic(t.name, [CommitPartition(p.partition_index, p.committed_offset,
                                             p.committed_metadata,
                                             getattr(p, "committed_leader_epoch", -1))
                             for p in t.partitions])
        for t in req.topics
    ]  # fmt: skip
    codes: dict[tuple[str, int], int] = {}
    group_code, refused = refusals(ctx, session, req.group_id, (t.name for t in topics))
    if group_code or ctx.groups is None:
        code = group_code or CoordinatorNotAvailableError.code
        codes = {(t.name, p.partition): code for t in topics for p in t.partitions}
    elif (
        request.header.api_version < MEMBER_EPOCH_FROM
        and req.member_id
        and (ctx.groups.consumer.is_consumer_group(req.group_id))
    ):
        code = UnsupportedVersionError.code
        codes = {(t.name, p.partition): code for t in topics for p in t.partitions}
    else:
        instance_id = getattr(req, "group_instance_id", None) or None
        allowed = [t for t in topics if t.name not in refused]
        native = OffsetCommitRequest(
            req.group_id, req.generation_id_or_member_epoch, req.member_id, allowed, instance_id
        )
        if allowed:
            resp = await ctx.groups.commit(native)
            codes = {(t.name, p.partition): p.error_code for t in resp.topics
                     for p in t.partitions}  # fmt: skip
        code = TopicAuthorizationFailedError.code
        codes.update({(t.name, p.partition): code for t in topics if t.name in refused
                      for p in t.partitions})  # fmt: skip
    cls = response_class(OFFSET_COMMIT, request.header.api_version)
    topic_cls = nested(cls, "OffsetCommitResponseTopic")
    part_cls = nested(cls, "OffsetCommitResponsePartition")
    return make(cls, throttle_time=0, topics=tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition, error_code=codes[(t.name, p.partition)])
            for p in t.partitions))
        for t in topics
    ))  # fmt: skip
