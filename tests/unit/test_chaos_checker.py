"""The chaos checker catches each anomaly injected into an otherwise clean recorded run, and the
fault schedule is a function of its seed."""

from __future__ import annotations

import argparse
import copy

import pytest

from deploy.chaos import checker, cli, plan
from deploy.chaos.checker import FaultRecord, RunRecord, Send


def clean_run() -> RunRecord:
    """Two producers over two partitions; p0's third send to partition 1 failed (not stored),
    p1's second send to partition 0 failed but was stored (appended, never acknowledged)."""
    run = RunRecord("t", 2, seed=1)
    run.sends = {
        "p0": {0: [Send("p0-0-0", 0), Send("p0-0-1", 2)],
               1: [Send("p0-1-0", 0), Send("p0-1-1", 1), Send("p0-1-2", None, "timed out")]},
        "p1": {0: [Send("p1-0-0", 1), Send("p1-0-1", None, "expired")],
               1: [Send("p1-1-0", 2)]},
    }  # fmt: skip
    run.log = {
        0: [(0, "p0-0-0"), (1, "p1-0-0"), (2, "p0-0-1"), (3, "p1-0-1")],
        1: [(0, "p0-1-0"), (1, "p0-1-1"), (2, "p1-1-0")],
    }
    run.log_start = {0: 0, 1: 0}
    run.replica_digests = {0: {1: "aa", 2: "aa", 3: "aa"}, 1: {1: "bb", 2: "bb", 3: "bb"}}
    run.consumed = {0: ["p0-0-0", "p1-0-0", "p0-0-1", "p1-0-1"], 1: ["p0-1-0", "p0-1-1", "p1-1-0"]}
    run.commits = {0: [(0.0, 0.1, 2, "c0"), (0.2, 0.3, 4, "c0"), (0.25, 0.4, 2, "sample")]}
    run.faults = [FaultRecord("kill-leader", "broker 1", 1.0, 2.0, [0], 0.5),
                  FaultRecord("kill-leader", "broker 2", 5.0, 6.0, [1], 1.5),
                  FaultRecord("net-zk", "-", 9.0, skipped="needs root")]  # fmt: skip
    return run


def failing(run: RunRecord) -> set[str]:
    return {f.check for f in checker.check(run) if not f.ok}


def test_a_clean_run_passes_every_check() -> None:
    findings = checker.check(clean_run())
    assert [f.check for f in findings] == [
        "acked-present", "acked-once", "send-order", "unacked-at-most-once",
        "offsets-contiguous", "replicas-identical", "group-saw-acked", "commits-monotonic",
    ]  # fmt: skip
    assert all(f.ok for f in findings), findings
    assert checker.passed(findings)


def test_a_lost_record_is_caught() -> None:
    run = clean_run()
    run.log[0] = [(0, "p0-0-0"), (1, "p1-0-0"), (2, "p1-0-1")]  # p0-0-1 acked at 2 is gone
    assert {"acked-present"} <= failing(run)


def test_a_duplicated_record_is_caught() -> None:
    run = clean_run()
    run.log[1].append((3, "p0-1-1"))
    assert "acked-once" in failing(run)


def test_an_unacknowledged_record_stored_twice_is_caught() -> None:
    run = clean_run()
    run.log[0].append((4, "p1-0-1"))
    assert failing(run) >= {"unacked-at-most-once"}


def test_a_reordered_record_is_caught() -> None:
    run = clean_run()
    run.log[1] = [(0, "p0-1-1"), (1, "p0-1-0"), (2, "p1-1-0")]
    run.sends["p0"][1][0].offset, run.sends["p0"][1][1].offset = 1, 0
    assert failing(run) == {"send-order"}


def test_a_gap_in_offsets_is_caught() -> None:
    run = clean_run()
    run.log[1] = [(0, "p0-1-0"), (1, "p0-1-1"), (3, "p1-1-0")]
    run.sends["p1"][1][0].offset = 3
    assert failing(run) == {"offsets-contiguous"}


def test_a_divergent_replica_is_caught() -> None:
    run = clean_run()
    run.replica_digests[1][3] = "bc"
    assert failing(run) == {"replicas-identical"}


def test_a_record_the_group_never_saw_is_caught() -> None:
    run = clean_run()
    run.consumed[1].remove("p1-1-0")
    assert failing(run) == {"group-saw-acked"}


def test_a_regressed_commit_is_caught_but_overlapping_ones_are_not() -> None:
    run = clean_run()
    # the sample at 0.25-0.4 overlaps the commit of 4 (0.2-0.3): seeing 2 is allowed
    assert "commits-monotonic" not in failing(run)
    run.commits[0].append((0.5, 0.6, 3, "sample"))  # began after the commit of 4 ended
    assert failing(run) == {"commits-monotonic"}
    detail = next(f.detail for f in checker.check(run) if f.check == "commits-monotonic")
    assert "4 (c0) then 3 (sample)" in detail


def test_a_record_survives_the_json_round_trip() -> None:
    run = clean_run()
    again = RunRecord.from_json(copy.deepcopy(run.to_json()))
    assert again == run
    assert checker.check(again) == checker.check(run)


def test_availability_is_per_kind_and_ignores_skipped_faults() -> None:
    avail = checker.availability(clean_run().faults)
    assert avail == {"kill-leader": {"count": 2, "timed": 2, "p50_s": 1.0, "max_s": 1.5}}


def test_the_schedule_depends_on_the_seed_only_and_deals_every_kind() -> None:
    kinds = ["kill-leader", "term", "zombie"]
    first = plan.schedule(42, kinds, 7)
    assert plan.schedule(42, kinds, 7) == first
    assert plan.schedule(43, kinds, 7) != first
    assert sorted(s.kind for s in first[:3]) == sorted(kinds)  # each once before repeats
    assert all(plan.HOLD_S[0] <= s.hold_s <= plan.HOLD_S[1] for s in first)


def test_fault_lists_are_checked() -> None:
    assert plan.parse_kinds(None) == list(plan.KINDS)
    assert plan.parse_kinds("term, zombie") == ["term", "zombie"]
    with pytest.raises(ValueError, match="unknown fault kind"):
        plan.parse_kinds("term,flood")


def test_all_faults_aim_only_at_what_the_workload_has() -> None:
    """`--faults all`: kill-txn-coord only with transactions, kill-member and kill-share-coord
    only with a share group; named by hand they stay (and are skipped with a line at run time)."""

    def kinds(workload: str, faults: str | None) -> set[str]:
        args = argparse.Namespace(faults=faults, workload=workload, cycles=1, duration=None,
                                  seed=1, rate=10.0, dir="x")  # fmt: skip
        return set(cli._options(args).kinds)

    everything = set(plan.KINDS)
    assert kinds("native", None) == everything - plan.TXN_KINDS - plan.SHARE_KINDS
    assert kinds("txn", "all") == everything - plan.SHARE_KINDS
    assert kinds("share", None) == everything - plan.TXN_KINDS
    assert kinds("native", "kill-member") == {"kill-member"}
