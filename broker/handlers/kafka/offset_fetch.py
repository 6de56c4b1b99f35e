"""OffsetFetch (9), v1-v9: a group's committed offsets (-1: none), from the same service as the
native OffsetFetch. v2+ asks for every committed partition with null topics; v7's
require_stable (a read_committed consumer, KIP-447) gets UNSTABLE_OFFSET_COMMIT for a partition
whose offset an open transaction is committing. v8+ asks for several groups at once (each
answered on its own, with its own error code); v9 carries a KIP-848 member's id and epoch,
checked against the consumer group (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH) as Kafka does."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import offset_fetch as native
from broker.session import Session
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

BATCHED_FROM = 8


def _fetch(
    ctx: BrokerContext,
    session: Session,
    group_id: str,
    wanted: Any,
    stable: bool,
    member: tuple[str | None, int] = (None, -1),
) -> OffsetFetchResponse:
    topics = (
        None
        if wanted is None
        else [TopicPartitions(t.name, list(t.partition_indexes)) for t in wanted]
    )

    def fetch(req: OffsetFetchRequest) -> OffsetFetchResponse:
        if ctx.groups is None:
            return OffsetFetchResponse(CoordinatorNotAvailableError.code, [])
        code = ctx.groups.consumer.check_fetch(group_id, *member)
        if code:
            return OffsetFetchResponse(code, [])
        return ctx.groups.fetch_offsets(req, stable)

    return native.authorized(ctx, session, OffsetFetchRequest(group_id, topics), fetch)


def _topics(cls: Any, resp: OffsetFetchResponse, batched: bool) -> tuple[Any, ...]:
    suffix = "s" if batched else ""
    topic_cls = nested(cls, "OffsetFetchResponseTopic" + suffix)
    part_cls = nested(cls, "OffsetFetchResponsePartition" + suffix)
    return tuple(
        make(
            topic_cls,
            name=t.name,
            partitions=tuple(
                make(
                    part_cls,
                    partition_index=p.partition,
                    committed_offset=p.offset,
                    committed_leader_epoch=p.leader_epoch,
                    metadata=p.metadata or "",
                    error_code=p.error_code,
                )
                for p in t.partitions
            ),
        )
        for t in resp.topics
    )


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    version = request.header.api_version
    stable = bool(getattr(req, "require_stable", False))
    cls = response_class(OFFSET_FETCH, version)
    if version >= BATCHED_FROM:
        group_cls = nested(cls, "OffsetFetchResponseGroup")
        groups = []
        for g in req.groups:
            member = (getattr(g, "member_id", None), getattr(g, "member_epoch", -1))
            resp = _fetch(ctx, session, g.group_id, g.topics, stable, member)
            groups.append(
                make(
                    group_cls,
                    group_id=g.group_id,
                    error_code=resp.error_code,
                    topics=_topics(cls, resp, True),
                )
            )
        return make(cls, throttle_time=0, groups=tuple(groups))
    resp = _fetch(ctx, session, req.group_id, req.topics, stable)
    if resp.error_code and version < 2 and req.topics:  # v1 has no top-level error code
        resp = OffsetFetchResponse(
            resp.error_code,
            [
                FetchedTopic(
                    t.name,
                    [FetchedOffset(p, -1, None, resp.error_code) for p in t.partition_indexes],
                )
                for t in req.topics
            ],
        )
    return make(cls, throttle_time=0, topics=_topics(cls, resp, False), error_code=resp.error_code)
