"""The native door's codecs of the topic APIs (see broker/codecs/__init__.py).

The native door names topics by name only (DeleteTopics) and does not ask CreateTopics for a
new topic's configs; its answers carry no topic ids. It asks only preferred elections, and
lists every partition of an all-partitions one; it never cancels a reassignment.
"""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import (
    alter_partition_reassignments,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    elect_leaders,
    list_partition_reassignments,
)
from protocol.api import admin, controller
from protocol.api import delete_records as records
from protocol.codec import Request

# ----- CreateTopics ---------------------------------------------------------------------------


def _create_topics_in(request: Request) -> create_topics.CreateTopics:
    req: admin.CreateTopicsRequest = request.body
    topics = tuple(
        create_topics.NewTopic(
            t.name, t.num_partitions, t.replication_factor,
            tuple((a.partition, tuple(a.broker_ids)) for a in t.assignments),
            tuple(t.configs.items()),
        )
        for t in req.topics
    )  # fmt: skip
    return create_topics.CreateTopics(topics, req.timeout_ms, req.validate_only)


def _create_topics_out(
    request: Request, result: create_topics.CreateTopicsResult
) -> admin.CreateTopicsResponse:
    return admin.CreateTopicsResponse([
        admin.CreatableTopicResult(t.name, t.error_code, t.error_message, t.num_partitions,
                                   t.replication_factor)
        for t in result.topics
    ])  # fmt: skip


CREATE_TOPICS = Codec(_create_topics_in, _create_topics_out)

# ----- DeleteTopics ---------------------------------------------------------------------------


def _delete_topics_in(request: Request) -> delete_topics.DeleteTopics:
    req: admin.DeleteTopicsRequest = request.body
    refs = tuple(delete_topics.TopicRef(n) for n in req.topic_names)
    return delete_topics.DeleteTopics(refs, req.timeout_ms)


def _delete_topics_out(
    request: Request, result: delete_topics.DeleteTopicsResult
) -> admin.DeleteTopicsResponse:
    return admin.DeleteTopicsResponse([
        admin.DeletableTopicResult(r.name or "", r.error_code, r.error_message)
        for r in result.responses
    ])  # fmt: skip


DELETE_TOPICS = Codec(_delete_topics_in, _delete_topics_out)

# ----- CreatePartitions -----------------------------------------------------------------------


def _create_partitions_in(request: Request) -> create_partitions.CreatePartitions:
    req: admin.CreatePartitionsRequest = request.body
    topics = tuple(
        create_partitions.NewPartitions(
            t.name, t.count,
            None if t.assignments is None else tuple(tuple(a) for a in t.assignments),
        )
        for t in req.topics
    )  # fmt: skip
    return create_partitions.CreatePartitions(topics, req.timeout_ms, req.validate_only)


def _create_partitions_out(
    request: Request, result: create_partitions.CreatePartitionsResult
) -> admin.CreatePartitionsResponse:
    return admin.CreatePartitionsResponse([
        admin.CreatePartitionsResult(r.name, r.error_code, r.error_message)
        for r in result.results
    ])  # fmt: skip


CREATE_PARTITIONS = Codec(_create_partitions_in, _create_partitions_out)

# ----- DeleteRecords --------------------------------------------------------------------------


def _delete_records_in(request: Request) -> delete_records.DeleteRecords:
    req: records.DeleteRecordsRequest = request.body
    topics = tuple(
        delete_records.RecordsTopic(t.name, tuple((p.partition, p.offset) for p in t.partitions))
        for t in req.topics
    )
    return delete_records.DeleteRecords(topics, req.timeout_ms)


def _delete_records_out(
    request: Request, result: delete_records.DeleteRecordsResult
) -> records.DeleteRecordsResponse:
    return records.DeleteRecordsResponse([
        records.DeleteRecordsTopicResult(t.name, [
            records.DeleteRecordsPartitionResult(p.partition, p.low_watermark, p.error_code,
                                                 p.error_message)
            for p in t.partitions
        ])
        for t in result.topics
    ])  # fmt: skip


DELETE_RECORDS = Codec(_delete_records_in, _delete_records_out)

# ----- ElectLeaders ---------------------------------------------------------------------------


def _elect_in(request: Request) -> elect_leaders.ElectLeaders:
    req: controller.ElectLeadersRequest = request.body
    tps = None if req.partitions is None else tuple((r.topic, r.partition) for r in req.partitions)
    return elect_leaders.ElectLeaders(tps, req.timeout_ms)


def _elect_out(
    request: Request, result: elect_leaders.ElectLeadersResult
) -> controller.ElectLeadersResponse:
    return controller.ElectLeadersResponse(result.error_code, [
        controller.PartitionResult(r.topic, r.partition, r.error_code, r.error_message)
        for r in result.results
    ])  # fmt: skip


ELECT_LEADERS = Codec(_elect_in, _elect_out)

# ----- AlterPartitionReassignments ------------------------------------------------------------


def _alter_in(request: Request) -> alter_partition_reassignments.AlterPartitionReassignments:
    req: controller.AlterPartitionReassignmentsRequest = request.body
    targets = tuple(
        alter_partition_reassignments.Target(t.topic, t.partition, tuple(t.replicas))
        for t in req.partitions
    )
    return alter_partition_reassignments.AlterPartitionReassignments(targets, req.timeout_ms)


def _alter_out(
    request: Request, result: alter_partition_reassignments.AlterPartitionReassignmentsResult
) -> controller.AlterPartitionReassignmentsResponse:
    return controller.AlterPartitionReassignmentsResponse(
        result.error_code, result.error_message, [
            controller.PartitionResult(r.topic, r.partition, r.error_code, r.error_message)
            for r in result.results
        ],
    )  # fmt: skip


ALTER_PARTITION_REASSIGNMENTS = Codec(_alter_in, _alter_out)

# ----- ListPartitionReassignments -------------------------------------------------------------


def _list_in(request: Request) -> list_partition_reassignments.ListPartitionReassignments:
    req: controller.ListPartitionReassignmentsRequest = request.body
    tps = None if req.partitions is None else tuple((r.topic, r.partition) for r in req.partitions)
    return list_partition_reassignments.ListPartitionReassignments(tps, req.timeout_ms)


def _list_out(
    request: Request, result: list_partition_reassignments.ListPartitionReassignmentsResult
) -> controller.ListPartitionReassignmentsResponse:
    return controller.ListPartitionReassignmentsResponse(
        result.error_code, result.error_message, [
            controller.OngoingReassignment(r.topic, r.partition, list(r.replicas),
                                           list(r.adding), list(r.removing))
            for r in result.reassignments
        ],
    )  # fmt: skip


LIST_PARTITION_REASSIGNMENTS = Codec(_list_in, _list_out)
