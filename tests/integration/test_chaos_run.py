"""`odradek chaos run` end to end: a dozen fault cycles against a cluster it starts itself.

The command runs as a user would run it (a subprocess of `python -m deploy.cli`), over every
fault kind this machine allows: the process kinds always; the network and disk kinds only as
root (network namespaces, tmpfs), else the run says in one line that it skipped them. It must
pass every check of deploy/chaos/checker.py and write its record as JSON, which `chaos check`
reads back to the same verdict. `chaos faults` prints a timeline without a workload.

The transactional workload (`--workload txn`) runs a few cycles of its own against its own
cluster, killing the transaction coordinator of its transactional ids and partition leaders:
no anomaly class of deploy/chaos/txn_checker.py may show, and the copy made by its
consume-transform-produce stage holds every committed value exactly once. A producer fenced by
a second producer of its transactional id (a fatal client error no fault explains) fails that
verdict, and the same seed then runs again on the same cluster (its topics made anew).

The share-group workload (`--workload share`) runs two cycles on its own cluster: a partition
leader's and a share coordinator's SIGKILL while member processes accept, release and reject;
every check of deploy/chaos/share_checker.py holds, and the record has work in it (deliveries,
accepts, releases, rejects, redeliveries).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from deploy.chaos import plan, share_checker, txn_checker
from tests.fixtures.cluster import seeded_rng

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PROCESS_KINDS = [
    k for k in plan.KINDS if k not in plan.ROOT_KINDS | plan.TXN_KINDS | plan.SHARE_KINDS
]


def _odradek(*args: str, timeout_s: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", *args], cwd=ROOT, capture_output=True, text=True,
        timeout=timeout_s,
    )  # fmt: skip


def test_chaos_run_passes_over_every_fault_kind_this_machine_allows(tmp_path: Path) -> None:
    seed = seeded_rng().randrange(1 << 30)
    kinds = (
        [k for k in plan.KINDS if k not in plan.TXN_KINDS | plan.SHARE_KINDS]
        if os.geteuid() == 0
        else PROCESS_KINDS
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


def test_chaos_run_of_a_share_group_through_leader_and_share_coordinator_kills_keeps_its_promises(
    tmp_path: Path,
) -> None:
    """`--workload share` (issue 35): member processes that accept, release and reject, a
    leader's and a share coordinator's SIGKILL under load; every check of
    deploy/chaos/share_checker.py holds, on a record that had work to judge."""
    seed = seeded_rng().randrange(1 << 30)
    kinds = ["kill-leader", "kill-share-coord"]
    record = tmp_path / "share.json"
    done = _odradek(
        "chaos", "run", "--dir", str(tmp_path / "cluster"), "--workload", "share", "--cycles",
        "2", "--seed", str(seed), "--faults", ",".join(kinds), "--rate", "50",
        "--json", str(record),
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    doc = json.loads(record.read_text())
    assert doc["verdict"] == "PASS" and doc["workload"] == "share"
    findings = {f["check"]: f for f in doc["findings"]}
    assert set(findings) >= {"accepted-or-archived", "delivered-after-done", "never-two-at-once",
                             "counts-never-down", "unknown-record"}  # fmt: skip
    assert all(f["ok"] for f in findings.values()), findings
    injected = {f["kind"] for f in doc["faults"] if f["skipped"] is None}
    assert injected == set(kinds), doc["faults"]
    run = share_checker.ShareRunRecord.from_json(doc["record"])
    actions = Counter(d.action for d in run.deliveries)
    assert len(run.produced) > 500 and len(run.deliveries) >= len(run.produced)
    assert actions["accept"] > 400 and actions["release"] and actions["reject"], actions
    assert any(d.count > 1 for d in run.deliveries), "released records came again"
    assert run.failovers, "the leader watch saw the kills"
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


def _cluster_kafka_bootstrap(cluster_dir: Path) -> str:
    state = json.loads((cluster_dir / "cluster.json").read_text())
    return ",".join(f"127.0.0.1:{b['kafka_port']}" for b in state["brokers"])


def _fence_when_writing(bootstrap: str, topic: str, transactional_id: str, run: Any) -> None:
    """Once the run's producers write to `topic`, init_transactions under one of their ids:
    the workload's producer with that id is fenced, a fatal error it did not cause."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "fence-probe", "log_level": 0})
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and run.poll() is None:
            try:  # list_topics asks afresh: a watermark query would keep "unknown topic"
                known = topic in probe.list_topics(timeout=5).topics
                ends = [probe.get_watermark_offsets(TopicPartition(topic, p), 5)[1]
                        for p in range(4)] if known else []  # fmt: skip
            except Exception:  # a broker busy, or the topic half created: ask again
                ends = []
            if sum(ends) > 20:
                break
            time.sleep(0.2)
    finally:
        probe.close()
    assert run.poll() is None, "the run ended before its producers wrote"
    fencer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                       "log_level": 0})  # fmt: skip
    fencer.init_transactions(30)
    fencer.flush(5)


def test_a_fenced_producer_fails_the_verdict_and_the_seed_replays_on_the_same_cluster(
    tmp_path: Path,
) -> None:
    cluster_dir = tmp_path / "cluster"
    up = _odradek("cluster", "up", "--dir", str(cluster_dir), "--no-console", timeout_s=180)
    assert up.returncode == 0, up.stderr[-3000:]
    seed = seeded_rng().randrange(1 << 30)
    args = ["chaos", "run", "--dir", str(cluster_dir), "--workload", "txn", "--cycles", "1",
            "--seed", str(seed), "--faults", "kill-leader"]  # fmt: skip
    try:
        run = subprocess.Popen(
            [sys.executable, "-m", "deploy.cli", *args], cwd=ROOT, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            _fence_when_writing(_cluster_kafka_bootstrap(cluster_dir), f"chaos-{seed}",
                                f"chaos-{seed}-tx0", run)  # fmt: skip
            stdout, stderr = run.communicate(timeout=600)
        finally:
            if run.poll() is None:
                run.kill()
                run.communicate()
        assert run.returncode == 1, (stdout + stderr)[-4000:]
        assert "Traceback" not in stdout + stderr
        (line,) = [x for x in stdout.splitlines() if x.startswith("client-fatal")]
        assert line.split()[1] == "FAIL" and "p0 (instance 1)" in line, line
        assert "FENCED" in line, line
        assert "verdict: FAIL" in stdout

        again = _odradek(*args)
        out = again.stdout + again.stderr
        assert again.returncode == 0, out[-4000:]
        assert (f"deleting chaos-{seed}, chaos-{seed}-out, left by an earlier run of seed {seed}"
                in again.stdout)  # fmt: skip
        assert f"deleting group chaos-{seed}-copier, left by an earlier" in again.stdout
        assert "verdict: PASS" in again.stdout and "TOPIC_ALREADY_EXISTS" not in out
    finally:
        _odradek("cluster", "down", "--dir", str(cluster_dir), "--purge", timeout_s=180)
