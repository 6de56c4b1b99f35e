"""Fetch (api key 1): many partitions per request, as seed 001 describes.

Consumers send replica_id -1; followers send their broker id (replication). The broker waits up
to max_wait_ms for min_bytes to accumulate (long polling) and answers with at most
partition_max_bytes per partition and max_bytes in all; at least one whole batch is returned for
the first partition with data even when it is larger, so a consumer never gets stuck.
`records` is served straight from the segment file.

Fetch sessions (KIP-227), used by followers: a request with session_epoch 0 (INITIAL_EPOCH)
asks the leader to remember its partitions (the answer's session_id names the session; 0 means
no room, fetch in full). Each later request names the session and its next epoch, and carries
only the partitions whose fetch position changed (and `forgotten` ones to drop); the answer
carries only partitions with records, an error, or a new high watermark or log start.
session_epoch -1 (FINAL_EPOCH, the default) is a plain full fetch without a session and closes
a session named by session_id. Top-level errors: FETCH_SESSION_ID_NOT_FOUND,
INVALID_FETCH_SESSION_EPOCH (start a new session).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.api.spec import ApiSpec
from protocol.schema import Records

CONSUMER_REPLICA_ID = -1
INITIAL_EPOCH = 0  # session_epoch: open a new session (closing the one named, if any)
FINAL_EPOCH = -1  # session_epoch: no session (a full fetch), closing the one named, if any
NO_SESSION = 0  # session_id: none
READ_UNCOMMITTED = 0  # isolation_level: up to the high watermark
READ_COMMITTED = 1  # isolation_level: up to the last stable offset (KIP-98)


@dataclass(frozen=True, slots=True)
class FetchPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1  # followers report theirs


@dataclass(frozen=True, slots=True)
class FetchTopic:
    name: str
    partitions: list[FetchPartition]


@dataclass(frozen=True, slots=True)
class FetchRequest:
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: list[FetchTopic]
    session_id: int = NO_SESSION
    session_epoch: int = FINAL_EPOCH
    forgotten: list[ForgottenTopic] = field(default_factory=list)
    isolation_level: int = READ_UNCOMMITTED  # consumers only; followers read to the log end


@dataclass(frozen=True, slots=True)
class ForgottenTopic:
    """Partitions an incremental fetch drops from its session."""

    name: str
    partitions: list[int]


@dataclass(frozen=True, slots=True)
class FetchPartitionResponse:
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    records: Records
    last_stable_offset: int = -1
    # read_committed: (producer id, first offset) of the aborted txns in the records
    aborted_transactions: list[AbortedTransaction] | None = None


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class FetchTopicResponse:
    name: str
    partitions: list[FetchPartitionResponse]


@dataclass(frozen=True, slots=True)
class FetchResponse:
    error_code: int
    topics: list[FetchTopicResponse]
    throttle_time_ms: int = 0
    session_id: int = NO_SESSION


FETCH = ApiSpec(1, "Fetch", FetchRequest, FetchResponse)
