"""`odradek chaos run` end to end: a dozen fault cycles against a cluster it starts itself.

The command runs as a user would run it (a subprocess of `python -m deploy.cli`), over every
fault kind this machine allows: the process kinds always; the network and disk kinds only as
root (network namespaces, tmpfs), else the run says in one line that it skipped them. It must
pass every check of deploy/chaos/checker.py and write its record as JSON, which `chaos check`
reads back to the same verdict. `chaos faults` prints a timeline without a workload.

The transactional workload (`--workload txn`) runs a few cycles of its own against its own
cluster, killing the transaction coordinator of its transactional ids and partition leaders:
no anomaly class of deploy/chaos/txn_checker.py may show, and the copy made by its
consume-transform-produce stage holds every committed value exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.chaos import plan, txn_checker
from tests.fixtures.cluster import seeded_rng

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PROCESS_KINDS = [k for k in plan.KINDS if k not in plan.ROOT_KINDS | plan.TXN_KINDS]


def _odradek(*args: str, timeout_s: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", *args], cwd=ROOT, capture_output=True, text=True,
        timeout=timeout_s,
    )  # fmt: skip


def test_chaos_run_passes_over_every_fault_kind_this_machine_allows(tmp_path: Path) -> None:
    seed = seeded_rng().randrange(1 << 30)
    kinds = (
        [k for k in plan.KINDS if k not in plan.TXN_KINDS] if os.geteuid() == 0 else PROCESS_KINDS
    )
    record = tmp_path / "chaos.json"
    done = _odradek(
        "chaos", "run", "--dir", str(tmp_path / "cluster"), "--cycles", "12",
        "--seed", str(seed), "--faults", ",".join(kinds), "--json", str(record),
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    assert "verdict: PASS" in done.stdout
    doc = json.loads(record.read_text())
    assert doc["verdict"] == "PASS" and doc["seed"] == seed
    assert [s["kind"] for s in doc["schedule"]] == [
        s.kind for s in plan.schedule(seed, kinds, 12)
    ], "the schedule is the seed's"
    injected = {f["kind"] for f in doc["record"]["faults"] if f["skipped"] is None}
    assert injected == set(kinds), f"not injected: {set(kinds) - injected}"
    findings = {f["check"]: f for f in doc["findings"]}
    assert all(f["ok"] for f in findings.values()), findings
    acked = sum(
        1 for by_p in doc["record"]["sends"].values()
        for sends in by_p.values() for _, offset, _ in sends if offset is not None
    )  # fmt: skip
    assert acked > 1000, "the workload kept writing through the faults"
    assert len({k for k, a in doc["availability"].items() if a["timed"]}) >= 3
    again = _odradek("chaos", "check", str(record), timeout_s=120)
    assert again.returncode == 0 and "verdict: PASS" in again.stdout, again.stdout


def test_chaos_run_of_transactions_through_coordinator_kills_shows_no_anomaly(
    tmp_path: Path,
) -> None:
    seed = seeded_rng().randrange(1 << 30)
    kinds = ["kill-txn-coord", "kill-leader"]
    record = tmp_path / "txn.json"
    done = _odradek(
        "chaos", "run", "--dir", str(tmp_path / "cluster"), "--workload", "txn", "--cycles", "3",
        "--seed", str(seed), "--faults", ",".join(kinds), "--json", str(record),
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    doc = json.loads(record.read_text())
    assert doc["verdict"] == "PASS" and doc["workload"] == "txn"
    findings = {f["check"]: f for f in doc["findings"]}
    assert set(txn_checker.CLASSES) | {"ctp-exactly-once"} <= set(findings)
    assert all(f["ok"] for f in findings.values()), findings
    injected = [f["kind"] for f in doc["record"]["faults"] if f["skipped"] is None]
    assert "kill-txn-coord" in injected, doc["record"]["faults"]
    outcomes = [t["outcome"] for t in doc["record"]["txns"]]
    assert outcomes.count("committed") > 50 and outcomes.count("aborted") > 5
    again = _odradek("chaos", "check", str(record), timeout_s=120)
    assert again.returncode == 0 and "verdict: PASS" in again.stdout, again.stdout


def test_chaos_faults_prints_a_timeline_and_refuses_unknown_kinds(tmp_path: Path) -> None:
    bad = _odradek("chaos", "faults", "--faults", "kill-leader,flood", timeout_s=60)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "odradek: error: unknown fault kind(s) flood; known: " + ", ".join(plan.KINDS)
    ]
    done = _odradek(
        "chaos", "faults", "--dir", str(tmp_path / "cluster"), "--cycles", "2", "--seed", "3",
        "--faults", "kill-leader,term",
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(lines) == 2 and {"kill-leader", "term"} == {line.split()[2] for line in lines}
    assert "healed; every broker is running" in done.stdout
