"""ListPartitionReassignments (46), v0: the native ListPartitionReassignments (only the
controller answers: NOT_CONTROLLER elsewhere), in Kafka's shape. Null topics lists every
reassignment in progress; `replicas` is the whole replica set now (the target plus the replicas
still to be removed), as Kafka's."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import list_partition_reassignments as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.controller import (
    LIST_PARTITION_REASSIGNMENTS,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    TopicPartitionRef,
)
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    refs = None
    if req.topics is not None:
        refs = [TopicPartitionRef(t.name, p) for t in req.topics for p in t.partition_indexes]
    native_req = ListPartitionReassignmentsRequest(millis(req.timeout), refs)
    resp = native.handle(ctx, as_native(LIST_PARTITION_REASSIGNMENTS, native_req, request), session)
    return _answer(request.header.api_version, resp)


def _answer(version: int, resp: ListPartitionReassignmentsResponse) -> Any:
    cls = response_class(LIST_PARTITION_REASSIGNMENTS.key, version)
    topic_cls = nested(cls, "OngoingTopicReassignment")
    part_cls = nested(cls, "OngoingPartitionReassignment")
    by_topic: dict[str, list[Any]] = {}
    for r in sorted(resp.reassignments, key=lambda r: (r.topic, r.partition)):
        by_topic.setdefault(r.topic, []).append(
            make(
                part_cls,
                partition_index=r.partition,
                replicas=tuple(r.replicas),
                adding_replicas=tuple(r.adding_replicas),
                removing_replicas=tuple(r.removing_replicas),
            )
        )
    topics = tuple(make(topic_cls, name=t, partitions=tuple(ps)) for t, ps in by_topic.items())
    return make(
        cls, throttle_time=0, error_code=resp.error_code, error_message=resp.error_message,
        topics=topics,
    )  # fmt: skip
