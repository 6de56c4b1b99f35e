"""Raising the log start offset (DeleteRecords): reads below it are out of range, closed
segments wholly below it go (deferred, as retention's), the active one stays, the epoch cache
starts there, and the new start survives a restart, clean or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.durability import LOG_START_FILE
from broker.log.segment import DELETED_SUFFIX
from protocol.clock import ManualClock
from protocol.errors import OffsetOutOfRangeError

from .conftest import OpenLog, batch, read_values


def _log_of_segments(open_log: OpenLog, count: int = 20):  # type: ignore[no-untyped-def]
    log = open_log(segment_bytes=400)
    for i in range(count):
        log.append_as_leader(batch([b"v%03d" % i + b"x" * 60]), 0 if i < 10 else 1)
    assert log.segments.count > 3
    return log


def test_advance_deletes_the_segments_wholly_below(open_log: OpenLog, log_dir: Path) -> None:
    log = _log_of_segments(open_log)
    bases = log.segments.base_offsets()
    target = bases[2] + 1  # inside the third segment
    assert log.advance_log_start_offset(target)
    assert log.log_start_offset == target
    assert log.segments.base_offsets() == bases[2:]  # the segment holding it stays
    assert len(list(log_dir.glob(f"*.log{DELETED_SUFFIX}"))) == 2
    with pytest.raises(OffsetOutOfRangeError):
        log.read(target - 1, 1000)
    assert read_values(log)[0][0] == target
    assert (log_dir / LOG_START_FILE).read_text().split("\n")[2] == str(target)


def test_advance_never_moves_down_nor_past_the_end(open_log: OpenLog) -> None:
    log = _log_of_segments(open_log)
    assert log.advance_log_start_offset(5)
    assert not log.advance_log_start_offset(5)
    assert not log.advance_log_start_offset(3)
    assert log.log_start_offset == 5
    with pytest.raises(OffsetOutOfRangeError):
        log.advance_log_start_offset(log.log_end_offset + 1)


def test_advance_to_the_end_keeps_the_active_segment(open_log: OpenLog) -> None:
    log = _log_of_segments(open_log)
    end = log.log_end_offset
    active = log.segments.base_offsets()[-1]
    assert log.advance_log_start_offset(end)
    assert log.segments.base_offsets() == [active]
    assert log.read(end, 1000).slice is None  # nothing left to read, and not an error
    info = log.append_as_leader(batch([b"after"]), 1)
    assert info.base_offset == end


def test_epoch_cache_starts_at_the_new_start(open_log: OpenLog) -> None:
    log = _log_of_segments(open_log)
    assert log.epochs.entries() == [(0, 0), (1, 10)]
    log.advance_log_start_offset(12)
    assert log.epochs.entries() == [(1, 12)]


@pytest.mark.parametrize("clean", [True, False])
def test_the_new_start_survives_a_restart(open_log: OpenLog, clean: bool) -> None:
    log = _log_of_segments(open_log)
    log.advance_log_start_offset(7)
    if clean:
        log.close()
    else:
        log.close_unclean()
    reopened = open_log(segment_bytes=400)
    assert reopened.log_start_offset == 7
    with pytest.raises(OffsetOutOfRangeError):
        reopened.read(6, 100)
    assert read_values(reopened)[0][0] == 7


def test_deleted_segments_are_purged_after_the_delay(
    open_log: OpenLog, clock: ManualClock, log_dir: Path
) -> None:
    log = _log_of_segments(open_log)
    log.advance_log_start_offset(log.segments.base_offsets()[1])
    assert list(log_dir.glob(f"*{DELETED_SUFFIX}"))
    clock.advance(log.config.file_delete_delay_ms)
    assert log.segments.purge_deleted() == 1  # one segment
    assert not list(log_dir.glob(f"*{DELETED_SUFFIX}"))
