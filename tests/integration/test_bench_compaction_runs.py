"""`make bench-compaction` (bench/bench_compaction.py) runs to its end at a tiny size: every
section and figure printed, raw results written, no traceback. No figure is judged here (the
benchmark reports, it does not assert). Integration: its produce part starts brokers, on the
session's ZooKeeper."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.zookeeper import ZkProcess

pytestmark = pytest.mark.integration

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_compaction.py"
TINY = ["--records", "4000", "--keys", "100", "--batch-records", "100", "--segment-mib", "1",
        "--repeats", "1", "--produce-seconds", "0.5", "--rounds", "1", "--commits", "3000",
        "--commit-batch", "500"]  # fmt: skip
SECTIONS = ("## raw disk", "## cleaner", "## produce", "## coordinator load")
FIGURES = (  # the rows of the table, up to where the figure begins
    "raw write, 1 MB, 1 MiB blocks, page cache",
    "raw write, 1 MB, 1 MiB blocks, fdatasync at the end",
    "raw read, 1 MB, 1 MiB blocks, page cache",
    "raw read, 1 MB, 1 MiB blocks, evicted first",
    "cleaner pass, none, 4,000 records, 100 keys",
    "cleaner pass, zstd, 4,000 records, 100 keys",
    "produce, compacted topic, cleaner disabled",
    "produce, compacted topic, cleaner running",
    "produce with the cleaner / without (medians)",
    "coordinator load, 3,000 commits of one group, before compaction",
    "coordinator load, 3,000 commits of one group, after compaction",
)


def test_bench_compaction_prints_every_section_at_a_tiny_size(
    zk_server: ZkProcess, tmp_path: Path
) -> None:
    """Over 30 s (42 s measured on a loaded 2-core machine): the benchmark starts one-broker
    clusters of its own for its produce and coordinator-load sections, tiny as its data is."""
    raw = tmp_path / "compaction.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), *TINY, "--zookeeper", zk_server.connect, "--json", str(raw)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for section in SECTIONS:
        assert f"\n{section}\n" in f"\n{done.stdout}", section
    for figure in FIGURES:
        assert f"| {figure} |" in done.stdout, figure
    results = json.loads(raw.read_text())
    assert set(results) >= {"raw", "cleaner", "produce", "load"}
    assert results["load"]["after"]["records"] == 10  # one record per committed partition
