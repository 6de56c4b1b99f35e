"""A client's fatal error fails a chaos run unless the fault schedule explains it
(deploy/chaos/client_errors.py, the `client-fatal` line of the transactional check table)."""

from __future__ import annotations

from deploy.chaos.checker import FaultRecord, passed
from deploy.chaos.client_errors import ClientError, check
from deploy.chaos.txn_checker import TxnRunRecord
from deploy.chaos.txn_checker import check as check_txn

TIMEOUT_S = 30.0
KILL = FaultRecord("kill-txn-coord", "broker 2", at_s=10.0, healed_at_s=12.0)


def fatal(error: str, at: float = 20.0, since: float | None = 19.0) -> ClientError:
    return ClientError("p0", 1, at, "abort", error, True, f"{error} detail", since)


def test_errors_that_are_not_fatal_pass() -> None:
    timed_out = ClientError("p0", 1, 11.0, "commit", "_TIMED_OUT", False, "timed out", 10.5)
    f = check([timed_out], [KILL], TIMEOUT_S)
    assert f.ok and f.detail == "1 client errors, none fatal"


def test_a_fatal_error_fails_the_run_with_its_client_call_and_text() -> None:
    f = check([fatal("INVALID_TXN_STATE")], [KILL], TIMEOUT_S)
    assert not f.ok
    assert f.detail == "p0 (instance 1) abort: INVALID_TXN_STATE at 20.0s: INVALID_TXN_STATE detail"


def test_one_line_per_client_instance_its_first_fatal_error() -> None:
    copier = ClientError("copier", 3, 25.0, "copy", "INVALID_TXN_STATE", True, "", 24.0)
    errors = [fatal("_FENCED", at=20.0), fatal("_FENCED", at=21.0), copier]
    f = check(errors, [], TIMEOUT_S)
    assert f.detail.split("; ") == [
        "p0 (instance 1) abort: _FENCED at 20.0s: _FENCED detail",
        "copier (instance 3) copy: INVALID_TXN_STATE at 25.0s",
    ]


def test_a_fence_after_a_transaction_held_open_past_its_timeout_by_a_fault_is_explained() -> None:
    old = fatal("PRODUCER_FENCED", at=45.0, since=9.0)  # open 36 s, through the kill at 10 s
    f = check([old], [KILL], TIMEOUT_S)
    assert f.ok and "its transaction was open 36.0s, past the transaction timeout" in f.detail
    assert "kill-txn-coord broker 2" in f.detail


def test_a_fence_the_schedule_does_not_explain_fails() -> None:
    young = fatal("_FENCED", at=20.0, since=19.0)  # open 1 s: another producer fenced it
    no_fault = fatal("_FENCED", at=45.0, since=13.0)  # open 32 s, but no fault in that time
    skipped = FaultRecord("net-zk", "-", at_s=14.0, skipped="needs root")
    invalid_state = fatal("INVALID_TXN_STATE", at=45.0, since=9.0)  # no fault explains it
    for e in (young, no_fault, invalid_state):
        assert not check([e], [KILL, skipped], TIMEOUT_S).ok, e


def test_the_transactional_verdict_fails_on_a_fatal_client_error() -> None:
    run = TxnRunRecord("t", 1, seed=1, txn_timeout_s=TIMEOUT_S)
    assert passed(check_txn(run))
    run.client_errors = [fatal("_FENCED")]
    findings = check_txn(run)
    assert not passed(findings)
    assert [f.check for f in findings if not f.ok] == ["client-fatal"]
