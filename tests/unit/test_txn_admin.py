"""client/txn_admin.py's hanging-transaction decision, a pure function of DescribeProducers rows,
the coordinators' DescribeTransactions rows (by producer id) and the time now."""

from __future__ import annotations

from client.txn_admin import (
    COORDINATOR_CHECK_AFTER_MS,
    TxnDescription,
    coordinator_disowns,
    hanging_transactions,
)
from client.types import TopicPartition
from protocol.api.txn import ProducerState

NOW = 1_000_000_000
TP = TopicPartition("t", 0)
OTHER = TopicPartition("t", 1)
MAX_AGE = 60_000


def producer(pid: int, start_offset: int, age_ms: int, epoch: int = 3) -> ProducerState:
    return ProducerState(pid, epoch, 7, NOW - age_ms, 2, start_offset)


def described(
    pid: int, state: str = "Ongoing", parts: list[TopicPartition] | None = None
) -> TxnDescription:
    return TxnDescription(1, f"tx-{pid}", pid, 3, state, 60_000, NOW - 5000,
                          [TP] if parts is None else parts)  # fmt: skip


def test_a_producer_without_an_open_transaction_is_never_hanging() -> None:
    rows = {TP: [producer(1, -1, 10 * MAX_AGE)]}
    assert hanging_transactions(rows, {}, NOW, MAX_AGE) == []


def test_an_open_transaction_older_than_the_threshold_hangs_even_if_its_coordinator_has_it() -> (
    None
):
    rows = {TP: [producer(1, 40, MAX_AGE + 1)]}
    [h] = hanging_transactions(rows, {1: described(1)}, NOW, MAX_AGE)
    assert (h.topic, h.partition, h.producer_id, h.producer_epoch, h.coordinator_epoch) == (
        "t", 0, 1, 3, 2)  # fmt: skip
    assert (h.start_offset, h.duration_ms, h.transactional_id) == (40, MAX_AGE + 1, "tx-1")
    assert "threshold" in h.reason


def test_a_young_ongoing_transaction_its_coordinator_knows_is_not_hanging() -> None:
    rows = {TP: [producer(1, 40, COORDINATOR_CHECK_AFTER_MS + 1)]}
    assert hanging_transactions(rows, {1: described(1)}, NOW, MAX_AGE) == []
    for state in ("PrepareCommit", "PrepareAbort"):  # markers on their way
        assert hanging_transactions(rows, {1: described(1, state)}, NOW, MAX_AGE) == []


def test_an_open_transaction_no_coordinator_knows_hangs_after_the_grace() -> None:
    young = {TP: [producer(1, 40, COORDINATOR_CHECK_AFTER_MS - 1)]}
    assert hanging_transactions(young, {}, NOW, MAX_AGE) == []  # it may have just ended
    old = {TP: [producer(1, 40, COORDINATOR_CHECK_AFTER_MS)]}
    [h] = hanging_transactions(old, {}, NOW, MAX_AGE)
    assert h.transactional_id is None and "no transactional id" in h.reason


def test_the_coordinator_has_another_state_or_not_this_partition() -> None:
    rows = {TP: [producer(1, 40, COORDINATOR_CHECK_AFTER_MS)]}
    [h] = hanging_transactions(rows, {1: described(1, "CompleteCommit")}, NOW, MAX_AGE)
    assert "CompleteCommit" in h.reason
    [h] = hanging_transactions(rows, {1: described(1, parts=[OTHER])}, NOW, MAX_AGE)
    assert "not in its coordinator's transaction" in h.reason


def test_rows_come_sorted_by_partition_then_producer_id() -> None:
    rows = {
        OTHER: [producer(9, 5, MAX_AGE + 1), producer(2, 6, MAX_AGE + 1)],
        TP: [producer(4, 1, MAX_AGE + 1), producer(3, -1, MAX_AGE + 1)],
    }
    got = [(h.partition, h.producer_id) for h in hanging_transactions(rows, {}, NOW, MAX_AGE)]
    assert got == [(0, 4), (1, 2), (1, 9)]


def test_a_timestamp_ahead_of_now_counts_as_age_zero() -> None:
    rows = {TP: [producer(1, 40, -5000)]}
    assert hanging_transactions(rows, {}, NOW, 0) == []


def test_coordinator_disowns_says_none_for_a_transaction_it_will_end() -> None:
    assert coordinator_disowns(TP, described(1)) is None
    assert coordinator_disowns(TP, None) == "no transactional id has this producer id"
