"""A produced batch refused for some of its records (Kafka's RecordValidationException, KIP-467).

The leader refuses the whole batch (nothing of it is appended) with one error code for the
partition, INVALID_TIMESTAMP when a record's timestamp is out of bounds and INVALID_RECORD
otherwise, and names each bad record by its index in the batch with a message of its own
(`record_errors`). The Kafka door answers them in Produce v8+'s `record_errors`, the native door
in the same field of its answer; a client then fails the named records with the partition's
error and the others of the batch as refused because of them (librdkafka's
`_INVALID_DIFFERENT_RECORD`).
"""

from __future__ import annotations

from protocol.api.produce import RecordError
from protocol.errors import InvalidRecordError, InvalidTimestampError, OdradekError


class RecordValidationError(OdradekError):
    """A batch refused for the records `record_errors` names (never empty)."""

    def __init__(self, message: str, record_errors: tuple[RecordError, ...]) -> None:
        super().__init__(message)
        self.record_errors = record_errors


class InvalidRecordsError(RecordValidationError, InvalidRecordError):
    """INVALID_RECORD, for the records named."""


class InvalidTimestampsError(RecordValidationError, InvalidTimestampError):
    """INVALID_TIMESTAMP: at least one of the records named has a timestamp out of bounds."""
