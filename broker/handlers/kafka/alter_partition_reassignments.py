"""AlterPartitionReassignments (45), v0: the native AlterPartitionReassignments (only the
controller answers; validated, recorded in /admin/reassign_partitions, moved in the background),
in Kafka's shape.

A null replica list asks Kafka to cancel the partition's reassignment. Odradek's controller
cannot cancel one, so such a partition is answered INVALID_REQUEST ("cancelling a reassignment
is not supported") while it has one in progress (the native ListPartitionReassignments tells),
and otherwise as Kafka answers a cancel with nothing to cancel: NO_REASSIGNMENT_IN_PROGRESS, or
UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster does not have.
"""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import alter_partition_reassignments as native
from broker.handlers import list_partition_reassignments as native_list
from broker.handlers.kafka._adapt import as_native
from broker.security import rules
from broker.session import Session
from protocol.api.controller import (
    ALTER_PARTITION_REASSIGNMENTS,
    LIST_PARTITION_REASSIGNMENTS,
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
    ReassignmentTarget,
    TopicPartitionRef,
)
from protocol.errors import UnknownTopicOrPartitionError, for_name
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class

InvalidRequestError = for_name("INVALID_REQUEST")
NoReassignmentInProgressError = for_name("NO_REASSIGNMENT_IN_PROGRESS")
CANCEL_NOT_SUPPORTED = "cancelling a reassignment is not supported by odradek"
TP = tuple[str, int]
Result = tuple[int, str | None]
NO_ANSWER: Result = (-1, "the controller gave no answer for this partition")


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    api = "AlterPartitionReassignments"
    if not rules.allows(ctx, session, rules.ALTER, rules.CLUSTER, api=api):  # first, as Kafka
        err = rules.refusal(session, rules.ALTER, rules.CLUSTER, "")
        return _answer(request.header.api_version, err.code, err.message, [], {})
    timeout_ms = millis(req.timeout)
    order: list[TP] = []
    targets: list[ReassignmentTarget] = []
    cancels: list[TP] = []
    for t in req.topics:
        for p in t.partitions:
            order.append((t.name, p.partition_index))
            if p.replicas is None:
                cancels.append((t.name, p.partition_index))
            else:
                targets.append(ReassignmentTarget(t.name, p.partition_index, list(p.replicas)))
    results: dict[TP, Result] = {}
    if cancels:
        error, message = _cancels(ctx, request, session, cancels, results)
        if error:
            return _answer(request.header.api_version, error, message, [], results)
    if targets:
        native_req = AlterPartitionReassignmentsRequest(timeout_ms, targets)
        resp = await native.handle(
            ctx, as_native(ALTER_PARTITION_REASSIGNMENTS, native_req, request), session
        )
        if resp.error_code:
            return _answer(request.header.api_version, resp.error_code, resp.error_message, [], {})
        results.update(
            {(r.topic, r.partition): (r.error_code, r.error_message) for r in resp.results}
        )
    return _answer(request.header.api_version, 0, None, order, results)


def _cancels(
    ctx: BrokerContext,
    request: KafkaRequest,
    session: Session,
    cancels: list[TP],
    results: dict[TP, Result],
) -> Result:
    """Answer each cancel into `results`; a top-level error (NOT_CONTROLLER) if there is one."""
    refs = [TopicPartitionRef(t, p) for t, p in cancels]
    native_req = ListPartitionReassignmentsRequest(0, refs)
    resp = native_list.handle(
        ctx, as_native(LIST_PARTITION_REASSIGNMENTS, native_req, request), session
    )
    if resp.error_code:
        return resp.error_code, resp.error_message
    ongoing = {(r.topic, r.partition) for r in resp.reassignments}
    for topic, partition in cancels:
        if (topic, partition) in ongoing:
            results[(topic, partition)] = (InvalidRequestError.code, CANCEL_NOT_SUPPORTED)
        elif partition not in ctx.metadata.topics.get(topic, {}):
            results[(topic, partition)] = (UnknownTopicOrPartitionError.code, None)
        else:
            results[(topic, partition)] = (NoReassignmentInProgressError.code, None)
    return 0, None


def _answer(
    version: int, error: int, message: str | None, order: list[TP], results: dict[TP, Result]
) -> Any:
    cls = response_class(ALTER_PARTITION_REASSIGNMENTS.key, version)
    by_topic: dict[str, list[tuple[int, Result]]] = {}
    for tp in dict.fromkeys(order):
        by_topic.setdefault(tp[0], []).append((tp[1], results.get(tp, NO_ANSWER)))
    topic_cls = nested(cls, "ReassignableTopicResponse")
    part_cls = nested(cls, "ReassignablePartitionResponse")
    responses = tuple(
        make(
            topic_cls,
            name=topic,
            partitions=tuple(
                make(part_cls, partition_index=p, error_code=code, error_message=msg)
                for p, (code, msg) in parts
            ),
        )
        for topic, parts in by_topic.items()
    )
    return make(cls, throttle_time=0, error_code=error, error_message=message, responses=responses)
