"""The producer's settings, checked before anything starts: sizes, compression, acks,
idempotence and transactions, as pure functions.

`check_settings` refuses what Kafka refuses (a UsageError of one line) and returns the acks in
effect and whether the producer is idempotent: a transactional producer is idempotent with
acks=all (an explicit conflicting setting is refused); idempotence (on by default, as in Kafka
since 3.0) takes effect only with acks=all and keeps 1 to MAX_IDEMPOTENT_IN_FLIGHT batches in
flight per partition (the batches per producer a broker remembers per partition).
"""

from __future__ import annotations

from protocol.batch import CODECS
from protocol.errors import UsageError

ACKS_ALL = -1
_ACKS = {0: 0, 1: 1, -1: -1, "all": -1, "0": 0, "1": 1, "-1": -1}

MAX_IDEMPOTENT_IN_FLIGHT = 5  # the batches per producer a broker remembers per partition


def parse_acks(acks: int | str) -> int:
    if acks not in _ACKS:
        raise UsageError(f"acks must be 0, 1, -1 or 'all', not {acks!r}")
    return _ACKS[acks]


def check_settings(
    *, acks: int | str | None, batch_size: int, max_request_size: int, buffer_memory: int,
    max_in_flight_per_partition: int, compression_type: str | None,
    enable_idempotence: bool | None, transactional_id: str | None, enable_2pc: bool,
) -> tuple[int, bool]:  # fmt: skip
    """(acks in effect, idempotent), or UsageError for settings that cannot go together."""
    if batch_size < 1 or max_request_size < 1024 or buffer_memory < max_request_size:
        raise UsageError(
            "need batch_size >= 1, max_request_size >= 1024, buffer_memory >= max_request_size"
        )
    if compression_type not in (None, *CODECS):
        raise UsageError(f"compression_type must be None or one of {sorted(CODECS)}")
    if enable_2pc and transactional_id is None:
        raise UsageError("enable_2pc (two-phase commit) needs a transactional_id")
    if transactional_id is not None:  # Kafka's transactional producer: idempotent, acks=all
        if acks is not None and parse_acks(acks) != ACKS_ALL:
            raise UsageError(f"a transactional producer needs acks='all', not {acks!r}")
        if enable_idempotence is False:
            raise UsageError("a transactional producer is idempotent: enable_idempotence=False "
                             "cannot go with a transactional_id")  # fmt: skip
        acks = ACKS_ALL
    parsed = parse_acks(1 if acks is None else acks)
    idempotent = enable_idempotence is not False and parsed == ACKS_ALL
    if idempotent and not 1 <= max_in_flight_per_partition <= MAX_IDEMPOTENT_IN_FLIGHT:
        raise UsageError(
            f"an idempotent producer keeps 1 to {MAX_IDEMPOTENT_IN_FLIGHT} batches in flight "
            "per partition"
        )
    return parsed, idempotent
