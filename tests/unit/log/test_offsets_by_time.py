"""ListOffsets by timestamp looks inside the batch: the answer is the first record whose
timestamp is at or after the target (its offset, its timestamp, its batch's leader epoch), as
Kafka's FileRecords.searchForTimestamp, for plain and compressed batches; under LogAppendTime
every record of a batch carries the batch's timestamp, so the batch's first record answers."""

from __future__ import annotations

import pytest

from broker.log.config import LogConfig
from broker.log_validator import validate_for_leader
from protocol import compression
from protocol.batch import build_batch

from .conftest import T0, OpenLog

EARLY, LATE = 1234, 999_999_999_999  # issue 33's two timestamps, in one batch


def two_records(codec: int) -> bytes:
    return build_batch([(None, b"early", None, EARLY), (None, b"late", None, LATE)], codec=codec)


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP, compression.ZSTD])
def test_the_record_inside_the_batch_answers(open_log: OpenLog, codec: int) -> None:
    log = open_log(index_interval_bytes=0)
    log.append_as_leader(build_batch([(None, b"before", None, 100)]), 3)  # offset 0
    log.append_as_leader(two_records(codec), 5)  # offsets 1 and 2
    assert log.times.offset_for_timestamp(LATE) == (2, LATE, 5)  # not (1, LATE): the record's
    assert log.times.offset_for_timestamp(EARLY + 1) == (2, LATE, 5)
    assert log.times.offset_for_timestamp(EARLY) == (1, EARLY, 5)  # not the batch's max
    assert log.times.offset_for_timestamp(101) == (1, EARLY, 5)
    assert log.times.offset_for_timestamp(100) == (0, 100, 3)
    assert log.times.offset_for_timestamp(LATE + 1) is None


def test_a_log_start_inside_the_batch_is_never_answered_below(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(build_batch([(None, b"l", None, LATE), (None, b"e", None, EARLY)]), 0)
    assert log.advance_log_start_offset(1)
    assert log.times.offset_for_timestamp(0) == (1, EARLY, 0)  # the record at the log start
    assert log.times.offset_for_timestamp(EARLY + 1) is None  # only offset 0 (deleted) is later


def test_log_append_time_gives_the_first_record_its_batch_timestamp(open_log: OpenLog) -> None:
    cfg = LogConfig(retention_ms=None, message_timestamp_type="LogAppendTime")
    log = open_log(message_timestamp_type="LogAppendTime")
    for i, codec in enumerate((compression.NONE, compression.LZ4)):  # offsets 0-1, then 2-3
        stamped, _ = validate_for_leader(two_records(codec), cfg, T0 + 10 * i)
        log.append_as_leader(stamped, 0)
    # the records' create times (1234, 999999999999) are not what they answer by
    assert log.times.offset_for_timestamp(EARLY + 1) == (0, T0, 0)  # not (1, LATE)
    assert log.times.offset_for_timestamp(LATE) == (0, T0, 0)
    assert log.times.offset_for_timestamp(T0) == (0, T0, 0)
    assert log.times.offset_for_timestamp(T0 + 1) == (2, T0 + 10, 0)
    assert log.times.offset_for_timestamp(T0 + 11) is None
