"""The Kafka door's codecs of the partition reads besides Fetch (see
broker/codecs/kafka/__init__.py).

ListOffsets (2), v1-v11: Kafka clients are consumers (replica -1); v2+ carry the isolation
level, v4+ the current leader epoch. OFFSET_NOT_AVAILABLE came with v5 (KIP-207): older
versions are answered LEADER_NOT_AVAILABLE, which their clients retry too, as Kafka answers
them. v10's timeout is for tiered lookups only. The version goes to the operation, which
refuses a special timestamp the version cannot carry (v7+ for -3, ..., v11+ for -6).

OffsetForLeaderEpoch (23), v2-v4: v2 added the current leader epoch (KIP-320), v3 the
replica id (which decides nothing, as in Kafka, and is dropped), v4 is flexible.
"""

from __future__ import annotations

from typing import Any

from broker.codecs import Codec
from broker.operations import list_offsets
from broker.operations import offset_for_leader_epoch as ofle
from protocol.errors import LeaderNotAvailableError, OffsetNotAvailableError
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, nested, response_class

# ----- ListOffsets (2) ------------------------------------------------------------------------

OFFSET_NOT_AVAILABLE_FROM = 5  # KIP-207


def _list_offsets_in(request: KafkaRequest) -> list_offsets.ListOffsets:
    body = request.body
    topics = tuple(
        (t.name, tuple(list_offsets.Asked(p.partition_index, p.timestamp,
                                          getattr(p, "current_leader_epoch", -1))
                       for p in t.partitions))
        for t in body.topics
    )  # fmt: skip
    return list_offsets.ListOffsets(
        topics, list_offsets.CONSUMER, getattr(body, "isolation_level", 0),
        request.header.api_version,
    )  # fmt: skip


def offset_code(code: int, version: int) -> int:
    """OFFSET_NOT_AVAILABLE as the version can say it."""
    if code == OffsetNotAvailableError.code and version < OFFSET_NOT_AVAILABLE_FROM:
        return LeaderNotAvailableError.code
    return code


def _list_offsets_out(request: KafkaRequest, result: list_offsets.ListOffsetsResult) -> Any:
    version = request.header.api_version
    cls = response_class(v.LIST_OFFSETS, version)
    topic_cls = nested(cls, "ListOffsetsTopicResponse")
    part_cls = nested(cls, "ListOffsetsPartitionResponse")
    topics = tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(part_cls, partition_index=p.partition,
                 error_code=offset_code(p.error_code, version), timestamp=p.timestamp,
                 offset=p.offset, leader_epoch=p.leader_epoch)
            for p in listed))
        for name, listed in result.topics
    )  # fmt: skip
    return make(cls, throttle_time=0, topics=topics)


LIST_OFFSETS = Codec(_list_offsets_in, _list_offsets_out)

# ----- OffsetForLeaderEpoch (23) --------------------------------------------------------------


def _epochs_in(request: KafkaRequest) -> ofle.OffsetForLeaderEpoch:
    return ofle.OffsetForLeaderEpoch(tuple(
        (t.topic, tuple(ofle.Asked(p.partition, p.current_leader_epoch, p.leader_epoch)
                        for p in t.partitions))
        for t in request.body.topics
    ))  # fmt: skip


def _epochs_out(request: KafkaRequest, result: ofle.OffsetForLeaderEpochResult) -> Any:
    cls = response_class(v.OFFSET_FOR_LEADER_EPOCH, request.header.api_version)
    topic_cls = nested(cls, "OffsetForLeaderTopicResult")
    part_cls = nested(cls, "EpochEndOffset")
    topics = tuple(
        make(topic_cls, topic=name, partitions=tuple(
            make(part_cls, error_code=p.error_code, partition=p.partition,
                 leader_epoch=p.leader_epoch, end_offset=p.end_offset)
            for p in ends))
        for name, ends in result.topics
    )  # fmt: skip
    return make(cls, throttle_time=0, topics=topics)


OFFSET_FOR_LEADER_EPOCH = Codec(_epochs_in, _epochs_out)
