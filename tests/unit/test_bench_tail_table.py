"""bench/tail_table.py: each case's p99 over plain's at the same RF, odradek's over NATS's in the
same state (plain against quiet, loaded against loaded), NATS loaded over NATS quiet, and one
table line per row, an error shown as one. Pure: made-up rows, no cluster."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from tail_table import render, summarize


def odradek(case: str, rf: int, p99: float, **extra: object) -> dict[str, object]:
    return {"system": "odradek", "case": case, "rf": rf, "acks": "1" if rf == 1 else "all",
            "e2e_ms_p50": p99 / 4, "e2e_ms_p99": p99, "e2e_ms_p999": p99 * 2,
            "e2e_ms_max": p99 * 3, "loop_lag_ms_p99": 1.5, "loop_lag_ms_max": 12.0,
            **extra}  # fmt: skip


def nats(case: str, p99: float) -> dict[str, object]:
    return {"system": "nats", "peer": "nats-jetstream", "case": case, "e2e_ms_p50": 0.2,
            "e2e_ms_p99": p99, "e2e_ms_p999": p99, "e2e_ms_max": p99}  # fmt: skip


ROWS = [
    odradek("plain", 1, 1.0),
    odradek("plain", 3, 4.0),
    nats("quiet", 0.5),
    odradek("txn", 1, 1.5),
    odradek("txn", 3, 2.0),
    odradek("loaded", 1, 3.0),
    nats("loaded", 2.0),
    odradek("acls", 3, 0.0, error="latency consumer: boom"),
]
SIDES = {"txn": {"transactions": 40, "records": 4000, "commit_ms_p99": 3.2}}


def by_case(summary: dict, case: str, rf: str) -> dict:
    return next(line for line in summary["lines"] if line["case"] == case and line["rf"] == rf)


def test_each_case_p99_is_set_against_plain_at_the_same_rf() -> None:
    summary = summarize(ROWS, SIDES)
    assert by_case(summary, "txn", "RF 1 acks=1")["vs_plain"] == 1.5
    assert by_case(summary, "txn", "RF 3 acks=all")["vs_plain"] == 0.5
    assert by_case(summary, "plain", "RF 1 acks=1")["vs_plain"] is None


def test_odradek_is_set_against_nats_in_the_same_state() -> None:
    summary = summarize(ROWS, SIDES)
    assert by_case(summary, "plain", "RF 1 acks=1")["vs_nats"] == 2.0  # 1.0 / quiet 0.5
    assert by_case(summary, "loaded", "RF 1 acks=1")["vs_nats"] == 1.5  # 3.0 / loaded 2.0
    assert "vs_nats" not in by_case(summary, "txn", "RF 1 acks=1")
    assert by_case(summary, "NATS JetStream, loaded", "R1 file")["vs_plain"] == 4.0


def test_the_table_has_a_line_per_row_with_its_note_and_errors() -> None:
    text = render(summarize(ROWS, SIDES))
    lines = text.splitlines()
    assert len(lines) == 2 + len(ROWS)
    txn = next(line for line in lines if line.startswith("| txn | RF 1"))
    assert "| 0.38 | 1.50 | 3.00 | 4.50 | 1.50 / 12.00 | 1.50 | - | 40 commits beside" in txn
    assert any(line.startswith("| acls | RF 3 acks=all | error: latency consumer: boom")
               for line in lines)  # fmt: skip
