"""The segment's tail: the batches after its last indexed one, kept in memory for reads at the
log's end. A read there touches no file; every writer (append, truncation, reload, recovery)
keeps the tail exact, so reads from every offset still return the right whole batches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import broker.log.segment as segment_module
from broker.log.log import Log
from protocol.batch import iter_batches

from .conftest import OpenLog, batch, read_values, slice_bytes


def _fill(log: Log, count: int, first: int = 0) -> list[tuple[int, bytes]]:
    expected = []
    for i in range(first, first + count):
        value = bytes([i % 251]) * (10 + i % 7)
        info = log.append_as_leader(batch([value, value[:3]]), 1)
        expected += [(info.base_offset, value), (info.base_offset + 1, value[:3])]
    return expected


def _every_offset_reads_right(log: Log, expected: list[tuple[int, bytes]]) -> None:
    for k, (offset, _) in enumerate(expected):
        assert read_values(log, offset) == expected[k:], offset
        one = log.read(offset, 1)  # the batch holding the offset, alone
        headers = [h for _, h in iter_batches(slice_bytes(one))]
        assert len(headers) == 1 and headers[0].base_offset <= offset <= headers[0].last_offset


def test_a_read_at_the_log_end_reads_no_file(
    open_log: OpenLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caught-up reader's fetch (the batches just appended) is resolved from memory."""
    log = open_log(index_interval_bytes=4096)
    expected = _fill(log, 40)  # ~70-byte batches: one indexed batch at most, the rest tail
    reads = []
    real_pread = os.pread

    def counting_pread(fd: int, length: int, offset: int) -> bytes:
        reads.append((length, offset))
        return real_pread(fd, length, offset)

    monkeypatch.setattr(segment_module.os, "pread", counting_pread)
    for offset in range(log.log_end_offset - 6, log.log_end_offset):
        result = log.read(offset, 1 << 20)
        assert result.next_offset == log.log_end_offset
        assert result.first_offset in (offset, offset - 1)  # its batch holds two records
    assert reads == []  # found in the tail: no header walk
    monkeypatch.undo()
    _every_offset_reads_right(log, expected)


def test_the_tail_stays_exact_through_truncation_reload_and_recovery(
    open_log: OpenLog, log_dir: Path
) -> None:
    config = {"index_interval_bytes": 200, "segment_bytes": 2000}
    log = open_log(**config)
    expected = _fill(log, 50)
    _every_offset_reads_right(log, expected)

    log.truncate_to(expected[-15][0] - 1)  # a follower's truncation, mid-tail or not
    expected = [(o, v) for o, v in expected if o < log.log_end_offset]
    _every_offset_reads_right(log, expected)
    expected += _fill(log, 7, first=60)
    _every_offset_reads_right(log, expected)

    log.close()  # a clean reopen loads the indexes and rescans the tail
    log = open_log(**config)
    _every_offset_reads_right(log, expected)
    expected += _fill(log, 5, first=70)
    _every_offset_reads_right(log, expected)

    log.close_unclean()  # an unclean one recovers: every batch checked, indexes rebuilt
    log = open_log(**config)
    _every_offset_reads_right(log, expected)
    expected += _fill(log, 5, first=80)
    _every_offset_reads_right(log, expected)
