"""`make bench-log` (bench/bench_log.py) runs to its end at a tiny size: every figure printed,
no traceback (its torn-tail recovery run once failed on a log without a checkpoint file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "bench_log.py"


def test_bench_log_prints_every_figure_at_a_tiny_size() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--gib", "0.002", "--lookups", "50"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for figure in ("append 16 KiB batches, fsync never", "random offset lookups",
                   "recovery, 0.00 GiB torn tail, warm cache",
                   "recovery, 0.00 GiB torn tail, cold cache"):  # fmt: skip
        assert f"| {figure}" in done.stdout, figure
