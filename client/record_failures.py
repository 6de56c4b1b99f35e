"""How the records of a batch refused for some of them fail (KIP-467), as librdkafka fails them.

The broker refuses the whole batch and names the bad records by index (protocol/record_errors.py
`RecordValidationError.record_errors`). `record_failures` turns that one refusal into each named
record's own error (the partition's class, INVALID_RECORD or INVALID_TIMESTAMP, with the
record's own message) and one InvalidDifferentRecordError for every other record of the batch
(librdkafka's _INVALID_DIFFERENT_RECORD), which names the bad indexes. client/record_future.py
makes them once, when such a batch fails; a batch that succeeds never gets here.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.api.produce import RecordError
from protocol.errors import InvalidRecordError, OdradekError
from protocol.record_errors import RecordValidationError


class InvalidDifferentRecordError(RecordValidationError):
    """A valid record of a batch refused for its other records (librdkafka's
    _INVALID_DIFFERENT_RECORD; Kafka's Java producer: "part of a batch which had one or more
    invalid records"). Never sent on the wire: `code` is the partition's answer (INVALID_RECORD
    or INVALID_TIMESTAMP), `record_errors` the bad records. Not retriable: the batch it would
    be sent again in is refused again while those records are in it."""

    name = "INVALID_DIFFERENT_RECORD"
    retriable = False
    default_message = "Refused because another record of its batch was invalid."

    def __init__(
        self,
        message: str | None = None,
        record_errors: Sequence[RecordError] = (),
        code: int = InvalidRecordError.code,
    ) -> None:
        super().__init__(message, record_errors)
        self.code = code


INDEXES_NAMED_MAX = 20  # bad records' indexes named in the others' message, at most


def record_failures(
    error: RecordValidationError,
) -> tuple[dict[int, OdradekError], InvalidDifferentRecordError]:
    """({index of a named record: its own error}, the error of every other record of the
    batch), from a batch refused for `error.record_errors` (non-empty)."""
    own: dict[int, OdradekError] = {
        e.batch_index: type(error)(e.message or error.message, (e,)) for e in error.record_errors
    }
    indexes = sorted(own)
    named = ", ".join(str(i) for i in indexes[:INDEXES_NAMED_MAX])
    if len(indexes) > INDEXES_NAMED_MAX:
        named += f", ... ({len(indexes)} in all)"
    records = "record" if len(indexes) == 1 else "records"
    other = InvalidDifferentRecordError(
        f"refused because another record of its batch was invalid: {records} {named} "
        f"({error.name}: {error.message})",
        error.record_errors,
        error.code,
    )
    return own, other
