"""A produced batch refused for some of its records (Kafka's RecordValidationException, KIP-467).

The leader refuses the whole batch (nothing of it is appended) with one error code for the
partition, INVALID_TIMESTAMP when a record's timestamp is out of bounds and INVALID_RECORD
otherwise, and names each bad record by its index in the batch with a message of its own
(`record_errors`). The Kafka door answers them in Produce v8+'s `record_errors`, the native door
in the same field of its answer; a Kafka client then fails the named records with the
partition's error and the others of the batch as refused because of them (librdkafka's
`_INVALID_DIFFERENT_RECORD`). So does odradek's client (client/record_failures.py): a named
record's future fails with the partition's error (InvalidRecordsError or
InvalidTimestampsError) and the record's own message, every other one of the batch with one
InvalidDifferentRecordError whose message and `record_errors` name the bad ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.api.produce import RecordError
from protocol.errors import InvalidRecordError, InvalidTimestampError, OdradekError, for_code


class RecordValidationError(OdradekError):
    """A batch refused for the records `record_errors` names (by their index in the batch:
    the `index` of a record's future in odradek's client). Empty only in a copy made from the
    message alone (`type(error)(error.message)`)."""

    def __init__(self, message: str | None = None, record_errors: Sequence[RecordError] = ()):
        super().__init__(message)
        self.record_errors = tuple(record_errors)


class InvalidRecordsError(RecordValidationError, InvalidRecordError):
    """INVALID_RECORD, for the records named."""


class InvalidTimestampsError(RecordValidationError, InvalidTimestampError):
    """INVALID_TIMESTAMP: at least one of the records named has a timestamp out of bounds."""


def produce_error(code: int, message: str, record_errors: Sequence[RecordError]) -> OdradekError:
    """The error a client raises for a partition's produce refusal: one naming the bad records
    when the answer names any, else the code's."""
    if record_errors and code == InvalidTimestampError.code:
        return InvalidTimestampsError(message, record_errors)
    if record_errors and code == InvalidRecordError.code:
        return InvalidRecordsError(message, record_errors)
    return for_code(code)(message)
