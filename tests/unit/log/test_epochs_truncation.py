"""The leader-epoch cache, end_offset_for_epoch, truncation, and offsets by time."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.epoch import LeaderEpochCache
from broker.log.log import EPOCH_FILE
from protocol.errors import OffsetOutOfRangeError

from .conftest import T0, OpenLog, batch, read_values


def _epoch_log(open_log: OpenLog, **config: object):  # type: ignore[no-untyped-def]
    log = open_log(segment_bytes=300, **config)
    for epoch, count in ((0, 3), (2, 4), (5, 2)):  # epoch 0: 0-2, 2: 3-6, 5: 7-8
        for _ in range(count):
            log.append_as_leader(batch([b"e" * 40]), epoch)
    return log


def test_epoch_cache_records_first_offsets(open_log: OpenLog, log_dir: Path) -> None:
    log = _epoch_log(open_log)
    assert log.epochs.entries() == [(0, 0), (2, 3), (5, 7)]
    assert log.epochs.latest_epoch == 5
    text = (log_dir / EPOCH_FILE).read_text()
    assert text == "0\n3\n0 0\n2 3\n5 7\n"  # written through, Kafka's layout


@pytest.mark.parametrize(
    "requested, answer",
    [
        (5, (5, 9)),  # the latest epoch: log end offset
        (2, (2, 7)),  # ends where epoch 5 starts
        (0, (0, 3)),
        (1, (0, 3)),  # unknown epoch between known ones: the one below
        (3, (2, 7)),
        (6, (-1, -1)),  # above the latest
        (-1, (-1, -1)),
    ],
)
def test_end_offset_for_epoch(open_log: OpenLog, requested: int, answer: tuple[int, int]) -> None:
    assert _epoch_log(open_log).end_offset_for_epoch(requested) == answer


def test_end_offset_for_an_epoch_below_the_first_known(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch([b"x"]), 4)
    assert log.end_offset_for_epoch(2) == (2, 0)  # Kafka: the first known epoch's start


def test_truncate_to_drops_batches_and_epochs(open_log: OpenLog) -> None:
    log = _epoch_log(open_log)
    assert log.segments.count > 1
    log.truncate_to(5)
    assert log.log_end_offset == 5
    assert log.epochs.entries() == [(0, 0), (2, 3)]
    assert log.end_offset_for_epoch(2) == (2, 5)
    assert [o for o, _ in read_values(log)] == [0, 1, 2, 3, 4]
    assert log.append_as_leader(batch([b"new"]), 6).base_offset == 5
    assert log.epochs.entries() == [(0, 0), (2, 3), (6, 5)]
    assert read_values(log)[-1] == (5, b"new")


def test_truncate_removes_a_batch_holding_the_offset_whole(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(batch([b"a", b"b"]), 0)
    log.append_as_leader(batch([b"c", b"d", b"e"]), 0)  # offsets 2-4
    log.truncate_to(3)
    assert log.log_end_offset == 2
    log.truncate_to(10)  # beyond the end: nothing
    assert log.log_end_offset == 2


def test_truncation_survives_reopen_and_rebuilds_indexes(open_log: OpenLog) -> None:
    log = _epoch_log(open_log, index_interval_bytes=0)
    log.truncate_to(4)
    log.append_as_leader(batch([b"z" * 40]), 7)
    log.close()
    reopened = open_log(segment_bytes=300, index_interval_bytes=0)
    assert reopened.log_end_offset == 5
    assert reopened.epochs.entries() == [(0, 0), (2, 3), (7, 4)]
    assert [v for _, v in read_values(reopened)][-1] == b"z" * 40


def test_truncate_fully_and_start_at(open_log: OpenLog) -> None:
    log = _epoch_log(open_log)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.segments.count) == (100, 100, 1)
    assert log.epochs.latest_epoch is None
    with pytest.raises(OffsetOutOfRangeError):
        log.read(50, 100)
    assert log.append_as_leader(batch([b"a"]), 9).base_offset == 100
    log.close()
    reopened = open_log(segment_bytes=300)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (100, 101)
    assert reopened.epochs.entries() == [(9, 100)]


def test_epoch_cache_truncation_from_start(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path / "cp", [(1, 0), (3, 10), (4, 20)])
    cache.truncate_from_start(15)
    assert cache.entries() == [(3, 15), (4, 20)]
    cache.truncate_from_start(20)
    assert cache.entries() == [(4, 20)]
    assert LeaderEpochCache.load(tmp_path / "cp")[0].entries() == [(4, 20)]


def test_epoch_cache_ignores_old_epochs(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path / "cp")
    assert cache.assign(3, 0)
    assert not cache.assign(3, 5) and not cache.assign(2, 6) and not cache.assign(-1, 7)
    assert cache.assign(4, 8)
    assert cache.entries() == [(3, 0), (4, 8)]


def test_offsets_by_time(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=400, index_interval_bytes=100)
    for i in range(30):  # batch i: offsets 2i, 2i+1 with timestamps T0+10i and T0+10i+5
        log.append_as_leader(batch([b"t" * 20] * 2, timestamps=[T0 + 10 * i, T0 + 10 * i + 5]), 0)
    assert log.segments.count > 2
    # the record's offset and timestamp, not its batch's base offset and max timestamp
    assert log.times.offset_for_timestamp(T0) == (0, T0, 0)
    assert log.times.offset_for_timestamp(T0 - 1000) == (0, T0, 0)
    assert log.times.offset_for_timestamp(T0 + 5) == (1, T0 + 5, 0)
    assert log.times.offset_for_timestamp(T0 + 6) == (2, T0 + 10, 0)
    assert log.times.offset_for_timestamp(T0 + 171) == (35, T0 + 175, 0)
    assert log.times.offset_for_timestamp(T0 + 176) == (36, T0 + 180, 0)
    assert log.times.offset_for_timestamp(T0 + 295) == (59, T0 + 295, 0)
    assert log.times.offset_for_timestamp(T0 + 296) is None


def test_offsets_by_time_with_out_of_order_timestamps(open_log: OpenLog) -> None:
    log = open_log(index_interval_bytes=0)
    for ts in (T0 + 50, T0 + 10, T0 + 80, T0 + 20):
        log.append_as_leader(batch([b"o"], timestamp_ms=ts), 0)
    assert log.times.offset_for_timestamp(T0 + 40) == (0, T0 + 50, 0)
    assert log.times.offset_for_timestamp(T0 + 60) == (2, T0 + 80, 0)
