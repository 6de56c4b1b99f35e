"""The transactional chaos checker names each of Jepsen's Kafka anomaly classes when a hand-made
history shows it, and passes a clean one (deploy/chaos/txn_checker.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from deploy.chaos.client_errors import ClientError
from deploy.chaos.txn_checker import (
    ABORTED,
    CLASSES,
    COMMITTED,
    UNKNOWN,
    ConsumerLog,
    Poll,
    Txn,
    TxnRunRecord,
    TxnSend,
    check,
)


def clean_run() -> TxnRunRecord:
    """Two producers, two partitions. The logs, offset by offset (C, A: a commit or an abort
    marker):

    partition 0: p0-0-0 C p0-1-0 A p1-0-0 C p0-2-0 C
    partition 1: p0-0-1 C p1-0-1 C p1-1-0 A

    p0's txn 1 was aborted by choice; p1's txn 0 and txn 1 have unknown outcomes (commit raised):
    txn 0 was read (so it committed), txn 1 never was (so it aborted). c0 polls three times,
    c1 once at the end; both read to the end of both partitions."""
    run = TxnRunRecord("t", 2, seed=1)
    run.txns = [
        Txn("p0", 0, [TxnSend(0, "p0-0-0", 0), TxnSend(1, "p0-0-1", 0)], COMMITTED, 0.5),
        Txn("p0", 1, [TxnSend(0, "p0-1-0", 2)], ABORTED),
        Txn("p0", 2, [TxnSend(0, "p0-2-0", 6)], COMMITTED, 4.5),
        Txn("p1", 0, [TxnSend(0, "p1-0-0", 4), TxnSend(1, "p1-0-1", 2)], UNKNOWN, 2.5, "timed out"),
        Txn("p1", 1, [TxnSend(1, "p1-1-0", 4)], UNKNOWN, 4.6, "timed out"),
    ]
    ends = {0: 8, 1: 6}
    run.consumers = [
        ConsumerLog("c0", [
            Poll(1.0, [(0, 0, "p0-0-0"), (1, 0, "p0-0-1")]),
            Poll(3.0, [(0, 4, "p1-0-0"), (1, 2, "p1-0-1")]),
            Poll(5.0, [(0, 6, "p0-2-0")]),
        ], dict(ends)),
        ConsumerLog("c1", [
            Poll(5.0, [(0, 0, "p0-0-0"), (0, 4, "p1-0-0"), (0, 6, "p0-2-0"), (1, 0, "p0-0-1"),
                       (1, 2, "p1-0-1")]),
        ], dict(ends)),
    ]  # fmt: skip
    run.ctp_output = ["p0-0-1", "p0-0-0", "p1-0-0", "p1-0-1", "p0-2-0"]
    return run


def failing(run: TxnRunRecord) -> set[str]:
    return {f.check for f in check(run) if not f.ok}


def _c0(run: TxnRunRecord) -> list[Poll]:
    return run.consumers[0].polls


def _c1(run: TxnRunRecord) -> list[tuple[int, int, str]]:
    return run.consumers[1].polls[0].records


def test_a_clean_history_passes_every_class() -> None:
    findings = check(clean_run())
    assert [f.check for f in findings] == [*CLASSES, "ctp-exactly-once", "client-fatal"]
    assert all(f.ok for f in findings), [f for f in findings if not f.ok]


def aborted_read(run: TxnRunRecord) -> None:
    _c0(run)[1].records.insert(0, (0, 2, "p0-1-0"))


def precommitted_read(run: TxnRunRecord) -> None:
    run.txns[2].commit_at = 5.5  # both consumers read p0-2-0 at 5.0


def lost_write(run: TxnRunRecord) -> None:
    _c0(run)[2].records.clear()  # neither reads p0-2-0; both read partition 0 to 8
    _c1(run).remove((0, 6, "p0-2-0"))


def partial_transaction(run: TxnRunRecord) -> None:
    _c0(run)[1].records.remove((1, 2, "p1-0-1"))  # p1's txn 0 half read
    _c1(run).remove((1, 2, "p1-0-1"))


def duplicate(run: TxnRunRecord) -> None:
    _c1(run).insert(3, (0, 8, "p0-0-0"))
    run.consumers[1].positions[0] = 9


def nonmonotonic_poll(run: TxnRunRecord) -> None:
    _c0(run)[2].records.insert(0, (0, 4, "p1-0-0"))  # poll 3 goes back to where poll 2 was


def int_nonmonotonic_poll(run: TxnRunRecord) -> None:
    _c1(run).insert(2, (0, 4, "p1-0-0"))


def poll_skip(run: TxnRunRecord) -> None:
    _c0(run)[1].records.remove((0, 4, "p1-0-0"))  # c0 goes from 0@0 to 0@6 across polls


def int_poll_skip(run: TxnRunRecord) -> None:
    _c1(run).remove((0, 4, "p1-0-0"))


def nonmonotonic_send(run: TxnRunRecord) -> None:
    run.txns[0].n = 3  # p0's txn with 0@0 sent after its txn with 0@6


@pytest.mark.parametrize(
    ("anomaly", "expected"),
    [
        (aborted_read, {"aborted-read"}),
        (precommitted_read, {"precommitted-read"}),
        (lost_write, {"lost-write"}),
        (partial_transaction, {"partial-transaction"}),
        (duplicate, {"duplicate"}),
        (nonmonotonic_poll, {"nonmonotonic-poll"}),
        (int_nonmonotonic_poll, {"int-nonmonotonic-poll"}),
        (poll_skip, {"poll-skip"}),
        (int_poll_skip, {"int-poll-skip"}),
        (nonmonotonic_send, {"nonmonotonic-send"}),
    ],
)
def test_each_anomaly_is_named(anomaly: Callable[[TxnRunRecord], None], expected: set[str]) -> None:
    run = clean_run()
    anomaly(run)
    assert failing(run) == expected


def test_a_finding_names_its_example() -> None:
    run = clean_run()
    aborted_read(run)
    (f,) = [f for f in check(run) if f.check == "aborted-read"]
    assert f.detail == "p0-1-0 (txn aborted) read at 0@2 by c0"


def test_an_offset_with_two_values_is_inconsistent() -> None:
    run = clean_run()
    _c1(run)[2] = (0, 6, "p1-0-0")  # c1 reads p1-0-0 where p0-2-0 was acknowledged
    assert {"inconsistent-offset", "duplicate"} <= failing(run)


def test_an_unknown_transaction_read_counts_as_committed_and_unread_as_aborted() -> None:
    run = clean_run()
    # p1's txn 1 (unknown, never read) is not lost; p1's txn 0 (unknown, read) is in the output
    assert "p1-1-0" not in run.ctp_output  # type: ignore[operator]
    assert not failing(run)
    run.txns[4].outcome = COMMITTED  # had its commit returned, its value would be lost
    assert failing(run) == {"lost-write", "ctp-exactly-once"}


def test_consume_transform_produce_wants_each_committed_input_once() -> None:
    for output, why in [
        (["p0-0-1", "p0-0-0", "p1-0-0", "p1-0-1"], "p0-2-0 in the output 0 times"),
        (["p0-0-1", "p0-0-0", "p1-0-0", "p1-0-1", "p0-2-0", "p0-0-0"], "p0-0-0 in the output 2"),
        (["p0-0-1", "p0-0-0", "p1-0-0", "p1-0-1", "p0-2-0", "p0-1-0"], "p0-1-0 in the output, n"),
    ]:
        run = clean_run()
        run.ctp_output = output
        (f,) = [f for f in check(run) if not f.ok]
        assert f.check == "ctp-exactly-once" and why in f.detail


def test_a_seek_resets_the_poll_order() -> None:
    run = clean_run()
    _c0(run).append(Poll(6.0, [(0, 0, "p0-0-0")]))  # read again from the start...
    assert failing(run) == {"nonmonotonic-poll"}
    run.consumers[0].resets = [3]  # ...after a seek: fine
    assert not failing(run)


def test_examples_are_bounded_and_the_record_round_trips_through_json() -> None:
    run = clean_run()
    run.ctp_output = None
    run.consumers[0].positions[0] = 200  # c0 read partition 0 past the writes below
    for i in range(20):
        run.txns.append(Txn("p2", i, [TxnSend(0, f"p2-{i}-0", 100 + i)], COMMITTED, 1.0))
    (f,) = [f for f in check(run) if not f.ok]
    assert f.check == "lost-write" and f.detail.endswith("(and 15 more)")
    run.client_errors = [ClientError("p0", 2, 3.5, "abort", "INVALID_TXN_STATE", True, "x", 3.0)]
    again = TxnRunRecord.from_json(json.loads(json.dumps(run.to_json())))
    assert again == run and check(again) == check(run)
