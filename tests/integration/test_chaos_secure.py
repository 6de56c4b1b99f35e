"""`odradek chaos run` against a cluster started with `odradek cluster up --secure` (issue 25).

Every listener of that cluster is SASL_SSL with SCRAM-SHA-512; chaos is given no security flag:
it logs in with the cluster dir's client.properties (deploy/chaos/security.py), its native
producers, group members, sampler, admin and fault probes and then confluent-kafka's
(`--workload kafka`) alike. Two fault cycles each (its own seed, so its own topic); the check
must pass: every acknowledged record kept at its offset, the group's commits never ahead of
what it read.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from deploy.chaos import plan
from deploy.zookeeper import ZkProcess
from tests.fixtures.cluster import run_odradek

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KINDS = ["kill-leader", "term"]
CHAOS_TIMEOUT_S = 300.0


def _chaos(where: Path, workload: str, seed: int, record: Path) -> None:
    done = run_odradek(
        "chaos", "run", "--dir", str(where), "--workload", workload, "--cycles", "2",
        "--seed", str(seed), "--faults", ",".join(KINDS), "--rate", "200", "--json", str(record),
        timeout_s=CHAOS_TIMEOUT_S,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    assert "verdict: PASS" in done.stdout
    doc = json.loads(record.read_text())
    assert doc["verdict"] == "PASS"
    assert all(f["ok"] for f in doc["findings"]), doc["findings"]
    acked = sum(
        1 for by_p in doc["record"]["sends"].values()
        for sends in by_p.values() for _, offset, _ in sends if offset is not None
    )  # fmt: skip
    assert acked > 100, "the workload wrote over SASL_SSL through the faults"
    injected = [f["kind"] for f in doc["record"]["faults"] if f["skipped"] is None]
    assert injected, "faults were injected"


def test_chaos_run_on_a_secure_cluster_keeps_every_acknowledged_record(
    zk_server: ZkProcess, tmp_path: Path
) -> None:
    assert set(KINDS) <= set(plan.KINDS)
    where = tmp_path / "cluster"
    connect = f"{zk_server.connect}/odradek-{uuid.uuid4().hex[:12]}"
    up = run_odradek("cluster", "up", "--secure", "--dir", str(where), "--brokers", "3",
                     "--zookeeper", connect, "--session-timeout-ms", "4000")  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        _chaos(where, "native", 7, tmp_path / "native.json")
        _chaos(where, "kafka", 8, tmp_path / "kafka.json")
    finally:
        down = run_odradek("cluster", "down", "--dir", str(where))
        assert down.returncode == 0, down.stderr
