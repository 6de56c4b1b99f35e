"""ListOffsets' answer for one partition this broker leads: a function of the partition.

EARLIEST is the log start (nothing is tiered here; LATEST_TIERED and EARLIEST_PENDING_UPLOAD
get Kafka's -1 answer for a topic without tiered storage).
LATEST is the last fetchable offset: the log end for a replica, the HW for a consumer, the LSO
with read_committed; MAX_TIMESTAMP is the offset of the largest timestamp below that same
limit; a timestamp >= 0 is the first record whose timestamp is at least it, below that same
limit, with that record's timestamp and its batch's leader epoch (as Kafka; the record is found
inside its batch, log/reads.py). A lookup that finds nothing below the limit answers no error
and -1 for the timestamp, offset and leader epoch, as Kafka's ReplicaManager answers it.
A consumer asking a new leader whose HW still lags the start of its epoch gets
OFFSET_NOT_AVAILABLE (KIP-207). ReplicaManager (`list_offset`) finds the partition and checks
the leader epoch first.
"""

from __future__ import annotations

from broker.partition import Partition
from protocol.api.fetch import READ_COMMITTED
from protocol.api.list_offsets import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
)
from protocol.errors import OffsetNotAvailableError, OffsetOutOfRangeError

NONE = 0
NOT_FOUND = (NONE, -1, -1, -1)  # Kafka's answer: no error, no timestamp, offset or leader epoch


def offset_for_timestamp(
    p: Partition, replica_id: int, timestamp: int, isolation_level: int
) -> tuple[int, int, int, int]:
    """(error_code, timestamp, offset, leader_epoch) for `timestamp` in the led partition `p`."""
    log = p.log
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):  # nothing is tiered
        return NONE, -1, log.log_start_offset, p.leader_epoch
    if timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):  # not tiered
        return NONE, -1, -1, -1
    if replica_id < 0 and p.high_watermark < p.leader_epoch_start_offset:
        # KIP-207: a new leader whose HW still lags the start of its epoch could answer an
        # offset below one a consumer already saw from the old leader; ask again later
        return OffsetNotAvailableError.code, -1, -1, -1
    # Kafka's last fetchable offset: the log end for a replica, the HW for a consumer, the LSO
    # with read_committed; LATEST is it, and a lookup finding a record at or past it finds none
    limit = p.high_watermark if replica_id < 0 else log.log_end_offset
    if replica_id < 0 and isolation_level == READ_COMMITTED:
        limit = p.last_stable_offset
    if timestamp == LATEST_TIMESTAMP:
        return NONE, -1, limit, p.leader_epoch
    if timestamp == MAX_TIMESTAMP:
        found = log.times.offset_of_max_timestamp()
        if found is None or found[0] >= limit:
            return NOT_FOUND
        return NONE, found[1], found[0], p.leader_epoch
    if timestamp < 0:
        return OffsetOutOfRangeError.code, -1, -1, -1
    record = log.times.offset_for_timestamp(timestamp)
    if record is None or record.offset >= limit:
        return NOT_FOUND
    return NONE, record.timestamp_ms, record.offset, record.leader_epoch
