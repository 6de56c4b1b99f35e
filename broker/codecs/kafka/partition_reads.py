"""The Kafka door's codecs of the partition reads besides Fetch (see
broker/codecs/kafka/__init__.py).

ListOffsets (2), v1-v10: Kafka clients are consumers (replica -1); v2+ carry the isolation
level, v4+ the current leader epoch. OFFSET_NOT_AVAILABLE came with v5 (KIP-207): older
versions are answered LEADER_NOT_AVAILABLE, which their clients retry too, as Kafka answers
them. v10's timeout is for tiered lookups only.
"""

from __future__ import annotations

from typing import Any

from broker.codecs import Codec
from broker.operations import list_offsets
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
        topics, list_offsets.CONSUMER, getattr(body, "isolation_level", 0)
    )


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
