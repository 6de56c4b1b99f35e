"""bench/bench_user.py's load-independent figures: CPU and wake-ups per record, of this process
(getrusage) and of a local cluster's brokers (/proc, by the pids in its state file)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_user import broker_cost_fields, broker_costs, cost_per_record, process_cost


def test_broker_costs_per_record_between_two_readings() -> None:
    before = {1: (10.0, 500), 2: (3.0, 70)}
    after = {1: (10.5, 1500), 2: (3.1, 170), 3: (1.0, 1)}  # 3: no reading before, left out
    assert broker_cost_fields(before, after, 1000) == {"broker_cost": {
        "1": {"cpu_us_per_record": 500.0, "wakeups_per_record": 1.0},
        "2": {"cpu_us_per_record": 100.0, "wakeups_per_record": 0.1},
    }}  # fmt: skip
    assert broker_cost_fields({}, after, 1000) == {}


def test_a_broker_is_read_from_proc_by_its_pid(tmp_path: Path) -> None:
    """This test's own process stands in for a broker: its CPU and wake-ups are read."""
    (tmp_path / "cluster.json").write_text(json.dumps({"brokers": [
        {"id": 1, "pid": os.getpid()}, {"id": 2, "pid": 0}]}))  # fmt: skip
    costs = broker_costs(tmp_path)
    assert list(costs) == [1]  # pid 0 has no /proc entry: skipped
    cpu_s, wakes = costs[1]
    assert cpu_s > 0 and wakes >= 0
    assert broker_costs(tmp_path / "nowhere") == {}


def test_this_processes_cost_per_record() -> None:
    since = process_cost()
    sum(i * i for i in range(200_000))  # some CPU
    cost = cost_per_record("producer", since, 10)
    assert set(cost) == {"producer_cpu_us_per_record", "producer_wakeups_per_record"}
    assert cost["producer_cpu_us_per_record"] >= 0
    assert cost_per_record("consumer", None, 10) == {}  # nothing received: no figure
