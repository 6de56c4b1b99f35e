"""Transactions through the Log: markers, the `.txnindex`, the LSO, recovery and truncation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.log.log import Log
from broker.log.txn_index import ENTRY_BYTES
from protocol.batch import TRANSACTIONAL_BIT, build_batch, with_producer
from protocol.control import build_marker, parse_marker
from protocol.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from tests.unit.log.conftest import T0, OpenLog, slice_bytes


def txn(values: list[bytes], pid: int, seq: int, epoch: int = 0) -> bytes:
    raw = bytearray(build_batch([(None, v, None, T0) for v in values]))
    raw[22] |= TRANSACTIONAL_BIT  # the attributes' low byte; with_producer recomputes the CRC
    return with_producer(raw, pid, epoch, seq)


def aborted_then_open(log: Log) -> None:
    """pid 1 aborts [0, 3]; pid 2 commits [1, 5]; pid 3 stays open from 6."""
    log.append_as_leader(txn([b"a", b"b"], pid=1, seq=0), 0)  # 0-1
    log.append_as_leader(txn([b"x"], pid=2, seq=0), 0)  # 2
    log.append_as_leader(txn([b"c"], pid=1, seq=2), 0)  # 3
    assert log.append_control(1, 0, 0, commit=False, leader_epoch=0).base_offset == 4
    assert log.append_control(2, 0, 0, commit=True, leader_epoch=0).base_offset == 5
    log.append_as_leader(txn([b"o"], pid=3, seq=0), 0)  # 6


def test_abort_is_indexed_and_the_lso_follows_the_high_watermark(open_log: OpenLog) -> None:
    log = open_log()
    aborted_then_open(log)
    assert log.collect_aborted_transactions(0, 7) == [(1, 0)]
    assert log.collect_aborted_transactions(5, 7) == []  # the abort ended at 4
    assert log.collect_aborted_transactions(4, 5) == [(1, 0)]
    assert log.first_unstable_offset == 0  # completed but not replicated yet
    log.update_high_watermark(5)
    assert log.first_unstable_offset == 2  # pid 2's marker (5) is not below the HW
    log.update_high_watermark(6)
    assert log.first_unstable_offset == 6 and log.last_stable_offset(7) == 6
    assert log.producers.ongoing_transactions() == [(3, 0, 6, T0)]
    rows = {r.producer_id: r for r in log.producer_states()}
    assert rows[3].current_txn_start_offset == 6 and rows[1].current_txn_start_offset == -1
    index = log.directory / "00000000000000000000.txnindex"
    assert index.stat().st_size == ENTRY_BYTES


def test_markers_are_checked_and_clients_cannot_write_them(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(txn([b"a"], pid=1, seq=0, epoch=2), 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(build_marker(1, 2, 0, True, T0), 0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(with_producer(build_batch([(None, b"p", None, T0)]), 1, 2, 1), 0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_control(1, 1, 0, commit=True, leader_epoch=0)
    log.append_control(1, 2, 5, commit=True, leader_epoch=0)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_control(1, 2, 4, commit=True, leader_epoch=0)
    marker = slice_bytes(log.read(1, 1 << 20))
    assert parse_marker(marker).commit and parse_marker(marker).coordinator_epoch == 5


def test_verify_hook_sees_transactional_batches_only(open_log: OpenLog) -> None:
    log = open_log()
    seen: list[tuple[int, int]] = []
    log.append_as_leader(
        txn([b"a"], pid=4, seq=0, epoch=1), 0, verify=lambda p, e: seen.append((p, e))
    )
    log.append_as_leader(
        build_batch([(None, b"p", None, T0)]), 0, verify=lambda p, e: seen.append((p, e))
    )
    assert seen == [(4, 1)]

    def refuse(pid: int, epoch: int) -> None:
        raise InvalidTxnStateError("not added to the transaction")

    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn([b"b"], pid=5, seq=0), 0, verify=refuse)
    assert log.log_end_offset == 2


def test_follower_indexes_replicated_aborts(open_log: OpenLog, tmp_path: Path) -> None:
    leader = open_log(tmp_path / "t-0")
    aborted_then_open(leader)
    data = slice_bytes(leader.read(0, 1 << 20))
    follower = open_log(tmp_path / "f-0")
    follower.append_as_follower(data)
    assert follower.collect_aborted_transactions(0, 7) == [(1, 0)]
    assert follower.first_unstable_offset == 0
    follower.update_high_watermark(7)
    assert follower.first_unstable_offset == 6


def test_unclean_reopen_rebuilds_the_index_and_the_lso(open_log: OpenLog, tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=200)
    aborted_then_open(log)
    assert log.segments.count > 1
    log.close_unclean()
    for path in tmp_path.glob("t-0/*.txnindex"):
        path.unlink()  # lost, or torn: recovery must rebuild it
    (tmp_path / "t-0" / "recovery-point-offset-checkpoint").unlink(missing_ok=True)
    log = open_log(tmp_path / "t-0", segment_bytes=200)
    assert log.collect_aborted_transactions(0, 7) == [(1, 0)]
    log.update_high_watermark(7)
    assert log.first_unstable_offset == 6


def test_truncation_cuts_index_entries_and_reopens_the_transaction(open_log: OpenLog) -> None:
    log = open_log()
    aborted_then_open(log)
    log.truncate_to(4)  # the abort marker (4) goes: pid 1's transaction is open again
    assert log.collect_aborted_transactions(0, 4) == []
    assert os.path.getsize(log.directory / "00000000000000000000.txnindex") == 0
    log.update_high_watermark(4)
    assert log.first_unstable_offset == 0
    assert [t[0] for t in log.producers.ongoing_transactions()] == [1, 2]


def test_a_coordinators_transactional_batch_needs_no_sequence(open_log: OpenLog) -> None:
    """TxnOffsetCommit's offsets: the group coordinator appends them inside the producer's
    transaction without a sequence (Kafka's AppendOrigin.COORDINATOR); a client may not."""
    log = open_log()
    log.append_as_leader(txn([b"seq"], pid=7, seq=0, epoch=3), 0)  # the producer's own data
    log.append_control(7, 3, 0, commit=True, leader_epoch=0)
    offsets = txn([b"offset"], pid=7, seq=-1, epoch=3)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(offsets, 0)
    at = log.append_as_leader(offsets, 0, coordinator=True).base_offset
    assert log.first_unstable_offset == 0  # the commit's marker is not replicated yet
    log.update_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset == at  # the offsets opened a transaction
    with pytest.raises(InvalidProducerEpochError):  # a fenced producer's offsets
        log.append_as_leader(txn([b"old"], pid=7, seq=-1, epoch=2), 0, coordinator=True)
    end = log.append_control(7, 3, 0, commit=False, leader_epoch=0).base_offset
    log.update_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset is None
    assert log.collect_aborted_transactions(0, end + 1) == [(7, at)]
    log.close_unclean()
    (log.directory / "00000000000000000000.txnindex").unlink()
    again = open_log()  # recovery replays the batch without a sequence as a transaction
    assert again.collect_aborted_transactions(0, end + 1) == [(7, at)]


def test_a_fenced_producer_is_told_which_epoch_took_over(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_leader(txn([b"new"], pid=4, seq=0, epoch=6), 0)
    with pytest.raises(InvalidProducerEpochError, match="a newer instance holds epoch 6"):
        log.append_as_leader(txn([b"old"], pid=4, seq=1, epoch=5), 0)


def test_retention_never_deletes_an_open_transactions_records(open_log: OpenLog) -> None:
    log = open_log(retention_ms=1)
    log.append_as_leader(build_batch([(None, b"old", None, T0)]), 0)  # 0
    log.roll()
    log.append_as_leader(txn([b"open"], pid=3, seq=0), 0)  # 1: the transaction stays open
    log.roll()
    log.append_as_leader(build_batch([(None, b"after", None, T0)]), 0)  # 2
    log.roll()
    log.append_as_leader(build_batch([(None, b"new", None, T0)]), 0)  # 3, active
    log.update_high_watermark(log.log_end_offset)
    log.clock.advance(60_000)  # type: ignore[attr-defined]  # the manual clock: all expired
    assert log.first_unstable_offset == 1
    assert log.delete_retained_segments() == 1, "only the segment wholly below the transaction"
    assert log.segments.base_offsets() == [1, 2, 3]
    log.append_control(3, 0, 0, commit=False, leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_retained_segments() == 2
