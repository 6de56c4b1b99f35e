"""ListOffsets (2), v1-v10: earliest (-2), latest (-1: the high watermark; read_committed, v2+:
the last stable offset), by timestamp, max timestamp (-3, v7+: the first record holding the
largest timestamp, KIP-734), earliest local (-4, v8+: the log start, nothing being tiered) and
latest tiered (-5, v9+: offset -1, as Kafka answers without tiered storage), all through the same
lookup as the native ListOffsets (broker/replica_manager.py `list_offset`). v10's timeout is for
tiered lookups only. Kafka clients are consumers (replica -1).
A new leader whose HW lags its epoch's start answers OFFSET_NOT_AVAILABLE (v5+) or
LEADER_NOT_AVAILABLE (older), as Kafka does (KIP-207)."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers import list_offsets as native
from broker.handlers.kafka._adapt import as_native, per_topic
from broker.session import Session
from protocol.api.fetch import CONSUMER_REPLICA_ID
from protocol.api.list_offsets import (
    LIST_OFFSETS,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.errors import LeaderNotAvailableError, OffsetNotAvailableError
from protocol.kafka.codec import KafkaRequest, make, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    topics = [
        ListOffsetsTopic(
            t.name,
            [
                ListOffsetsPartition(
                    p.partition_index, p.timestamp, getattr(p, "current_leader_epoch", -1)
                )
                for p in t.partitions
            ],
        )
        for t in request.body.topics
    ]
    native_req = ListOffsetsRequest(
        CONSUMER_REPLICA_ID, topics, getattr(request.body, "isolation_level", 0)
    )
    resp: ListOffsetsResponse = native.handle(
        ctx, as_native(LIST_OFFSETS, native_req, request), session
    )
    version = request.header.api_version
    cls = response_class(LIST_OFFSETS.key, version)
    out = per_topic(
        cls, resp.topics, "ListOffsetsTopicResponse", "ListOffsetsPartitionResponse",
        lambda p: {"partition_index": p.partition, "error_code": _code(p.error_code, version),
                   "timestamp": p.timestamp, "offset": p.offset, "leader_epoch": p.leader_epoch},
    )  # fmt: skip
    return make(cls, throttle_time=0, topics=out)


def _code(code: int, version: int) -> int:
    """OFFSET_NOT_AVAILABLE came with v5 (KIP-207); Kafka answers older versions with
    LEADER_NOT_AVAILABLE, which their clients retry too."""
    if code == OffsetNotAvailableError.code and version < 5:
        return LeaderNotAvailableError.code
    return code
