"""Produce (api key 0): record batches for partitions, answered per partition.

acks: 0 (no response is sent), 1 (leader appended), -1 (all in-sync replicas have it).
Each `records` holds exactly one record batch (protocol/batch.py); the broker checks its
header and CRC, stamps the base offset and leader epoch, and appends it unread. A batch the
leader refuses for some of its records (a compacted topic's keyless ones, timestamps out of
bounds: broker/log_validator.py) is answered with `record_errors` naming each (Kafka's
KIP-467); nothing of it is appended.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.api.spec import ApiSpec
from protocol.schema import OMITTED_AT_DEFAULT, Records

ACKS_NONE = 0
ACKS_LEADER = 1
ACKS_ALL = -1


@dataclass(frozen=True, slots=True)
class ProducePartition:
    partition: int
    records: Records


@dataclass(frozen=True, slots=True)
class ProduceTopic:
    name: str
    partitions: list[ProducePartition]


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    acks: int
    timeout_ms: int
    topics: list[ProduceTopic]
    # a transactional producer's id (as Kafka's Produce v3+): its transactional batches go in
    # only into partitions the transaction coordinator added to its transaction (KIP-890)
    transactional_id: str | None = None


@dataclass(frozen=True, slots=True)
class RecordError:
    """One record of a refused batch (Kafka's BatchIndexAndErrorMessage)."""

    batch_index: int  # the record's position in its batch, from 0
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ProducePartitionResponse:
    partition: int
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    error_message: str | None = None
    # the records that made the leader refuse the batch (added last, and left off the wire when
    # empty: a peer one build older reads every answer but such a refusal)
    record_errors: list[RecordError] = field(default_factory=list, metadata=OMITTED_AT_DEFAULT)


@dataclass(frozen=True, slots=True)
class ProduceTopicResponse:
    name: str
    partitions: list[ProducePartitionResponse]


@dataclass(frozen=True, slots=True)
class ProduceResponse:
    topics: list[ProduceTopicResponse]
    throttle_time_ms: int = 0


PRODUCE = ApiSpec(0, "Produce", ProduceRequest, ProduceResponse)
