"""bench/bench_tail.py's debug-mode evidence: the steps whose CPU passed the threshold, read
from each broker's log past the case's start, per broker and step name, and the table of them.
Pure: made-up log files, no cluster."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_tail import log_sizes, loop_summaries, slow_step_table, slow_steps

BEFORE = "w odradek.broker.loop: slow loop step: 9.0 ms, CPU 9.0 ms in broker.x.Before\n"
DURING = (
    "w odradek.broker.loop: slow loop step: 3.2 ms, CPU 3.1 ms in broker.server.Connection."
    "data_received\n"
    "i odradek.broker.loop: waited loop step: 8.0 ms, CPU 0.2 ms in broker.server.Connection."
    "data_received\n"
    "w odradek.broker.loop: slow loop step: 4.0 ms, CPU 3.9 ms (GC 3.5 ms) in broker.server."
    "Connection.data_received handling Produce x2, Fetch\n"
    "w odradek.broker.loop: slow loop step: 1.4 ms, CPU 1.3 ms in coroutine broker.log.cleaner."
    "manager.LogCleaner.run (task Task-9)\n"
)


def test_only_the_cases_lines_over_the_threshold_by_cpu_count(tmp_path: Path) -> None:
    log = tmp_path / "broker-1.log"
    log.write_text(BEFORE)
    (tmp_path / "broker-2.log").write_text("")
    since = log_sizes(tmp_path)
    with log.open("a") as f:
        f.write(DURING + "i odradek.broker.loop: loop steps of broker.x.Y: 3 steps\n")
    steps = slow_steps(tmp_path, since)
    assert steps == {
        "broker-1": {"broker.server.Connection.data_received": [2, 3.9, 1, "Produce x2, Fetch"],
                     "coroutine broker.log.cleaner.manager.LogCleaner.run": [1, 1.3, 0, ""]},
        "broker-2": {},
    }  # fmt: skip
    table = slow_step_table([{"case": "txn", "slow_steps": steps}, {"case": "plain"}])
    assert table.splitlines()[2:] == [
        "| txn | broker-1 | broker.server.Connection.data_received | 2 | 3.9 | 1 "
        "| Produce x2, Fetch |",
        "| txn | broker-1 | coroutine broker.log.cleaner.manager.LogCleaner.run | 1 | 1.3 | 0 |  |",
    ]
    assert loop_summaries(tmp_path)["broker-1"] == ["loop steps of broker.x.Y: 3 steps"]
