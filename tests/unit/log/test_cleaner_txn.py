"""The log cleaner and transactions (KIP-98), as Kafka's Cleaner does it: aborted data goes and
never shadows committed data; committed transactional data is compacted like any other;
markers stay while their transaction has data, then until their delete horizon; an abort's
`.txnindex` entry goes with its data; a producer's last batch stays, even aborted; nothing at
or past the first unstable offset is touched. `TxnWalk` and `marker_fate` alone first, then
hand-built logs."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import pytest

from broker.log.cleaner import plan
from broker.log.config import LogConfig
from broker.log.log import Log
from broker.txn_state import AbortedTxn
from protocol.batch import (
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    decode_records,
    iter_batches,
    with_producer,
)
from protocol.clock import ManualClock
from protocol.control import parse_marker
from tests.unit.log.conftest import T0
from tests.unit.log.test_cleaner import Harness, keyed

Row = tuple[int, bytes | None, bytes | None]

# ----- the pure decisions ---------------------------------------------------------------------


def test_the_walk_discards_an_aborted_transaction_and_keeps_its_entry_while_it_has_data() -> None:
    entry = AbortedTxn(producer_id=1, first_offset=10, last_offset=14, last_stable_offset=15)
    walk = plan.TxnWalk([entry], start_offset=0)
    assert not walk.on_batch(1, 5, transactional=True)  # an earlier, committed txn of pid 1
    assert walk.on_marker(1, 6, commit=True) is False  # it had data: the marker stays
    assert not walk.on_batch(2, 10, transactional=True)  # another producer's txn
    assert walk.on_batch(1, 11, transactional=True)  # pid 1 inside its aborted txn
    assert not walk.on_batch(1, 12, transactional=False)  # not transactional: not the txn's
    assert walk.on_marker(1, 14, commit=False) is False  # abort met with data: kept
    assert walk.kept == [entry]
    assert walk.on_marker(2, 15, commit=True) is False
    assert walk.on_marker(2, 16, commit=True) is True  # nothing before it: may go
    assert not walk.on_batch(1, 17, transactional=True)  # pid 1's next txn is not aborted


def test_an_abort_met_without_data_loses_its_entry_and_may_go() -> None:
    walk = plan.TxnWalk([AbortedTxn(3, 4, 9, 10)], start_offset=0)
    assert walk.on_marker(3, 9, commit=False) is True
    assert walk.kept == []


def test_entries_ended_before_the_walk_starts_are_ignored() -> None:
    old, new = AbortedTxn(1, 0, 4, 5), AbortedTxn(1, 8, 12, 13)
    walk = plan.TxnWalk([new, old], start_offset=5)
    assert not walk.on_batch(1, 6, transactional=True)  # committed (old ended at 4)
    assert walk.on_marker(1, 7, commit=True) is False
    assert walk.on_batch(1, 8, transactional=True)
    assert walk.on_marker(1, 12, commit=False) is False and walk.kept == [new]


def test_an_abort_without_entry_but_with_data_keeps_its_marker() -> None:
    walk = plan.TxnWalk([], start_offset=0)
    assert not walk.on_batch(5, 0, transactional=True)
    assert walk.on_marker(5, 1, commit=False) is False  # never a marker before its data goes


def test_unknown_control_batches_stay_and_end_nothing() -> None:
    walk = plan.TxnWalk([], start_offset=0)
    walk.on_batch(5, 0, transactional=True)
    assert walk.on_marker(5, 1, commit=None) is False
    assert walk.on_marker(5, 2, commit=True) is False  # the txn's data is still before it


def test_marker_fate_is_the_tombstones_horizon() -> None:
    assert plan.marker_fate(False, None, T0) == "keep"
    assert plan.marker_fate(False, T0 - 1, T0) == "keep"  # data again: never dropped
    assert plan.marker_fate(True, None, T0) == "stamp"
    assert plan.marker_fate(True, T0 + 1, T0) == "keep"
    assert plan.marker_fate(True, T0, T0) == "drop"
    assert plan.keeps_empty(7, 20, {7: 20}) and not plan.keeps_empty(7, 19, {7: 20})
    assert not plan.keeps_empty(-1, 20, {-1: 20})


# ----- logs built by hand ---------------------------------------------------------------------


def tx(pairs: Sequence[tuple[bytes, bytes | None]], pid: int, seq: int, epoch: int = 0) -> bytes:
    """A keyed transactional batch of producer `pid`."""
    raw = bytearray(keyed(pairs))
    raw[22] |= TRANSACTIONAL_BIT  # the attributes' low byte; with_producer recomputes the CRC
    return with_producer(raw, pid, epoch, seq)


class Txns:
    """Writes to one log: plain batches, transactional ones (sequences kept per producer),
    markers; `settle` moves the HW to the end so completed transactions are stable."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.seq: dict[int, int] = {}

    def plain(self, pairs: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.log.append_as_leader(keyed(pairs), 0)

    def write(self, pid: int, pairs: Sequence[tuple[bytes, bytes | None]]) -> None:
        seq = self.seq.get(pid, 0)
        self.log.append_as_leader(tx(pairs, pid, seq), 0)
        self.seq[pid] = seq + len(pairs)

    def end(self, pid: int, commit: bool) -> int:
        return self.log.append_control(pid, 0, 0, commit=commit, leader_epoch=0).base_offset

    def settle(self) -> None:
        self.log.update_high_watermark(self.log.log_end_offset)


def batches_of(log: Log) -> list[tuple[BatchHeader, bytes]]:
    """Every stored batch of the log (header, bytes), segment by segment."""
    out: list[tuple[BatchHeader, bytes]] = []
    for seg in (*log.segments.closed(), log.segments.active):
        data = os.pread(seg.fd, seg.size_bytes, 0)
        out.extend((h, data[pos : pos + h.size]) for pos, h in iter_batches(data))
    return out


def read_committed(log: Log, upper: int | None = None) -> list[Row]:
    """What a read_committed consumer reads of [log start, upper): a Kafka consumer's filter
    over the log's aborted transactions (Fetch's aborted_transactions) and its markers."""
    end = log.log_end_offset if upper is None else upper
    start = log.log_start_offset
    aborted = deque(sorted(log.collect_aborted_transactions(start, end), key=lambda a: a[1]))
    aborting: set[int] = set()
    out: list[Row] = []
    for h, data in batches_of(log):
        if h.base_offset >= end:
            break
        while aborted and aborted[0][1] <= h.last_offset:
            aborting.add(aborted.popleft()[0])
        if h.attributes & CONTROL_BIT:
            if h.record_count and not parse_marker(data).commit:
                aborting.discard(h.producer_id)
            continue
        if h.attributes & TRANSACTIONAL_BIT and h.producer_id in aborting:
            continue
        out.extend((r.offset, r.key, r.value) for r in decode_records(data, 0)[1])
    return out


def latest_of(rows: Sequence[Row]) -> dict[bytes | None, bytes | None]:
    return {k: v for _, k, v in rows}


def values(log: Log) -> list[bytes | None]:
    return [r.value for h, data in batches_of(log) if not h.attributes & CONTROL_BIT
            for r in decode_records(data, 0)[1]]  # fmt: skip


def markers(log: Log) -> list[tuple[BatchHeader, bool]]:
    return [(h, parse_marker(d).commit) for h, d in batches_of(log) if h.attributes & CONTROL_BIT]


def fill(t: Txns, n: int = 30) -> None:
    """Plain writes of other keys: several segments, the rest past what is cleaned."""
    for i in range(n):
        t.plain([(b"fill-%d" % (i % 5), b"f%d" % i)])


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    h = Harness(tmp_path / "logs", ManualClock(time_ms=T0), **{"delete.retention.ms": "1000"})
    return h


def test_an_aborted_value_never_shadows_a_committed_one(harness: Harness) -> None:
    t = Txns(harness.log)
    t.write(1, [(b"k", b"committed"), (b"j", b"j-committed")])
    t.end(1, commit=True)
    fill(t)
    t.settle()
    assert harness.clean()  # "k" committed, in the clean section now
    t.write(2, [(b"k", b"aborted-2")])  # in the dirty section: must not map over it
    t.plain([(b"j", b"j-plain")])
    t.write(2, [(b"j", b"aborted-j")])
    t.end(2, commit=False)
    t.write(3, [(b"k", b"aborted-3")])
    t.end(3, commit=False)
    fill(t)
    t.settle()
    assert harness.clean()
    got = latest_of(read_committed(harness.log))
    assert got[b"k"] == b"committed" and got[b"j"] == b"j-plain"
    stored = values(harness.log)
    assert not [v for v in stored if v and v.startswith(b"aborted")]  # removed, not hidden
    assert stored.count(b"committed") == 1


def test_aborted_data_goes_and_its_entry_goes_with_it(harness: Harness) -> None:
    t = Txns(harness.log)
    t.write(1, [(b"a", b"x1"), (b"b", b"x2")])
    t.plain([(b"c", b"plain")])
    t.write(1, [(b"a", b"x3")])
    abort_at = t.end(1, commit=False)
    t.write(1, [(b"d", b"committed-later")])  # pid 1's next txn: must stay visible
    t.end(1, commit=True)
    fill(t)
    t.settle()
    assert harness.log.collect_aborted_transactions(0, harness.log.log_end_offset) == [(1, 0)]
    assert harness.clean()
    assert not {b"x1", b"x2", b"x3"} & set(values(harness.log))
    # the pass saw the txn's data (and removed it): marker and entry stay for this pass
    assert harness.log.collect_aborted_transactions(0, harness.log.log_end_offset) == [(1, 0)]
    fill(t)
    t.settle()
    assert harness.clean()  # the txn is empty now: its entry goes, its marker is stamped
    assert harness.log.collect_aborted_transactions(0, harness.log.log_end_offset) == []
    (h, commit), *_ = markers(harness.log)
    assert h.base_offset == abort_at and not commit and h.attributes & DELETE_HORIZON_BIT
    got = latest_of(read_committed(harness.log))
    assert got[b"d"] == b"committed-later" and got[b"c"] == b"plain"
    harness.restart()  # the index on disk agrees (the old file was replaced by an empty one)
    assert harness.log.collect_aborted_transactions(0, harness.log.log_end_offset) == []
    assert latest_of(read_committed(harness.log))[b"d"] == b"committed-later"


def test_committed_transactional_data_is_compacted_like_any_other(harness: Harness) -> None:
    t = Txns(harness.log)
    for i in range(12):
        t.write(1 + i % 2, [(b"k%d" % (i % 3), b"v%d" % i)])
        t.end(1 + i % 2, commit=True)
    t.plain([(b"k0", b"plain")])
    fill(t)
    t.settle()
    assert harness.clean()
    below = harness.log.segments.active.base_offset
    rows = [r for r in read_committed(harness.log) if r[0] < below]
    keys = [k for _, k, _ in rows]
    assert len(keys) == len(set(keys))  # each key once
    got = latest_of(read_committed(harness.log))
    assert (got[b"k0"], got[b"k1"], got[b"k2"]) == (b"plain", b"v10", b"v11")


def test_markers_stay_until_their_horizon_then_go(harness: Harness) -> None:
    t = Txns(harness.log)
    t.write(1, [(b"k", b"old")])
    first = t.end(1, commit=True)
    t.write(1, [(b"k", b"new")])  # the same producer: "old" is not its last batch
    t.end(1, commit=True)
    fill(t)
    t.settle()
    assert harness.clean()  # "old" goes; its marker stays: the pass read its data
    offsets = [h.base_offset for h, _ in markers(harness.log)]
    assert first in offsets
    assert not [h for h, _ in markers(harness.log) if h.attributes & DELETE_HORIZON_BIT]
    fill(t)
    t.settle()
    assert harness.clean()  # pid 1's txn is empty: stamped, kept for delete.retention.ms
    stamped = {h.base_offset: h for h, _ in markers(harness.log)}
    assert stamped[first].attributes & DELETE_HORIZON_BIT
    assert stamped[first].first_timestamp == harness.clock.time_ms() + 1000
    fill(t)
    t.settle()
    assert harness.clean()
    assert first in [h.base_offset for h, _ in markers(harness.log)]  # before its horizon
    harness.clock.advance(1000)
    assert harness.clean()  # past the horizon: a pass is due, and the marker goes
    left = [h for h, _ in markers(harness.log)]
    assert first not in [h.base_offset for h in left]
    assert latest_of(read_committed(harness.log))[b"k"] == b"new"
    assert len(left) == 1 and not left[0].attributes & DELETE_HORIZON_BIT  # "new" is its data


def test_a_producers_last_batch_stays_even_aborted_and_so_does_its_marker(
    harness: Harness,
) -> None:
    t = Txns(harness.log)
    t.write(1, [(b"k", b"c0")])
    t.end(1, commit=True)
    t.write(1, [(b"k", b"a1")])  # pid 1's last batch: in an aborted txn
    abort_at = t.end(1, commit=False)
    for _ in range(3):
        fill(t)
        t.settle()
        harness.clean()
        harness.clock.advance(2000)  # every horizon passes
    kept = [h for h, _ in batches_of(harness.log) if h.producer_id == 1]
    assert [h.record_count for h in kept if not h.attributes & CONTROL_BIT] == [1, 0]  # emptied
    assert abort_at in [h.base_offset for h in kept]  # its data is in the log: it stays
    assert harness.log.collect_aborted_transactions(0, harness.log.log_end_offset)
    assert latest_of(read_committed(harness.log))[b"k"] == b"c0"
    harness.restart()
    harness.log.update_high_watermark(harness.log.log_end_offset)
    assert harness.log.first_unstable_offset is None  # the emptied txn is ended on replay
    again = harness.log.append_as_leader(tx([(b"k", b"a1")], 1, seq=1), 0)
    assert again.duplicate  # the producer's state knows its last batch


def test_an_open_transaction_is_never_touched(harness: Harness) -> None:
    t = Txns(harness.log)
    t.write(1, [(b"k", b"committed")])
    t.end(1, commit=True)
    fill(t)
    t.write(2, [(b"k", b"open")])  # never ended
    open_at = harness.log.log_end_offset - 1
    fill(t)
    t.write(3, [(b"k", b"aborted-after")])
    t.end(3, commit=False)
    fill(t)
    t.settle()
    assert harness.log.first_unstable_offset == open_at
    base = max(b for b in harness.log.segments.base_offsets() if b <= open_at)
    assert base > 0  # something below it to clean
    before = [d for h, d in batches_of(harness.log) if h.base_offset >= base]
    assert harness.clean()
    assert harness.cleaner.checkpointed("t", 0) == base
    assert [d for h, d in batches_of(harness.log) if h.base_offset >= base] == before
    assert b"aborted-after" in values(harness.log)  # past the LSO: not even aborted data goes
    below = [k for o, k, _ in read_committed(harness.log) if o < base]
    assert len(below) == len(set(below))  # cleaned below it


def test_a_follower_takes_the_cleaned_log_with_its_stamped_markers(
    harness: Harness, tmp_path: Path
) -> None:
    t = Txns(harness.log)
    t.write(1, [(b"k", b"old")])
    t.end(1, commit=True)
    t.write(1, [(b"k", b"new")])
    t.end(1, commit=True)
    t.write(2, [(b"k", b"aborted")])
    t.end(2, commit=False)
    for _ in range(3):
        fill(t)
        t.settle()
        harness.clean()
    assert [h for h, _ in markers(harness.log) if h.attributes & DELETE_HORIZON_BIT]
    follower = Log.open(tmp_path / "f-0", LogConfig(retention_ms=None), harness.clock)
    try:
        for _, data in batches_of(harness.log):
            follower.append_as_follower(data)
        follower.update_high_watermark(follower.log_end_offset)
        end = follower.log_end_offset
        assert end == harness.log.log_end_offset and follower.first_unstable_offset is None
        assert follower.collect_aborted_transactions(0, end) == (
            harness.log.collect_aborted_transactions(0, end)
        )
        assert read_committed(follower) == read_committed(harness.log)
    finally:
        follower.close_unclean()
