"""The Kafka door's codecs of the share-group APIs (KIP-932; see broker/codecs/kafka/__init__.py):
ShareGroupHeartbeat v1, ShareGroupDescribe v1, ShareFetch v1-v2 and ShareAcknowledge v1-v2,
Kafka 4.2's versions (v0 was KIP-932's early access, which Kafka 4.1 removed). v2 adds the
renew-only acknowledgement (`is_renew_ack`, KIP-1222), which the operations read, and the
acquisition lock timeout in ShareAcknowledge's answer. The answers group partitions by topic
id, in the order the operation gave them; a partition's current leader is (-1, -1) unless the
operation gives one (a leadership error, KIP-951), with the leaders' node endpoints.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.codecs import Codec
from broker.operations import (
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
)
from broker.operations.share_requests import AckBatch, PartitionIn
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, millis, nested, response_class

# ----- ShareGroupHeartbeat (76) --------------------------------------------------------------


def _sgh_in(request: KafkaRequest) -> share_group_heartbeat.ShareGroupHeartbeat:
    req = request.body
    names = req.subscribed_topic_names
    return share_group_heartbeat.ShareGroupHeartbeat(
        req.group_id, req.member_id, req.member_epoch, req.rack_id,
        None if names is None else tuple(names),
        request.header.client_id or "", request.client_host,
    )  # fmt: skip


def _sgh_out(request: KafkaRequest, result: share_group_heartbeat.ShareGroupHeartbeatResult) -> Any:
    cls = response_class(v.SHARE_GROUP_HEARTBEAT, request.header.api_version)
    assignment = None
    if result.assignment is not None:
        tp_cls = nested(cls, "TopicPartitions")
        assignment = make(nested(cls, "Assignment"), topic_partitions=tuple(
            make(tp_cls, topic_id=a.topic_id, partitions=a.partitions)
            for a in result.assignment
        ))  # fmt: skip
    return make(
        cls, throttle_time=0, error_code=result.error_code, error_message=result.error_message,
        member_id=result.member_id, member_epoch=result.member_epoch,
        heartbeat_interval=result.heartbeat_interval_ms, assignment=assignment,
    )  # fmt: skip


SHARE_GROUP_HEARTBEAT = Codec(_sgh_in, _sgh_out)

# ----- ShareGroupDescribe (77) ---------------------------------------------------------------


def _sgd_in(request: KafkaRequest) -> share_group_describe.ShareGroupDescribe:
    body = request.body
    asked = bool(body.include_authorized_operations)
    return share_group_describe.ShareGroupDescribe(tuple(body.group_ids), asked)


def _sgd_out(request: KafkaRequest, result: share_group_describe.ShareGroupDescribeResult) -> Any:
    cls = response_class(v.SHARE_GROUP_DESCRIBE, request.header.api_version)
    group_cls, member_cls = nested(cls, "DescribedGroup"), nested(cls, "Member")
    tp_cls, a_cls = nested(cls, "TopicPartitions"), nested(cls, "Assignment")
    return make(cls, throttle_time=0, groups=tuple(
        make(group_cls, error_code=d.error_code, error_message=d.error_message,
             group_id=d.group_id, group_state=d.state, group_epoch=d.group_epoch,
             assignment_epoch=d.assignment_epoch, assignor_name=d.assignor_name,
             authorized_operations=d.authorized_operations, members=tuple(
                 make(member_cls, member_id=m.member_id, rack_id=m.rack_id,
                      member_epoch=m.member_epoch, client_id=m.client_id,
                      client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
                      assignment=make(a_cls, topic_partitions=tuple(
                          make(tp_cls, topic_id=t.topic_id, topic_name=t.name or "",
                               partitions=t.partitions)
                          for t in m.assignment)))
                 for m in d.members))
        for d in result.groups
    ))  # fmt: skip


SHARE_GROUP_DESCRIBE = Codec(_sgd_in, _sgd_out)

# ----- ShareFetch (78) and ShareAcknowledge (79) ---------------------------------------------


def _parts(topics: Any) -> tuple[PartitionIn, ...]:
    return tuple(
        PartitionIn(t.topic_id, p.partition_index, tuple(
            AckBatch(b.first_offset, b.last_offset, tuple(int(x) for x in b.acknowledge_types))
            for b in p.acknowledgement_batches
        ))
        for t in topics
        for p in t.partitions
    )  # fmt: skip


def _by_topic(partitions: Any) -> dict[uuid.UUID, list[Any]]:
    out: dict[uuid.UUID, list[Any]] = {}
    for p in partitions:
        out.setdefault(p.topic_id, []).append(p)
    return out


def _leader(leader_cls: Any, leader: tuple[int, int] | None) -> Any:
    leader_id, epoch = (-1, -1) if leader is None else leader
    return make(leader_cls, leader_id=leader_id, leader_epoch=epoch)


def _nodes(cls: Any, nodes: tuple[tuple[int, str, int, str | None], ...]) -> tuple[Any, ...]:
    node_cls = nested(cls, "NodeEndpoint")
    return tuple(make(node_cls, node_id=n, host=h, port=port, rack=rack)
                 for n, h, port, rack in nodes)  # fmt: skip


def _share_fetch_in(request: KafkaRequest) -> share_fetch.ShareFetch:
    req = request.body
    forgotten = tuple((t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions)
    return share_fetch.ShareFetch(
        req.group_id, req.member_id, req.share_session_epoch, millis(req.max_wait),
        req.min_bytes, req.max_bytes, req.max_records, _parts(req.topics), forgotten,
        bool(getattr(req, "is_renew_ack", False)),
    )  # fmt: skip


def _share_fetch_out(request: KafkaRequest, result: share_fetch.ShareFetchResult) -> Any:
    cls = response_class(v.SHARE_FETCH, request.header.api_version)
    topic_cls, part_cls = nested(cls, "ShareFetchableTopicResponse"), nested(cls, "PartitionData")
    leader_cls, acq_cls = nested(cls, "LeaderIdAndEpoch"), nested(cls, "AcquiredRecords")
    return make(
        cls, throttle_time=0, error_code=result.error_code, error_message=result.error_message,
        acquisition_lock_timeout=result.lock_timeout_ms,
        node_endpoints=_nodes(cls, result.leader_endpoints),
        responses=tuple(
            make(topic_cls, topic_id=tid, partitions=tuple(
                make(part_cls, partition_index=p.partition, error_code=p.error_code,
                     error_message=p.error_message,
                     acknowledge_error_code=p.acknowledge_error_code,
                     acknowledge_error_message=None,
                     current_leader=_leader(leader_cls, p.current_leader),
                     records=p.records, acquired_records=tuple(
                         make(acq_cls, first_offset=a.first_offset, last_offset=a.last_offset,
                              delivery_count=a.delivery_count)
                         for a in p.acquired))
                for p in parts))
            for tid, parts in _by_topic(result.partitions).items()
        ),
    )  # fmt: skip


SHARE_FETCH = Codec(_share_fetch_in, _share_fetch_out)


def _share_ack_in(request: KafkaRequest) -> share_acknowledge.ShareAcknowledge:
    req = request.body
    return share_acknowledge.ShareAcknowledge(
        req.group_id, req.member_id, req.share_session_epoch, _parts(req.topics),
        bool(getattr(req, "is_renew_ack", False)),
    )  # fmt: skip


def _share_ack_out(request: KafkaRequest, result: share_acknowledge.ShareAcknowledgeResult) -> Any:
    cls = response_class(v.SHARE_ACKNOWLEDGE, request.header.api_version)
    topic_cls = nested(cls, "ShareAcknowledgeTopicResponse")
    part_cls, leader_cls = nested(cls, "PartitionData"), nested(cls, "LeaderIdAndEpoch")
    return make(
        cls, throttle_time=0, error_code=result.error_code, error_message=result.error_message,
        acquisition_lock_timeout=result.lock_timeout_ms,
        node_endpoints=_nodes(cls, result.leader_endpoints),
        responses=tuple(
            make(topic_cls, topic_id=tid, partitions=tuple(
                make(part_cls, partition_index=p.partition, error_code=p.error_code,
                     error_message=p.error_message,
                     current_leader=_leader(leader_cls, p.current_leader))
                for p in parts))
            for tid, parts in _by_topic(result.partitions).items()
        ),
    )  # fmt: skip


SHARE_ACKNOWLEDGE = Codec(_share_ack_in, _share_ack_out)
