"""Transactions in the producer table and the LSO arithmetic (broker/txn_state.py), pure."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.producer_state import ProducerStateTable
from broker.txn_state import (
    AbortedTxn,
    CompletedTxn,
    TxnTracker,
    aborted_in_range,
    last_stable_offset,
)
from protocol.control import Marker
from protocol.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)

COMMIT, ABORT = Marker(True, 0), Marker(False, 0)


def txn_batch(
    t: ProducerStateTable, pid: int, seq: int, base: int, n: int = 1, epoch: int = 0
) -> None:
    t.admit(pid, epoch, seq, n, transactional=True)
    t.record(pid, epoch, seq, n, base, base + n - 1, transactional=True, timestamp=base)


def test_a_transaction_opens_at_its_first_batch_and_a_marker_completes_it() -> None:
    t = ProducerStateTable()
    txn_batch(t, 7, 0, 10, 3)
    txn_batch(t, 7, 3, 13, 2)  # the second batch leaves the first offset where it was
    assert t.first_unstable_offset() == 10
    assert t.ongoing_transactions() == [(7, 0, 10, 10)]
    assert [r.current_txn_start_offset for r in t.rows()] == [10]
    done = t.end_txn(7, 0, ABORT, 15)
    assert done == CompletedTxn(7, 10, 15, True)
    # completed but unreplicated: the marker is not below the HW yet
    assert t.first_unstable_offset() == 10 and t.ongoing_transactions() == []
    t.on_high_watermark(15)
    assert t.first_unstable_offset() == 10
    t.on_high_watermark(16)
    assert t.first_unstable_offset() is None
    assert t.end_txn(7, 0, COMMIT, 16) is None  # no open transaction: nothing completes


def test_a_marker_below_the_known_high_watermark_never_holds_the_lso() -> None:
    t = ProducerStateTable()
    t.on_high_watermark(100)  # a follower replaying, told an HW past the marker
    txn_batch(t, 1, 0, 5)
    assert t.end_txn(1, 0, COMMIT, 6) == CompletedTxn(1, 5, 6, False)
    assert t.first_unstable_offset() is None


def test_leader_marker_checks() -> None:
    t = ProducerStateTable()
    txn_batch(t, 1, 0, 0, epoch=3)
    with pytest.raises(InvalidProducerEpochError):
        t.admit_marker(1, 2, 0)
    t.end_txn(1, 3, Marker(False, 5), 1)
    with pytest.raises(TransactionCoordinatorFencedError) as info:
        t.admit_marker(1, 3, 4)
    assert info.value.code == 52
    t.admit_marker(1, 3, 5)
    t.admit_marker(1, 4, 6)  # a newer producer epoch is fine (the coordinator's bump)
    t.admit_marker(99, 0, 0)  # an unknown producer: nothing to check


def test_a_plain_batch_while_a_transaction_is_open_is_refused() -> None:
    t = ProducerStateTable()
    txn_batch(t, 1, 0, 0)
    with pytest.raises(InvalidTxnStateError):
        t.admit(1, 0, 1, 1, transactional=False)
    t.admit(1, 0, 0, 1, transactional=False)  # a retry of the stored batch is answered


def test_an_epoch_bump_keeps_the_open_transaction_as_kafka() -> None:
    t = ProducerStateTable()
    txn_batch(t, 1, 0, 4, epoch=0)
    txn_batch(t, 1, 0, 5, epoch=1)
    assert t.first_unstable_offset() == 4
    assert t.end_txn(1, 1, ABORT, 6) == CompletedTxn(1, 4, 6, True)


def test_eviction_spares_producers_with_open_transactions() -> None:
    t = ProducerStateTable(max_producers=2)
    txn_batch(t, 1, 0, 0)
    for pid in range(2, 6):
        t.record(pid, 0, 0, 1, pid, pid)
    assert 1 in t.producers and len(t.producers) == 2
    assert t.first_unstable_offset() == 0


def test_index_entry_records_the_next_other_ongoing_transaction() -> None:
    t = ProducerStateTable()
    txn_batch(t, 1, 0, 0)
    txn_batch(t, 2, 0, 1)
    done = t.end_txn(1, 0, ABORT, 2)
    assert done is not None and t.index_entry(done) == AbortedTxn(1, 0, 2, 1)
    done = t.end_txn(2, 0, ABORT, 3)
    assert done is not None and t.index_entry(done) == AbortedTxn(2, 1, 3, 4)


# ----- properties against a naive model ------------------------------------------------------

ops = st.lists(
    st.tuples(st.sampled_from(["begin", "end", "hw"]), st.integers(0, 5), st.integers(0, 3)),
    max_size=60,
)


@given(ops)
def test_first_unstable_offset_matches_a_naive_model(script: list[tuple[str, int, int]]) -> None:
    tracker = TxnTracker()
    hw = 0
    ongoing: dict[int, int] = {}
    completed: list[tuple[int, int]] = []  # (first, last)
    for offset, (op, pid, step) in enumerate(script):
        if op == "begin" and pid not in ongoing:
            tracker.begin(pid, offset, 0)
            ongoing[pid] = offset
        elif op == "end" and pid in ongoing:
            tracker.complete(CompletedTxn(pid, ongoing[pid], offset, False))
            completed.append((ongoing.pop(pid), offset))
        elif op == "hw":
            hw = min(offset, hw + step)
            tracker.on_high_watermark(hw)
        firsts = list(ongoing.values()) + [f for f, last in completed if last >= hw]
        expected = min(firsts) if firsts else None
        assert tracker.first_unstable_offset() == expected
        assert last_stable_offset(expected, hw) == (hw if expected is None else min(expected, hw))


@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20)), max_size=20),
    st.integers(0, 80),
    st.integers(0, 80),
)
def test_aborted_in_range_is_overlap(spans: list[tuple[int, int]], start: int, upper: int) -> None:
    """Kafka's bounds pick exactly the txns sharing an offset with [start, upper)."""
    upper = start + 1 + upper
    entries = [AbortedTxn(i, first, first + length, 0) for i, (first, length) in enumerate(spans)]
    got = aborted_in_range(entries, start, upper)
    want = [
        (e.producer_id, e.first_offset)
        for e in entries
        if any(e.first_offset <= o <= e.last_offset for o in range(start, upper))
    ]
    assert got == want
