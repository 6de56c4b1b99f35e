"""OffsetFetch (9), v1-v7: a group's committed offsets (-1: none), from the same service as the
native OffsetFetch. v2+ asks for every committed partition with null topics; v7's
require_stable (a read_committed consumer, KIP-447) gets UNSTABLE_OFFSET_COMMIT for a partition
whose offset an open transaction is committing."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from protocol.api.group import (
    FetchedOffset,
    FetchedTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TopicPartitions,
)
from protocol.errors import CoordinatorNotAvailableError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import OFFSET_FETCH


def handle(ctx: BrokerContext, request: KafkaRequest) -> Any:
    req = request.body
    topics = None if req.topics is None else [
        TopicPartitions(t.name, list(t.partition_indexes)) for t in req.topics
    ]  # fmt: skip
    if ctx.groups is None:
        resp = OffsetFetchResponse(CoordinatorNotAvailableError.code, [])
    else:
        stable = bool(getattr(req, "require_stable", False))
        resp = ctx.groups.fetch_offsets(OffsetFetchRequest(req.group_id, topics), stable)
    version = request.header.api_version
    if resp.error_code and version < 2 and topics:  # v1 has no top-level error code
        resp = OffsetFetchResponse(resp.error_code, [
            FetchedTopic(t.topic, [FetchedOffset(p, -1, None, resp.error_code)
                                   for p in t.partitions])
            for t in topics
        ])  # fmt: skip
    cls = response_class(OFFSET_FETCH, version)
    topic_cls = nested(cls, "OffsetFetchResponseTopic")
    part_cls = nested(cls, "OffsetFetchResponsePartition")
    out = tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition, committed_offset=p.offset,
                 committed_leader_epoch=p.leader_epoch, metadata=p.metadata or "",
                 error_code=p.error_code)
            for p in t.partitions))
        for t in resp.topics
    )  # fmt: skip
    return make(cls, throttle_time=0, topics=out, error_code=resp.error_code)
