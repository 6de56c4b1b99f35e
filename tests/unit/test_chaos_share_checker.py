"""The share-group chaos checker passes a clean hand-made history and names each broken promise
when a history shows it (deploy/chaos/share_checker.py)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pytest

from deploy.chaos.share_checker import (
    ACCEPT,
    FAILED,
    NOTHING,
    OK,
    REJECT,
    RELEASE,
    UNKNOWN,
    Delivery,
    ShareRunRecord,
    check,
)
from deploy.chaos.share_workload import member_deliveries

LOCK_S = 5.0


def d(member: str, at: float, offset: int, count: int, action: str = ACCEPT,
      outcome: str = OK) -> Delivery:  # fmt: skip
    answered = at + 0.01 if outcome in (OK, FAILED) else None
    return Delivery(member, at, 0, offset, f"v{offset}", count, action, outcome, answered)


def clean_run() -> ShareRunRecord:
    """Five records on partition 0, limit 3, a 5 s lock:
    v0 accepted by m0; v1 released by m0, accepted by m1 on delivery 2; v2 rejected by m1;
    v3 held by m0 (which died), redelivered to m1 after the lock, accepted; v4 delivered three
    times (released twice, the third member's lock ran out): archived at the limit."""
    run = ShareRunRecord(limit=3, lock_s=LOCK_S)
    run.produced = {(0, i): f"v{i}" for i in range(5)}
    run.deliveries = [
        d("m0", 1.0, 0, 1),
        d("m0", 1.0, 1, 1, RELEASE), d("m1", 1.5, 1, 2),
        d("m1", 1.5, 2, 1, REJECT),
        d("m0", 2.0, 3, 1, NOTHING, UNKNOWN), d("m1", 7.2, 3, 2),
        d("m0", 2.0, 4, 1, RELEASE), d("m1", 2.5, 4, 2, RELEASE),
        d("m2", 3.0, 4, 3, NOTHING, UNKNOWN),
    ]  # fmt: skip
    return run


def failing(run: ShareRunRecord) -> dict[str, str]:
    return {f.check: f.detail for f in check(run) if not f.ok}


def test_a_clean_history_passes_every_check() -> None:
    findings = check(clean_run())
    assert [f.check for f in findings] == ["accepted-or-archived", "delivered-after-done",
                                          "never-two-at-once", "counts-never-down",
                                          "unknown-record"]  # fmt: skip
    assert all(f.ok for f in findings), [f for f in findings if not f.ok]
    assert "1 rejected, 1 archived at the delivery limit" in findings[0].detail


def _add(*extra: Delivery) -> Callable[[ShareRunRecord], None]:
    def change(run: ShareRunRecord) -> None:
        run.deliveries += list(extra)

    return change


def _replace(i: int, **fields: object) -> Callable[[ShareRunRecord], None]:
    def change(run: ShareRunRecord) -> None:
        run.deliveries[i] = dataclasses.replace(run.deliveries[i], **fields)  # type: ignore[arg-type]

    return change


def _produce(offset: int) -> Callable[[ShareRunRecord], None]:
    def change(run: ShareRunRecord) -> None:
        run.produced[(0, offset)] = f"v{offset}"

    return change


@pytest.mark.parametrize(
    ("change", "broken", "named"),
    [
        # accepted twice: also a delivery after its accept
        (_add(d("m2", 9.0, 0, 2)), "accepted-or-archived", "accepted 2 times"),
        (_add(d("m2", 9.0, 0, 2, NOTHING, UNKNOWN)), "delivered-after-done", "after its accept"),
        (_add(d("m2", 9.0, 2, 2, NOTHING, UNKNOWN)), "delivered-after-done", "after its reject"),
        (_produce(5), "accepted-or-archived", "never delivered"),
        # v4 delivered only twice, then nothing: neither accepted nor at the limit
        (_replace(8, count=2, at=3.0), "accepted-or-archived", "never accepted or rejected"),
        # m1 got v3 1 s after m0 took it: m0's lock held for 4 s more
        (_replace(5, at=3.0), "never-two-at-once", "inside the 5 s lock"),
        (_replace(7, count=1), "counts-never-down", "count 1 (m0 at 2.000) then 1"),
        (_replace(8, count=4), "counts-never-down", "delivery count 4 outside 1..3"),
        (_replace(0, value="stranger"), "unknown-record", "'stranger' at (0, 0)"),
    ],
)
def test_each_broken_promise_is_named(
    change: Callable[[ShareRunRecord], None], broken: str, named: str
) -> None:
    run = clean_run()
    change(run)
    got = failing(run)
    assert broken in got, got
    assert named in got[broken]


def test_a_failover_or_a_failed_acknowledgement_frees_a_lock() -> None:
    """No lock survives a leader change (Kafka persists none), and an acknowledgement the broker
    refused means the acquisition had already ended."""
    early = _replace(5, at=3.0)
    run = clean_run()
    early(run)
    run.failovers = [2.5]
    assert "never-two-at-once" not in failing(run)
    run = clean_run()
    early(run)
    _replace(4, action=ACCEPT, outcome=FAILED)(run)
    assert "never-two-at-once" not in failing(run)


def test_a_sigkilled_members_records_are_free_at_its_death() -> None:
    """A SIGKILLed member's connection closes and its leader gives back what it held at once
    (Kafka 4.2's release on a disconnect): another member may get it inside the lock."""
    run = clean_run()
    _replace(5, at=3.0)(run)  # m1 got v3 1 s after m0 took it
    run.deaths = {"m0": 2.8}
    assert "never-two-at-once" not in failing(run)
    run.deaths = {"m0": 6.0}  # m0 died after m1 got it: that was inside the lock
    assert "never-two-at-once" in failing(run)


def test_an_unacknowledged_produce_may_be_delivered_and_need_not_be() -> None:
    run = clean_run()
    run.unacknowledged = {"v9"}
    _add(d("m0", 9.0, 9, 1))(run)
    assert not failing(run)


def test_an_unanswered_last_accept_counts_as_done_and_an_unanswered_earlier_one_does_not() -> None:
    """A real run showed it: an accept whose answer was lost in the leader's SIGKILL, its write
    kept, so the record never came again. Had the write been lost, the record would have come
    back, and the later delivery's acknowledgement decides."""
    run = clean_run()
    _produce(5)(run)
    _add(d("m0", 4.0, 5, 1, ACCEPT, UNKNOWN))(run)
    findings = {f.check: f for f in check(run)}
    assert findings["accepted-or-archived"].ok, findings
    assert "1 acknowledged without an answer" in findings["accepted-or-archived"].detail
    _add(d("m1", 9.5, 5, 2, NOTHING, UNKNOWN))(run)  # it came back: the accept was not kept
    assert "never accepted or rejected" in failing(run)["accepted-or-archived"]


def test_a_record_goes_to_json_and_back_unchanged() -> None:
    run = clean_run()
    run.unacknowledged, run.failovers, run.deaths = {"v9"}, [2.5, 3.0], {"m0": 2.8}
    again = ShareRunRecord.from_json(json.loads(json.dumps(run.to_json())))
    assert again == run
    assert check(again) == check(run)


def test_a_members_lines_become_deliveries_with_their_outcomes() -> None:
    """share_member.py's lines: a poll's records, then its answer per partition (ok, failed,
    or none: unknown); a poll without an answer line leaves every outcome unknown."""
    lines = [
        {"poll": 0, "at": 1.0, "p": 0, "o": 4, "v": "a", "c": 1, "a": "accept"},
        {"poll": 0, "at": 1.0, "p": 1, "o": 7, "v": "b", "c": 2, "a": "release"},
        {"poll": 0, "at": 1.0, "p": 2, "o": 1, "v": "c", "c": 1, "a": "reject"},
        {"ack": 0, "at": 1.2, "ok": [0], "failed": [1], "errors": {"1": "X", "2": "Y"}},
        {"poll": 1, "at": 2.0, "p": 0, "o": 5, "v": "d", "c": 1, "a": "accept"},
    ]
    got = member_deliveries("m0", lines)
    assert [(x.offset, x.action, x.outcome, x.answered_at) for x in got] == [
        (4, ACCEPT, OK, 1.2), (7, RELEASE, FAILED, 1.2), (1, REJECT, UNKNOWN, None),
        (5, ACCEPT, UNKNOWN, None),
    ]  # fmt: skip
    assert {x.member for x in got} == {"m0"} and [x.count for x in got] == [1, 2, 1, 1]
