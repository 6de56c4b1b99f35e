"""WriteTxnMarkers (api key 27, as Kafka's): a transaction coordinator tells partition leaders
to end a transaction (KIP-98). Broker to broker only.

Each marker names a producer id and epoch, COMMIT or ABORT, the coordinator epoch (the leader
epoch of the coordinator's `__transaction_state` partition: a marker from an older coordinator
is refused, TRANSACTION_COORDINATOR_FENCED) and the partitions, all led by the receiver. The
leader appends one control batch per partition (protocol/control.py) with acks=all and answers
once the marker is replicated, so a COMPLETE_COMMIT is written only after every partition holds
its marker. Per partition: NONE, NOT_LEADER_OR_FOLLOWER (the coordinator looks the leader up
again and retries), UNKNOWN_TOPIC_OR_PARTITION (the partition is gone: nothing to end), or the
producer-state errors (INVALID_PRODUCER_EPOCH).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec


@dataclass(frozen=True, slots=True)
class TxnMarkerTopic:
    name: str
    partitions: list[int]


@dataclass(frozen=True, slots=True)
class TxnMarker:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    topics: list[TxnMarkerTopic]


@dataclass(frozen=True, slots=True)
class WriteTxnMarkersRequest:
    markers: list[TxnMarker]


@dataclass(frozen=True, slots=True)
class TxnMarkerPartitionResult:
    partition: int
    error_code: int


@dataclass(frozen=True, slots=True)
class TxnMarkerTopicResult:
    name: str
    partitions: list[TxnMarkerPartitionResult]


@dataclass(frozen=True, slots=True)
class TxnMarkerResult:
    producer_id: int
    topics: list[TxnMarkerTopicResult]


@dataclass(frozen=True, slots=True)
class WriteTxnMarkersResponse:
    markers: list[TxnMarkerResult]


WRITE_TXN_MARKERS = ApiSpec(27, "WriteTxnMarkers", WriteTxnMarkersRequest, WriteTxnMarkersResponse)
