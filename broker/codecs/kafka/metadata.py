"""The Kafka door's codecs of the metadata APIs (see broker/codecs/kafka/__init__.py).

ApiVersions (18), v0-v4: a version this broker does not serve comes without a body and is
answered in v0 (KIP-511); v3+ names the client's software, which the door keeps for its logs.

DescribeCluster (60), v0-v2: v1 adds the endpoint type (v0: brokers); v2 (KIP-1073) may ask for
fenced brokers too and marks each: a ZooKeeper-mode cluster has none (its brokers are the live
ones registered), so every broker is unfenced, whatever is asked.

DescribeLogDirs (35), v1-v4: logs grouped by topic, a moving replica's future log with
is_future_key; v3+ a top-level error code, v4 the volume's total and usable bytes.

AlterReplicaLogDirs (34), v1-v2 (v0 is gone from Kafka 4): the partitions asked under each
directory; answered grouped by topic, in the order first asked.

DescribeTopicPartitions (75), v0: odradek has no eligible leader replicas (KIP-966's ELR): both
ELR lists are written empty.

Metadata (3), v0-v13: v0 asks for every topic with an empty list, v1+ with null; v0-v3 always
allow auto-creation, v4+ say so; v8+ may ask for each topic's authorized operations and v8-v10
for the cluster's (KIP-430); v10+ answer topic ids; v12+ may name topics by id (a null name);
v13 adds a top-level error code, always NONE. Brokers are given at their Kafka endpoints.
"""

from __future__ import annotations

from typing import Any

from broker.codecs import Codec
from broker.operations import (
    alter_replica_log_dirs,
    api_versions,
    describe_cluster,
    describe_log_dirs,
    describe_topic_partitions,
    metadata,
)
from protocol.api.metadata import KAFKA_DOOR, TopicMetadata
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, nested, response_class

NO_OPERATIONS = metadata.NO_OPERATIONS

# ----- Metadata (3) ---------------------------------------------------------------------------

AUTO_CREATE_ASKED_FROM = 4  # v0-v3 always allow auto-creation
IDS_FROM = 10  # topic ids in the answer (KIP-516)
BY_ID_FROM = 12  # topics asked by id
CLUSTER_OPERATIONS = (8, 10)  # the versions that may ask for the cluster's (KIP-430)


def _metadata_in(request: KafkaRequest) -> metadata.Metadata:
    req = request.body
    version = request.header.api_version
    topics: tuple[Any, ...] | None = None
    if req.topics is not None and (version > 0 or req.topics):
        by_id = version >= BY_ID_FROM
        topics = tuple(
            t.name if t.name is not None else t.topic_id
            for t in req.topics
            if t.name is not None or (by_id and t.topic_id is not None)
        )
    lo, hi = CLUSTER_OPERATIONS
    return metadata.Metadata(
        topics, KAFKA_DOOR,
        allow_auto_topic_creation=version < AUTO_CREATE_ASKED_FROM
        or bool(req.allow_auto_topic_creation),
        with_ids=version >= IDS_FROM,
        cluster_operations=lo <= version <= hi
        and bool(getattr(req, "include_cluster_authorized_operations", False)),
        topic_operations=bool(getattr(req, "include_topic_authorized_operations", False)),
    )  # fmt: skip


def _metadata_out(request: KafkaRequest, result: metadata.MetadataResult) -> Any:
    cls = response_class(v.METADATA, request.header.api_version)
    broker_cls = nested(cls, "MetadataResponseBroker")
    topic_cls = nested(cls, "MetadataResponseTopic")
    part_cls = nested(cls, "MetadataResponsePartition")
    brokers = tuple(
        make(broker_cls, node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in result.brokers
    )
    topics = tuple(_topic(topic_cls, part_cls, t, result) for t in result.topics) + tuple(
        make(topic_cls, error_code=code, name=None, topic_id=topic_id, is_internal=False,
             partitions=(), topic_authorized_operations=NO_OPERATIONS)
        for topic_id, code in result.by_id
    )  # fmt: skip
    return make(
        cls, throttle_time=0, brokers=brokers, cluster_id=result.cluster_id,
        controller_id=result.controller_id, topics=topics,
        cluster_authorized_operations=result.cluster_operations, error_code=0,
    )  # fmt: skip


def _topic(topic_cls: Any, part_cls: Any, t: TopicMetadata, r: metadata.MetadataResult) -> Any:
    parts = tuple(
        make(part_cls, error_code=p.error_code, partition_index=p.partition,
             leader_id=p.leader, leader_epoch=p.leader_epoch, replica_nodes=tuple(p.replicas),
             isr_nodes=tuple(p.isr), offline_replicas=tuple(p.offline_replicas))
        for p in t.partitions
    )  # fmt: skip
    return make(
        topic_cls, error_code=t.error_code, name=t.name, topic_id=r.topic_ids.get(t.name),
        is_internal=t.is_internal, partitions=parts,
        topic_authorized_operations=r.topic_operations.get(t.name, NO_OPERATIONS),
    )  # fmt: skip


METADATA = Codec(_metadata_in, _metadata_out)

# ----- ApiVersions (18) -----------------------------------------------------------------------


def _api_versions_in(request: KafkaRequest) -> api_versions.ApiVersions:
    return api_versions.ApiVersions(request.body is not None)


def _api_versions_out(request: KafkaRequest, result: api_versions.ApiVersionsResult) -> Any:
    version = request.header.api_version if request.body is not None else 0
    cls = response_class(v.API_VERSIONS, version)
    entry = nested(cls, "ApiVersion")
    keys = tuple(
        make(entry, api_key=key, min_version=lo, max_version=hi) for key, lo, hi in result.apis
    )
    return make(cls, error_code=result.error_code, api_keys=keys, throttle_time=0,
                **_features(cls, version, result))  # fmt: skip


FEATURE_MIN_0_FROM = 4  # KAFKA-17011: v0-v3 readers choke on a supported minimum of 0


def _features(cls: Any, version: int, result: api_versions.ApiVersionsResult) -> dict[str, Any]:
    """v3+: the feature flags; below v4 a supported feature whose minimum is 0 is left out
    (Kafka's ApiVersionsResponse.maybeFilterSupportedFeatureKeys)."""
    if version < 3:
        return {}
    supported = nested(cls, "SupportedFeatureKey")
    finalized = nested(cls, "FinalizedFeatureKey")
    return {
        "supported_features": tuple(
            make(supported, name=name, min_version=lo, max_version=hi)
            for name, lo, hi in result.supported_features
            if lo > 0 or version >= FEATURE_MIN_0_FROM
        ),
        "finalized_features_epoch": result.finalized_features_epoch,
        "finalized_features": tuple(
            make(finalized, name=name, max_version_level=level, min_version_level=level)
            for name, level in result.finalized_features
        ),
    }


API_VERSIONS = Codec(_api_versions_in, _api_versions_out)

# ----- DescribeCluster (60) -------------------------------------------------------------------


def _describe_cluster_in(request: KafkaRequest) -> describe_cluster.DescribeCluster:
    req = request.body
    endpoint_type = getattr(req, "endpoint_type", describe_cluster.ENDPOINT_BROKERS)
    return describe_cluster.DescribeCluster(
        endpoint_type, bool(req.include_cluster_authorized_operations)
    )


def _describe_cluster_out(
    request: KafkaRequest, result: describe_cluster.DescribeClusterResult
) -> Any:
    cls = response_class(v.DESCRIBE_CLUSTER, request.header.api_version)
    broker_cls = nested(cls, "DescribeClusterBroker")
    brokers = tuple(
        make(
            broker_cls, broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack, is_fenced=False
        )
        for b in result.brokers
    )
    return make(
        cls, throttle_time=0, error_code=result.error_code, error_message=result.error_message,
        endpoint_type=result.endpoint_type, cluster_id=result.cluster_id,
        controller_id=result.controller_id, brokers=brokers,
        cluster_authorized_operations=result.cluster_operations,
    )  # fmt: skip


DESCRIBE_CLUSTER = Codec(_describe_cluster_in, _describe_cluster_out)

# ----- DescribeTopicPartitions (75) -----------------------------------------------------------

dtp = describe_topic_partitions


def _dtp_in(request: KafkaRequest) -> dtp.DescribeTopicPartitions:
    req = request.body
    c = req.cursor
    cursor = None if c is None else dtp.Cursor(c.topic_name, c.partition_index)
    return dtp.DescribeTopicPartitions(
        tuple(t.name for t in req.topics), cursor, req.response_partition_limit
    )


def _dtp_out(request: KafkaRequest, result: dtp.DescribeTopicPartitionsResult) -> Any:
    cls = response_class(v.DESCRIBE_TOPIC_PARTITIONS, request.header.api_version)
    topic_cls = nested(cls, "DescribeTopicPartitionsResponseTopic")
    part_cls = nested(cls, "DescribeTopicPartitionsResponsePartition")
    topics = tuple(
        make(topic_cls, error_code=t.error_code, name=t.name, topic_id=t.topic_id,
             is_internal=t.is_internal, topic_authorized_operations=t.authorized_operations,
             partitions=tuple(
                 make(part_cls, error_code=p.error_code, partition_index=p.partition,
                      leader_id=p.leader, leader_epoch=p.leader_epoch,
                      replica_nodes=tuple(p.replicas), isr_nodes=tuple(p.isr),
                      eligible_leader_replicas=(), last_known_elr=(),
                      offline_replicas=tuple(p.offline_replicas))
                 for p in t.partitions))
        for t in result.topics
    )  # fmt: skip
    nxt = result.next_cursor
    cursor = None
    if nxt is not None:
        cursor = make(nested(cls, "Cursor"), topic_name=nxt.topic, partition_index=nxt.partition)
    return make(cls, throttle_time=0, topics=topics, next_cursor=cursor)


DESCRIBE_TOPIC_PARTITIONS = Codec(_dtp_in, _dtp_out)

# ----- DescribeLogDirs (35) -------------------------------------------------------------------


def _log_dirs_in(request: KafkaRequest) -> describe_log_dirs.DescribeLogDirs:
    topics = request.body.topics
    if topics is None:
        return describe_log_dirs.DescribeLogDirs(None)
    return describe_log_dirs.DescribeLogDirs(
        frozenset((t.topic, p) for t in topics for p in t.partitions)
    )


def _log_dir(cls: Any, d: describe_log_dirs.LogDir) -> Any:
    part_cls = nested(cls, "DescribeLogDirsPartition")
    by_topic: dict[str, list[Any]] = {}
    for p in d.partitions:
        by_topic.setdefault(p.topic, []).append(
            make(part_cls, partition_index=p.partition, partition_size=p.size_bytes,
                 offset_lag=p.offset_lag, is_future_key=p.is_future)
        )  # fmt: skip
    topic_cls = nested(cls, "DescribeLogDirsTopic")
    topics = tuple(make(topic_cls, name=t, partitions=tuple(ps)) for t, ps in by_topic.items())
    return make(
        nested(cls, "DescribeLogDirsResult"), error_code=d.error_code, log_dir=d.path,
        topics=topics, total_bytes=d.total_bytes, usable_bytes=d.usable_bytes,
    )  # fmt: skip


def _log_dirs_out(request: KafkaRequest, result: describe_log_dirs.DescribeLogDirsResult) -> Any:
    cls = response_class(v.DESCRIBE_LOG_DIRS, request.header.api_version)
    return make(cls, throttle_time=0, error_code=result.error_code,
                results=tuple(_log_dir(cls, d) for d in result.dirs))  # fmt: skip


DESCRIBE_LOG_DIRS = Codec(_log_dirs_in, _log_dirs_out)

# ----- AlterReplicaLogDirs (34) ---------------------------------------------------------------


def _alter_dirs_in(request: KafkaRequest) -> alter_replica_log_dirs.AlterReplicaLogDirs:
    return alter_replica_log_dirs.AlterReplicaLogDirs(tuple(
        (d.path, tuple((t.name, int(p)) for t in d.topics for p in t.partitions))
        for d in request.body.dirs
    ))  # fmt: skip


def _alter_dirs_out(
    request: KafkaRequest, result: alter_replica_log_dirs.AlterReplicaLogDirsResult
) -> Any:
    cls = response_class(v.ALTER_REPLICA_LOG_DIRS, request.header.api_version)
    part_cls = nested(cls, "AlterReplicaLogDirPartitionResult")
    by_topic: dict[str, list[Any]] = {}
    for r in result.results:
        by_topic.setdefault(r.topic, []).append(
            make(part_cls, partition_index=r.partition, error_code=r.error_code)
        )
    topic_cls = nested(cls, "AlterReplicaLogDirTopicResult")
    topics = tuple(
        make(topic_cls, topic_name=t, partitions=tuple(ps)) for t, ps in by_topic.items()
    )
    return make(cls, throttle_time=0, results=topics)


ALTER_REPLICA_LOG_DIRS = Codec(_alter_dirs_in, _alter_dirs_out)
