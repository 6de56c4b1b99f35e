"""Issue 34's 1 KiB produce, old code beside new, with the CPU each side spends per MB.

    .venv/bin/python bench/bench_produce1k.py [--baseline REF] [--rounds 3] [--messages 300000]

Two 3-broker clusters, one from a git worktree of REF (bench_baseline.worktree: its C modules
built) and one from this tree, each driven by its own CLI (bench_baseline.Side). Each round runs
`odradek bench produce` (the bulk API, 256 KiB batches, acks=1, RF 1) of 1 KiB records to a fresh
topic of 1 and of 8 partitions on both sides back to back, alternating which side goes first, so
both see the same machine. `--same` runs this tree on both sides instead (two runs in a row on the
same code: the machine's own spread, e.g. a fresh VM's first writes to new disk blocks).

Per row: MB/s (10^6 bytes of record values per second, as `make bench`'s table), the load
generator's CPU (user + sys, start-up included: ~0.37 s) and the three brokers' CPU (utime +
stime from /proc/<pid>/stat around the run; their utime alone too), each per MB of record
values, and the 1-minute load average. The brokers' stime is mostly the page cache taking the
log's new pages, which on this VM (virtio-balloon free page reporting) costs up to 10x more when
they come from free memory the host has taken back than when they are recycled: their utime is
the steadier measure of the brokers' own code.
CPU per MB is the fair figure on a shared machine: the wall clock moves with the other
processes, the CPU spent much less.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_baseline

SIZE = 1024
TICK = os.sysconf("SC_CLK_TCK")


def broker_pids(cluster_dir: Path) -> list[int]:
    state = json.loads((cluster_dir / "cluster.json").read_text())
    return [int(b["pid"]) for b in state.get("brokers", []) if b.get("pid")]


def cpu_s(pid: int) -> tuple[float, float]:
    """(utime, stime) of a process, seconds ((0, 0) once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def run_case(side: bench_baseline.Side, topic: str, parts: int, n: int) -> dict:
    made = side.cli("topics", "create", topic, "--partitions", str(parts), "--bootstrap",
                    side.bootstrap)  # fmt: skip
    if made.returncode != 0:
        return {"error": made.stderr.strip()[-300:], "topic": topic}
    pids = broker_pids(side.dir)
    before = [cpu_s(p) for p in pids]
    load = os.getloadavg()[0]
    row = side.bench("produce", "--topic", topic, "--num-records", str(n),
                     "--record-size", str(SIZE), "--acks", "1")  # fmt: skip
    after = [cpu_s(p) for p in pids]
    user = [a[0] - b[0] for a, b in zip(after, before, strict=True)]
    used = [a[0] + a[1] - b[0] - b[1] for a, b in zip(after, before, strict=True)]
    mb = n * SIZE / 1e6
    row.update(
        side=side.name, partitions=parts, load1=round(load, 2),
        MB_per_s=round(mb / row["seconds"], 1) if "seconds" in row else None,
        client_cpu_ms_per_MB=round(1000 * row.get("client_cpu_s", 0) / mb, 2),
        broker_cpu_ms_per_MB=round(1000 * sum(used) / mb, 2),
        broker_user_ms_per_MB=round(1000 * sum(user) / mb, 2),
        broker_cpu_s=[round(u, 2) for u in used],
    )  # fmt: skip
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--baseline", default="main", help="git ref of the old side (default main)")
    ap.add_argument("--same", action="store_true", help="this tree on both sides")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--partitions", default="1,8")
    ap.add_argument("--json", type=Path, help="write the rows here too")
    args = ap.parse_args()
    parts_list = [int(p) for p in args.partitions.split(",")]
    rows: list[dict] = []
    same = bench_baseline.ROOT if args.same else None
    with bench_baseline.two_sides(args.baseline, "old", 3, same) as (sides, commit):
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            for parts in parts_list:
                for side in order:
                    row = run_case(side, f"k{parts}-{r}", parts, args.messages)
                    row.update(round=r, ref="working tree" if side.root == bench_baseline.ROOT
                               else commit)  # fmt: skip
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    for parts in parts_list:
        for name in ("old", "new"):
            mine = [r for r in rows if r.get("side") == name and r.get("partitions") == parts
                    and r.get("MB_per_s")]  # fmt: skip
            if mine:
                print(f"{name} {parts}p: MB/s {[r['MB_per_s'] for r in mine]}, client ms/MB "
                      f"{[r['client_cpu_ms_per_MB'] for r in mine]}, brokers ms/MB "
                      f"{[r['broker_cpu_ms_per_MB'] for r in mine]} (user "
                      f"{[r['broker_user_ms_per_MB'] for r in mine]}), load "
                      f"{[r['load1'] for r in mine]}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
