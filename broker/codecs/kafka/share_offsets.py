"""The Kafka door's codecs of the share groups' offsets APIs (KIP-932; see
broker/codecs/kafka/__init__.py): DescribeShareGroupOffsets v0-v1 (v1 adds the lag,
KIP-1226), AlterShareGroupOffsets v0 and DeleteShareGroupOffsets v0, Kafka 4.2's versions.
The answers name each topic's id where the metadata cache knows it.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.codecs import Codec
from broker.operations import (
    alter_share_group_offsets,
    delete_share_group_offsets,
    describe_share_group_offsets,
)
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, nested, response_class

NO_ID = uuid.UUID(int=0)


# ----- DescribeShareGroupOffsets (90) --------------------------------------------------------


def _describe_in(request: KafkaRequest) -> describe_share_group_offsets.DescribeShareGroupOffsets:
    return describe_share_group_offsets.DescribeShareGroupOffsets(tuple(
        describe_share_group_offsets.AskedGroup(g.group_id, None if g.topics is None else tuple(
            (t.topic_name, tuple(int(p) for p in t.partitions)) for t in g.topics))
        for g in request.body.groups
    ))  # fmt: skip


def _describe_out(
    request: KafkaRequest, result: describe_share_group_offsets.DescribeShareGroupOffsetsResult
) -> Any:
    cls = response_class(v.DESCRIBE_SHARE_GROUP_OFFSETS, request.header.api_version)
    group_cls = nested(cls, "DescribeShareGroupOffsetsResponseGroup")
    topic_cls = nested(cls, "DescribeShareGroupOffsetsResponseTopic")
    part_cls = nested(cls, "DescribeShareGroupOffsetsResponsePartition")
    return make(cls, throttle_time=0, groups=tuple(
        make(group_cls, group_id=g.group_id, error_code=g.error_code,
             error_message=g.error_message, topics=tuple(
                 make(topic_cls, topic_name=t.topic, topic_id=t.topic_id or NO_ID,
                      partitions=tuple(
                          make(part_cls, partition_index=p.partition, start_offset=p.start_offset,
                               leader_epoch=p.leader_epoch, lag=p.lag, error_code=p.error_code,
                               error_message=p.error_message)
                          for p in t.partitions))
                 for t in g.topics))
        for g in result.groups
    ))  # fmt: skip


DESCRIBE_SHARE_GROUP_OFFSETS = Codec(_describe_in, _describe_out)

# ----- AlterShareGroupOffsets (91) -----------------------------------------------------------


def _alter_in(request: KafkaRequest) -> alter_share_group_offsets.AlterShareGroupOffsets:
    body = request.body
    return alter_share_group_offsets.AlterShareGroupOffsets(body.group_id, tuple(
        (t.topic_name, tuple((int(p.partition_index), int(p.start_offset)) for p in t.partitions))
        for t in body.topics
    ))  # fmt: skip


def _alter_out(
    request: KafkaRequest, result: alter_share_group_offsets.AlterShareGroupOffsetsResult
) -> Any:
    cls = response_class(v.ALTER_SHARE_GROUP_OFFSETS, request.header.api_version)
    topic_cls = nested(cls, "AlterShareGroupOffsetsResponseTopic")
    part_cls = nested(cls, "AlterShareGroupOffsetsResponsePartition")
    return make(
        cls, throttle_time=0, error_code=result.error_code, error_message=result.error_message,
        responses=tuple(
            make(topic_cls, topic_name=t.topic, topic_id=t.topic_id or NO_ID, partitions=tuple(
                make(part_cls, partition_index=p.partition, error_code=p.error_code,
                     error_message=p.error_message)
                for p in t.partitions))
            for t in result.topics
        ),
    )  # fmt: skip


ALTER_SHARE_GROUP_OFFSETS = Codec(_alter_in, _alter_out)

# ----- DeleteShareGroupOffsets (92) ----------------------------------------------------------


def _delete_in(request: KafkaRequest) -> delete_share_group_offsets.DeleteShareGroupOffsets:
    body = request.body
    return delete_share_group_offsets.DeleteShareGroupOffsets(
        body.group_id, tuple(t.topic_name for t in body.topics)
    )


def _delete_out(
    request: KafkaRequest, result: delete_share_group_offsets.DeleteShareGroupOffsetsResult
) -> Any:
    cls = response_class(v.DELETE_SHARE_GROUP_OFFSETS, request.header.api_version)
    topic_cls = nested(cls, "DeleteShareGroupOffsetsResponseTopic")
    return make(
        cls, throttle_time=0, error_code=result.error_code, error_message=result.error_message,
        responses=tuple(
            make(topic_cls, topic_name=t.topic, topic_id=t.topic_id or NO_ID,
                 error_code=t.error_code, error_message=t.error_message)
            for t in result.topics
        ),
    )  # fmt: skip


DELETE_SHARE_GROUP_OFFSETS = Codec(_delete_in, _delete_out)
