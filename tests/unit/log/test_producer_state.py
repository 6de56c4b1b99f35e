"""Idempotent-producer state: the pure table (broker/producer_state.py) and the Log that feeds
it (dedup on leader appends, follower appends, rebuild on open and after truncation)."""

from __future__ import annotations

import os

import pytest

from broker.log.log import Log
from broker.producer_state import (
    REBUILD_MAX_BYTES,
    SEQUENCE_MODULUS,
    ProducerStateTable,
    Verdict,
    last_sequence,
    rebuild_window,
    scan_headers,
)
from protocol.batch import build_batch, iter_batches, stamp
from protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from tests.unit.log.conftest import T0, OpenLog, read_values

PID = 12345


def pbatch(values: list[bytes], seq: int, pid: int = PID, epoch: int = 0) -> bytes:
    rows = [(None, v, None, T0) for v in values]
    return build_batch(rows, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


# ----- the pure table ---------------------------------------------------------------------------


def test_unknown_producer_first_batch_appends_and_a_gap_is_out_of_order() -> None:
    t = ProducerStateTable()
    assert t.check(PID, 0, 0, 9) == (Verdict.APPEND, None)
    assert t.check(PID, 0, 5, 9)[0] is Verdict.OUT_OF_ORDER  # complete table: seq 0..4 missing
    t.complete = False  # state may have been lost (log tail only): accept any first sequence
    assert t.check(PID, 0, 5, 9) == (Verdict.APPEND, None)
    assert t.check(-1, -1, -1, -1) == (Verdict.APPEND, None)  # not idempotent


def test_duplicates_of_the_last_five_batches_answer_their_first_offsets() -> None:
    t = ProducerStateTable()
    for i in range(7):
        t.update(PID, 0, i * 10, i * 10 + 9, 100 + i * 10, 109 + i * 10)
    verdict, first = t.check(PID, 0, 60, 69)
    assert verdict is Verdict.DUPLICATE and first is not None
    assert (first.base_offset, first.last_offset) == (160, 169)
    assert t.check(PID, 0, 20, 29)[0] is Verdict.DUPLICATE
    assert t.check(PID, 0, 10, 19)[0] is Verdict.OUT_OF_ORDER  # older than the retained five
    assert t.check(PID, 0, 70, 79) == (Verdict.APPEND, None)
    assert t.check(PID, 0, 80, 89)[0] is Verdict.OUT_OF_ORDER  # 70..79 missing
    assert t.check(PID, 0, 60, 65)[0] is Verdict.OUT_OF_ORDER  # overlaps, not the same batch


def test_epochs_fence_older_and_restart_sequences_at_zero() -> None:
    t = ProducerStateTable()
    t.update(PID, 3, 0, 4, 0, 4)
    assert t.check(PID, 2, 5, 9) == (Verdict.FENCED, None)
    assert t.check(PID, 4, 5, 9)[0] is Verdict.OUT_OF_ORDER
    assert t.check(PID, 4, 0, 9) == (Verdict.APPEND, None)
    t.update(PID, 4, 0, 9, 5, 14)
    assert t.check(PID, 4, 0, 4)[0] is Verdict.OUT_OF_ORDER  # the old epoch's batches are gone
    t.update(PID, 3, 5, 9, 15, 19)  # a fenced epoch's batch replicated: ignored
    assert t.check(PID, 4, 10, 12) == (Verdict.APPEND, None)


def test_sequences_wrap_and_producers_are_bounded() -> None:
    top = SEQUENCE_MODULUS - 1
    assert last_sequence(top, 3) == 1
    t = ProducerStateTable(max_producers=2)
    t.update(PID, 0, top - 1, top, 0, 1)
    assert t.check(PID, 0, 0, 4) == (Verdict.APPEND, None)
    t.update(1, 0, 0, 0, 2, 2)
    t.update(2, 0, 0, 0, 3, 3)  # evicts PID, the least recently appended
    assert len(t) == 2 and PID not in t.producers and not t.complete
    assert t.check(PID, 0, 7, 9) == (Verdict.APPEND, None)


def test_rebuild_and_scan_read_headers_in_chunks() -> None:
    data = bytearray()
    for i in range(4):
        b = bytearray(pbatch([b"x" * 50] * 3, seq=i * 3))
        stamp(b, i * 3, 0)
        data += b
    data += pbatch([b"y"], seq=12)[:30]  # a partial tail is not read
    headers = list(scan_headers(lambda pos, n: bytes(data[pos : pos + n]), len(data), 200))
    assert [h.base_sequence for h in headers] == [0, 3, 6, 9]
    t = ProducerStateTable()
    t.update(999, 0, 0, 0, 0, 0)
    t.rebuild(headers, complete=True)
    assert list(t.producers) == [PID]
    verdict, first = t.check(PID, 0, 6, 8)
    assert verdict is Verdict.DUPLICATE and first is not None and first.base_offset == 6
    assert t.check(PID, 0, 12, 12) == (Verdict.APPEND, None)


def test_rebuild_window_is_two_segments_or_fewer_when_the_newest_is_big() -> None:
    assert rebuild_window([100, 100, 100]) == 2
    assert rebuild_window([100, REBUILD_MAX_BYTES]) == 1
    assert rebuild_window([100]) == 1


# ----- through the Log --------------------------------------------------------------------------


def test_log_stores_a_retried_batch_once_and_answers_its_offset(open_log: OpenLog) -> None:
    log = open_log()
    first = log.append_as_leader(pbatch([b"a", b"b"], seq=0), 0)
    second = log.append_as_leader(pbatch([b"c"], seq=2), 0)
    again = log.append_as_leader(pbatch([b"a", b"b"], seq=0), 0)
    assert (first.base_offset, second.base_offset) == (0, 2)
    assert (again.base_offset, again.last_offset, again.duplicate) == (0, 1, True)
    assert log.log_end_offset == 3
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(pbatch([b"e"], seq=4), 0)
    assert log.append_as_leader(pbatch([b"d"], seq=0, epoch=1), 0).base_offset == 3
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(pbatch([b"e"], seq=3, epoch=0), 0)
    plain = build_batch([(None, b"p", None, T0)])  # not idempotent: stored every time
    assert [log.append_as_leader(plain, 0).base_offset for _ in range(2)] == [4, 5]
    assert read_values(log) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"p"), (5, b"p")]


def test_state_survives_reopen_and_follows_truncation(open_log: OpenLog) -> None:
    log = open_log(segment_bytes=300)
    for i in range(6):
        log.append_as_leader(pbatch([b"v" * 40] * 2, seq=i * 2), 0)
    assert log.segments.count > 2
    log.close()
    log = open_log(segment_bytes=300)
    # rebuilt from offset 0 (no gaps): every producer is known
    assert log.producers.complete
    assert log.append_as_leader(pbatch([b"v" * 40] * 2, seq=10), 0).duplicate
    log.truncate_to(8)  # drops the batches at 8 and 10 (sequences 8..11)
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(pbatch([b"w"], seq=12), 0)
    again = log.append_as_leader(pbatch([b"v" * 40] * 2, seq=8), 0)  # stored again after the cut
    assert (again.base_offset, again.duplicate) == (8, False)
    log.truncate_fully_and_start_at(0)
    assert log.producers.complete and len(log.producers) == 0


def test_follower_appends_feed_the_state(open_log: OpenLog) -> None:
    leader = open_log()
    leader.append_as_leader(pbatch([b"a"], seq=0), 0)
    leader.append_as_leader(pbatch([b"b", b"c"], seq=1), 0)
    stored = b"".join(_read_all(leader))
    follower = open_log(leader.directory.parent / "follower-0")
    follower.append_as_follower(stored)
    info = follower.append_as_leader(pbatch([b"b", b"c"], seq=1), 1)
    assert (info.base_offset, info.duplicate) == (1, True)
    assert follower.append_as_leader(pbatch([b"d"], seq=3), 1).base_offset == 3


def _read_all(log: Log) -> list[bytes]:
    result = log.read(0, 1 << 20)
    assert result.slice is not None
    data = os.pread(result.slice.fd, result.slice.length, result.slice.position)
    return [data[pos : pos + h.size] for pos, h in iter_batches(data)]
