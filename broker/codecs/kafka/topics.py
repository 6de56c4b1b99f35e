"""The Kafka door's codecs of the topic APIs (see broker/codecs/kafka/__init__.py).

Version differences that are wire shape stay here: CreateTopics v5+ answer a created topic's
configs (the codec asks the operation for them) and v7 its id; DeleteTopics v6 names topics by
name or id (v1-v5 by name) and answers with ids. DeleteRecords has no error message field.
ElectLeaders v1+ carry the election type and a top-level code, and Kafka leaves out of an
all-partitions election the partitions that needed none (the codec asks the operation to);
the reassignment APIs group partitions by topic.
"""

from __future__ import annotations

from typing import Any

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
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class

# ----- CreateTopics (19) ----------------------------------------------------------------------

CONFIGS_FROM = 5  # v5+: a created topic's configs, partitions and replication factor


def _create_topics_in(request: KafkaRequest) -> create_topics.CreateTopics:
    req = request.body
    topics = tuple(
        create_topics.NewTopic(
            t.name, t.num_partitions, t.replication_factor,
            tuple((a.partition_index, tuple(a.broker_ids)) for a in t.assignments),
            tuple((c.name, c.value) for c in t.configs if c.value is not None),
        )
        for t in req.topics
    )  # fmt: skip
    return create_topics.CreateTopics(
        topics, millis(req.timeout), bool(req.validate_only),
        include_configs=request.header.api_version >= CONFIGS_FROM,
    )  # fmt: skip


def _create_topics_out(request: KafkaRequest, result: create_topics.CreateTopicsResult) -> Any:
    cls = response_class(v.CREATE_TOPICS, request.header.api_version)
    result_cls = nested(cls, "CreatableTopicResult")
    with_configs = request.header.api_version >= CONFIGS_FROM
    config_cls = nested(cls, "CreatableTopicConfigs") if with_configs else None

    def configs(t: create_topics.TopicCreated) -> tuple[Any, ...] | None:
        if config_cls is None or t.configs is None:
            return None
        return tuple(
            make(config_cls, name=e.name, value=e.value, read_only=e.read_only,
                 config_source=e.source, is_sensitive=e.is_sensitive)
            for e in t.configs
        )  # fmt: skip

    return make(cls, throttle_time=0, topics=tuple(
        make(result_cls, name=t.name, topic_id=t.topic_id, error_code=t.error_code,
             error_message=t.error_message, topic_config_error_code=t.config_error_code,
             num_partitions=t.num_partitions, replication_factor=t.replication_factor,
             configs=configs(t))
        for t in result.topics
    ))  # fmt: skip


CREATE_TOPICS = Codec(_create_topics_in, _create_topics_out)

# ----- DeleteTopics (20) ----------------------------------------------------------------------

BY_ID_FROM = 6  # v6: topics by name or id (KIP-516)


def _delete_topics_in(request: KafkaRequest) -> delete_topics.DeleteTopics:
    req = request.body
    if request.header.api_version >= BY_ID_FROM:
        refs = tuple(delete_topics.TopicRef(t.name, t.topic_id) for t in req.topics)
    else:
        refs = tuple(delete_topics.TopicRef(n) for n in req.topic_names)
    return delete_topics.DeleteTopics(refs, millis(req.timeout))


def _delete_topics_out(request: KafkaRequest, result: delete_topics.DeleteTopicsResult) -> Any:
    version = request.header.api_version
    cls = response_class(v.DELETE_TOPICS, version)
    result_cls = nested(cls, "DeletableTopicResult")
    return make(cls, throttle_time=0, responses=tuple(  # a name is nullable from v6 only
        make(result_cls, name=r.name if version >= BY_ID_FROM else r.name or "",
             topic_id=r.topic_id, error_code=r.error_code,
             error_message=r.error_message)
        for r in result.responses
    ))  # fmt: skip


DELETE_TOPICS = Codec(_delete_topics_in, _delete_topics_out)

# ----- CreatePartitions (37) ------------------------------------------------------------------


def _create_partitions_in(request: KafkaRequest) -> create_partitions.CreatePartitions:
    req = request.body
    topics = tuple(
        create_partitions.NewPartitions(
            t.name, t.count,
            None if t.assignments is None else tuple(tuple(a.broker_ids) for a in t.assignments),
        )
        for t in req.topics
    )  # fmt: skip
    return create_partitions.CreatePartitions(topics, millis(req.timeout), bool(req.validate_only))


def _create_partitions_out(
    request: KafkaRequest, result: create_partitions.CreatePartitionsResult
) -> Any:
    cls = response_class(v.CREATE_PARTITIONS, request.header.api_version)
    result_cls = nested(cls, "CreatePartitionsTopicResult")
    return make(cls, throttle_time=0, results=tuple(
        make(result_cls, name=r.name, error_code=r.error_code, error_message=r.error_message)
        for r in result.results
    ))  # fmt: skip


CREATE_PARTITIONS = Codec(_create_partitions_in, _create_partitions_out)

# ----- DeleteRecords (21) ---------------------------------------------------------------------


def _delete_records_in(request: KafkaRequest) -> delete_records.DeleteRecords:
    req = request.body
    topics = tuple(
        delete_records.RecordsTopic(
            t.name, tuple((p.partition_index, p.offset) for p in t.partitions)
        )
        for t in req.topics
    )
    return delete_records.DeleteRecords(topics, millis(req.timeout))


def _delete_records_out(request: KafkaRequest, result: delete_records.DeleteRecordsResult) -> Any:
    cls = response_class(v.DELETE_RECORDS, request.header.api_version)
    topic_cls = nested(cls, "DeleteRecordsTopicResult")
    part_cls = nested(cls, "DeleteRecordsPartitionResult")
    return make(cls, throttle_time=0, topics=tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition, low_watermark=p.low_watermark,
                 error_code=p.error_code)
            for p in t.partitions
        ))
        for t in result.topics
    ))  # fmt: skip


DELETE_RECORDS = Codec(_delete_records_in, _delete_records_out)

# ----- ElectLeaders (43) ----------------------------------------------------------------------


def _elect_in(request: KafkaRequest) -> elect_leaders.ElectLeaders:
    req = request.body
    tps = None
    if req.topic_partitions is not None:
        tps = tuple((t.topic, p) for t in req.topic_partitions for p in t.partitions)
    election_type = getattr(req, "election_type", elect_leaders.PREFERRED)  # v1+
    return elect_leaders.ElectLeaders(tps, millis(req.timeout), election_type,
                                      leave_out_not_needed=True)  # fmt: skip


def _elect_out(request: KafkaRequest, result: elect_leaders.ElectLeadersResult) -> Any:
    cls = response_class(v.ELECT_LEADERS, request.header.api_version)
    topic_cls, part_cls = nested(cls, "ReplicaElectionResult"), nested(cls, "PartitionResult")
    by_topic: dict[str, list[Any]] = {}
    for r in result.results:
        by_topic.setdefault(r.topic, []).append(make(
            part_cls, partition_id=r.partition, error_code=r.error_code,
            error_message=r.error_message,
        ))  # fmt: skip
    return make(cls, throttle_time=0, error_code=result.error_code, replica_election_results=tuple(
        make(topic_cls, topic=t, partition_result=tuple(ps)) for t, ps in by_topic.items()
    ))  # fmt: skip


ELECT_LEADERS = Codec(_elect_in, _elect_out)

# ----- AlterPartitionReassignments (45) -------------------------------------------------------


def _alter_in(request: KafkaRequest) -> alter_partition_reassignments.AlterPartitionReassignments:
    req = request.body
    targets = tuple(
        alter_partition_reassignments.Target(
            t.name, p.partition_index, None if p.replicas is None else tuple(p.replicas)
        )
        for t in req.topics
        for p in t.partitions
    )
    return alter_partition_reassignments.AlterPartitionReassignments(
        targets, millis(req.timeout), getattr(req, "allow_replication_factor_change", True)
    )


def _alter_out(
    request: KafkaRequest, result: alter_partition_reassignments.AlterPartitionReassignmentsResult
) -> Any:
    cls = response_class(v.ALTER_PARTITION_REASSIGNMENTS, request.header.api_version)
    topic_cls = nested(cls, "ReassignableTopicResponse")
    part_cls = nested(cls, "ReassignablePartitionResponse")
    by_topic: dict[str, list[Any]] = {}
    for r in result.results:
        by_topic.setdefault(r.topic, []).append(make(
            part_cls, partition_index=r.partition, error_code=r.error_code,
            error_message=r.error_message,
        ))  # fmt: skip
    return make(
        cls, throttle_time=0, error_code=result.error_code, error_message=result.error_message,
        responses=tuple(make(topic_cls, name=t, partitions=tuple(ps))
                        for t, ps in by_topic.items()),
        allow_replication_factor_change=result.allow_replication_factor_change,
    )  # fmt: skip


ALTER_PARTITION_REASSIGNMENTS = Codec(_alter_in, _alter_out)

# ----- ListPartitionReassignments (46) --------------------------------------------------------


def _list_in(request: KafkaRequest) -> list_partition_reassignments.ListPartitionReassignments:
    req = request.body
    tps = None
    if req.topics is not None:
        tps = tuple((t.name, p) for t in req.topics for p in t.partition_indexes)
    return list_partition_reassignments.ListPartitionReassignments(tps, millis(req.timeout))


def _list_out(
    request: KafkaRequest, result: list_partition_reassignments.ListPartitionReassignmentsResult
) -> Any:
    cls = response_class(v.LIST_PARTITION_REASSIGNMENTS, request.header.api_version)
    topic_cls = nested(cls, "OngoingTopicReassignment")
    part_cls = nested(cls, "OngoingPartitionReassignment")
    by_topic: dict[str, list[Any]] = {}
    for r in result.reassignments:
        by_topic.setdefault(r.topic, []).append(make(
            part_cls, partition_index=r.partition, replicas=r.replicas,
            adding_replicas=r.adding, removing_replicas=r.removing,
        ))  # fmt: skip
    return make(
        cls, throttle_time=0, error_code=result.error_code, error_message=result.error_message,
        topics=tuple(make(topic_cls, name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
    )  # fmt: skip


LIST_PARTITION_REASSIGNMENTS = Codec(_list_in, _list_out)
