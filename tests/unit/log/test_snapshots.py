"""Producer-state snapshots (broker/log/snapshot.py): format, when written, corrupt, truncate."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.log import producer_log as log_module
from broker.log import snapshot
from broker.log.segment import Segment
from broker.producer_state import ProducerStateTable
from broker.txn_state import CompletedTxn
from protocol.batch import BatchHeader
from protocol.control import Marker
from tests.unit.log.conftest import OpenLog
from tests.unit.log.test_transactions_log import aborted_then_open, txn


def state(t: ProducerStateTable) -> tuple[object, ...]:
    return (t.rows(), t.ongoing_transactions(), list(t.txns.unreplicated),
            t.first_unstable_offset(), t.complete)  # fmt: skip


def test_round_trip_keeps_batches_transactions_and_unreplicated_ones() -> None:
    t = ProducerStateTable()
    for seq in range(7):
        t.record(1, 0, seq, 1, seq, seq)
    t.record(2, 3, 0, 2, 7, 8, transactional=True, timestamp=99)
    t.record(3, 0, 0, 1, 9, 9, transactional=True)
    t.end_txn(3, 0, Marker(False, 4), 10)
    data = snapshot.encode(t)
    back = ProducerStateTable()
    snapshot.load_into(back, data, complete_allowed=True)
    assert state(back) == state(t)
    assert back.txns.unreplicated[0] == CompletedTxn(3, 9, 10, True)
    assert [b.last_seq for b in back.producers[1].batches] == [2, 3, 4, 5, 6]
    for bad in (data[:-1], data[:6] + bytes([data[6] ^ 1]) + data[7:], b""):
        with pytest.raises(snapshot.CorruptSnapshotError):
            snapshot.load_into(ProducerStateTable(), bad, complete_allowed=True)


def snapshots(directory: Path) -> list[int]:
    return snapshot.list_offsets(directory)


def test_rolls_and_close_write_snapshots_and_a_reopen_replays_only_the_tail(
    open_log: OpenLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=200)
    aborted_then_open(log)
    bases = log.segments.base_offsets()
    assert len(bases) > 2 and snapshots(log.directory) == bases[-2:]  # the newest two
    before = state(log.producers)
    log.close()
    assert snapshots(log.directory)[-1] == log.log_end_offset
    read: list[int] = []
    real = log_module.segment_entries

    def spy(seg: Segment, start: int = 0) -> Iterator[tuple[BatchHeader, Marker | None]]:
        read.append(seg.base_offset)
        return real(seg, start)

    monkeypatch.setattr(log_module, "segment_entries", spy)
    log = open_log(tmp_path / "t-0", segment_bytes=200)
    assert read == [bases[-1]]  # only the active segment, from the snapshot at the log end
    assert state(log.producers)[:2] == before[:2]
    assert log.collect_aborted_transactions(0, 7) == [(1, 0)]
    log.update_high_watermark(7)
    assert log.first_unstable_offset == 6


def test_a_corrupt_snapshot_is_deleted_and_the_older_one_used(
    open_log: OpenLog, tmp_path: Path
) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=200)
    aborted_then_open(log)
    log.close()
    newest = snapshot.snapshot_path(log.directory, snapshots(log.directory)[-1])
    newest.write_bytes(newest.read_bytes()[:-3])
    log = open_log(tmp_path / "t-0", segment_bytes=200)
    assert not newest.exists()
    log.update_high_watermark(7)
    assert log.first_unstable_offset == 6  # the open txn is known from the older snapshot
    assert [t[0] for t in log.producers.ongoing_transactions()] == [3]


def test_truncation_deletes_snapshots_above_the_cut(open_log: OpenLog, tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=120)
    for seq in range(6):
        log.append_as_leader(txn([b"v" * 30], pid=1, seq=seq), 0)
    assert snapshots(log.directory)
    log.truncate_to(2)
    assert all(o <= 2 for o in snapshots(log.directory))
    assert log.producers.ongoing_transactions() == [
        (1, 0, 0, log.producers.ongoing_transactions()[0][3])
    ]
    assert [b.last_seq for b in log.producers.producers[1].batches] == [0, 1]
