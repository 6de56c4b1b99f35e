"""Rolling segments by size, time and index size; retention by time and bytes; deferred deletes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.log.durability import LOG_START_FILE
from broker.log.segment import DELETED_SUFFIX
from protocol.clock import ManualClock
from protocol.errors import OffsetOutOfRangeError

from .conftest import T0, OpenLog, batch, read_values, slice_bytes

HOUR_MS = 3600 * 1000


def test_roll_by_size(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(segment_bytes=1000)
    sizes = [log.append_as_leader(batch([b"x" * 100]), 0).size_bytes for _ in range(30)]
    per_segment = 1000 // sizes[0]
    assert log.segments.count == -(-30 // per_segment)
    bases = log.segments.base_offsets()
    assert bases == [i * per_segment for i in range(len(bases))]
    for path in log_dir.glob("*.log"):
        assert path.stat().st_size <= 1000
        assert path.name == f"{int(path.stem):020d}.log"
    assert [o for o, _ in read_values(log)] == list(range(30))


def test_a_batch_larger_than_a_segment_gets_a_segment_of_its_own(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=100)
    for _ in range(3):
        log.append_as_leader(batch([b"y" * 300]), 0)
    assert log.segments.base_offsets() == [0, 1, 2]


def test_roll_by_time_from_the_first_append(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(segment_ms=HOUR_MS)
    log.append_as_leader(batch([b"a"]), 0)
    clock.advance(HOUR_MS - 1)
    log.append_as_leader(batch([b"b"]), 0)
    assert log.segments.count == 1
    clock.advance(1)
    log.append_as_leader(batch([b"c"]), 0)
    assert log.segments.base_offsets() == [0, 2]
    clock.advance(10 * HOUR_MS)  # an idle hour does not roll an empty segment...
    assert log.segments.count == 2
    log.append_as_leader(batch([b"d"]), 0)  # ...its clock starts at its first append
    assert log.segments.base_offsets() == [0, 2, 3]


def test_roll_when_the_offset_index_is_full(open_log: OpenLog) -> None:
    log = open_log(index_interval_bytes=0, segment_index_bytes=16 * 4)
    for _ in range(9):
        log.append_as_leader(batch([b"z"]), 0)
    assert log.segments.base_offsets() == [0, 4, 8]


def test_explicit_roll_and_empty_roll(open_log: OpenLog) -> None:
    log = open_log()
    log.roll()
    assert log.segments.count == 1  # nothing to close
    log.append_as_leader(batch([b"a"]), 0)
    log.roll()
    assert log.segments.base_offsets() == [0, 1]


def _aged_log(open_log: OpenLog, clock: ManualClock, **config: object):  # type: ignore[no-untyped-def]
    log = open_log(segment_bytes=400, **config)
    for _ in range(20):
        log.append_as_leader(batch([b"r" * 50], timestamp_ms=clock.time_ms()), 0)
        clock.advance(HOUR_MS)
    return log


def test_retention_by_time_deletes_old_closed_segments(
    open_log: OpenLog, clock: ManualClock, log_dir: Path
) -> None:
    log = _aged_log(open_log, clock, retention_ms=5 * HOUR_MS, file_delete_delay_ms=1000)
    bases = log.segments.base_offsets()
    deleted = log.delete_retained_segments()
    assert deleted > 0
    assert log.segments.base_offsets() == bases[deleted:]
    assert log.log_start_offset == bases[deleted]
    newest_gone = bases[deleted] - 1  # its batch was appended that many hours before now
    assert clock.time_ms() - (T0 + newest_gone * HOUR_MS) > 5 * HOUR_MS
    with pytest.raises(OffsetOutOfRangeError):
        log.read(log.log_start_offset - 1, 1000)
    assert read_values(log)[0][0] == log.log_start_offset
    assert (log_dir / LOG_START_FILE).read_text().split("\n")[2] == str(log.log_start_offset)
    assert log.delete_retained_segments() == 0


def test_retention_never_deletes_the_active_segment(open_log: OpenLog, clock: ManualClock) -> None:
    log = _aged_log(open_log, clock, retention_ms=1)
    log.delete_retained_segments()
    assert log.segments.count == 1
    assert log.log_end_offset == 20


def test_retention_by_bytes(open_log: OpenLog, clock: ManualClock) -> None:
    log = _aged_log(open_log, clock, retention_bytes=1000)
    before = log.size_bytes
    bases = log.segments.base_offsets()
    deleted = log.delete_retained_segments()
    assert deleted > 0 and log.size_bytes <= before
    assert log.size_bytes - 1000 < 400  # one more deletion would go below the limit
    assert log.log_start_offset == bases[deleted]


def test_deleted_segments_stay_readable_until_the_delay(
    open_log: OpenLog, clock: ManualClock, log_dir: Path
) -> None:
    log = _aged_log(open_log, clock, retention_ms=HOUR_MS, file_delete_delay_ms=60_000)
    in_flight = log.read(0, 1000)  # a fetch response about to be sent
    first_bytes = slice_bytes(in_flight)
    assert log.delete_retained_segments() > 0
    pending = sorted(p.name for p in log_dir.glob(f"*{DELETED_SUFFIX}"))
    assert pending and all(name.endswith(".log" + DELETED_SUFFIX) for name in pending)
    assert slice_bytes(in_flight) == first_bytes  # the fd is still open
    clock.advance(59_999)
    assert log.segments.purge_deleted() == 0
    clock.advance(1)
    assert log.segments.purge_deleted() == len(pending)
    assert not list(log_dir.glob(f"*{DELETED_SUFFIX}"))
    with pytest.raises(OSError):
        os.fstat(in_flight.slice.fd)


def test_log_start_offset_survives_a_restart(open_log: OpenLog, clock: ManualClock) -> None:
    log = _aged_log(open_log, clock, retention_ms=3 * HOUR_MS)
    log.delete_retained_segments()
    start = log.log_start_offset
    log.close_unclean()
    reopened = open_log(segment_bytes=400)
    assert reopened.log_start_offset == start
    with pytest.raises(OffsetOutOfRangeError):
        reopened.read(start - 1, 100)
