"""Transactions in the native protocol (KIP-98), with Kafka's api keys: AddPartitionsToTxn (24),
AddOffsetsToTxn (25), EndTxn (26), TxnOffsetCommit (28), DescribeProducers (61),
DescribeTransactions (65), ListTransactions (66). FindCoordinator with key type 1 (group.py)
finds a transactional id's coordinator; InitProducerId with a transactional id
(producer_ids.py) starts a producer there.

To the transaction coordinator of the id:
    AddPartitionsToTxn   TransactionalId, ProducerId, Epoch, [Topic [Partition]]
                                       -> [Topic [Partition, ErrorCode]]
    AddOffsetsToTxn      TransactionalId, ProducerId, Epoch, GroupId -> ErrorCode
    EndTxn               TransactionalId, ProducerId, Epoch, Committed -> ErrorCode
    DescribeTransactions [TransactionalId] -> a row per id
To the group's coordinator:
    TxnOffsetCommit      TransactionalId, GroupId, ProducerId, Epoch, [Topic [Partition, Offset,
                         Metadata]], Generation, MemberId -> [Topic [Partition, ErrorCode]]
To any broker:
    ListTransactions     StateFilters, ProducerIdFilters, DurationFilter -> the ids it coordinates
    DescribeProducers    [Topic [Partition]] -> the active producers of partitions it leads

Error codes are Kafka's (coordinator/transaction/txn.py's names): PRODUCER_FENCED (90) for a
producer a newer one with the same transactional id replaced, CONCURRENT_TRANSACTIONS (51,
retriable) while the previous transaction's markers are written, INVALID_TXN_STATE (48),
NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS (retriable: find the coordinator again).
Fields follow Kafka's request versions that carry one transaction each (AddPartitionsToTxn v3,
TxnOffsetCommit v3); a message is a msgpack array of its fields in order (schema.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec


@dataclass(frozen=True, slots=True)
class TxnTopic:
    name: str
    partitions: list[int]


@dataclass(frozen=True, slots=True)
class TxnPartitionResult:
    partition: int
    error_code: int


@dataclass(frozen=True, slots=True)
class TxnTopicResult:
    name: str
    partitions: list[TxnPartitionResult]


# ----- AddPartitionsToTxn --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: list[TxnTopic]
    verify_only: bool = False  # KIP-890: only ask whether they are in the transaction
    txn_version: int = 0  # 2: a leader adds them for a TV2 producer (KIP-890 part 2)


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResponse:
    topics: list[TxnTopicResult]
    throttle_time_ms: int = 0


# ----- AddOffsetsToTxn, EndTxn ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnResponse:
    error_code: int
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


@dataclass(frozen=True, slots=True)
class EndTxnResponse:
    error_code: int
    throttle_time_ms: int = 0


# ----- TxnOffsetCommit -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitPartition:
    partition: int
    committed_offset: int
    metadata: str | None = None
    leader_epoch: int = -1  # KIP-320's committed leader epoch; -1: not given


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitTopic:
    name: str
    partitions: list[TxnOffsetCommitPartition]


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    topics: list[TxnOffsetCommitTopic]
    generation_id: int = -1  # KIP-447: checked as OffsetCommit checks them, when given
    member_id: str = ""
    group_instance_id: str | None = None  # a static member's (KIP-345): a fenced one is refused


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponse:
    topics: list[TxnTopicResult]
    throttle_time_ms: int = 0


# ----- DescribeTransactions, ListTransactions ------------------------------------------------


@dataclass(frozen=True, slots=True)
class DescribeTransactionsRequest:
    transactional_ids: list[str]


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    error_code: int
    transactional_id: str
    state: str  # Kafka's names: "Empty", "Ongoing", "PrepareCommit", ...
    timeout_ms: int
    start_time_ms: int  # -1: no transaction open
    producer_id: int
    producer_epoch: int
    topics: list[TxnTopic]


@dataclass(frozen=True, slots=True)
class DescribeTransactionsResponse:
    transactions: list[TransactionDescription]
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class ListTransactionsRequest:
    state_filters: list[str]
    producer_id_filters: list[int]
    duration_filter_ms: int = -1  # KIP-994: >= 0 keeps transactions open longer than it


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class ListTransactionsResponse:
    error_code: int
    unknown_state_filters: list[str]
    transactions: list[ListedTransaction]
    throttle_time_ms: int = 0


# ----- DescribeProducers ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DescribeProducersRequest:
    topics: list[TxnTopic]


@dataclass(frozen=True, slots=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int  # -1: no batch retained
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: no open transaction


@dataclass(frozen=True, slots=True)
class DescribeProducersPartition:
    partition: int
    error_code: int
    error_message: str | None
    active_producers: list[ProducerState]


@dataclass(frozen=True, slots=True)
class DescribeProducersTopic:
    name: str
    partitions: list[DescribeProducersPartition]


@dataclass(frozen=True, slots=True)
class DescribeProducersResponse:
    topics: list[DescribeProducersTopic]
    throttle_time_ms: int = 0


ADD_PARTITIONS_TO_TXN = ApiSpec(
    24, "AddPartitionsToTxn", AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
)
ADD_OFFSETS_TO_TXN = ApiSpec(25, "AddOffsetsToTxn", AddOffsetsToTxnRequest, AddOffsetsToTxnResponse)
END_TXN = ApiSpec(26, "EndTxn", EndTxnRequest, EndTxnResponse)
TXN_OFFSET_COMMIT = ApiSpec(28, "TxnOffsetCommit", TxnOffsetCommitRequest, TxnOffsetCommitResponse)
DESCRIBE_PRODUCERS = ApiSpec(
    61, "DescribeProducers", DescribeProducersRequest, DescribeProducersResponse
)
DESCRIBE_TRANSACTIONS = ApiSpec(
    65, "DescribeTransactions", DescribeTransactionsRequest, DescribeTransactionsResponse
)
LIST_TRANSACTIONS = ApiSpec(
    66, "ListTransactions", ListTransactionsRequest, ListTransactionsResponse
)
