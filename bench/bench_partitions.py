#!/usr/bin/env python3
"""`python bench/bench_partitions.py`: 3 brokers, 3,000 partitions at RF 3, beside the baseline.

Each side (the working tree, and a git worktree of --ref, by default `ad616d3`, today's main
at the start of the work) runs the same measurement in its own process, with that tree's code
first on sys.path, so its LocalCluster spawns brokers of that tree (bench/bench_baseline.py's
`worktree` helper makes and removes the worktree):

1. A local cluster of 3 brokers (the default ZooKeeper session timeout, 6 s) in a temporary
   directory.
2. Creation: one topic of --partitions partitions, RF 3; the time from the CreateTopics call
   until every broker's Metadata answer names a leader for every partition. Beside it, the
   disk's own floor measured just before: 3 threads making --partitions directories with one
   file each (a new log is a directory and a file; on this machine's disk each costs 0.3-0.8
   ms of metadata work, and the brokers share the disk).
3. Idle: --idle-s seconds after every ISR is full, each broker's CPU% (utime + stime from
   /proc/<pid>/stat over the window) and RSS (/proc/<pid>/status VmRSS).
4. Failover: SIGKILL of a broker that is not the controller (it leads about a third): the time
   from the signal until every surviving broker's Metadata names a live leader for every
   partition, and the part of it after the controller noticed (its log line "brokers: dead
   [id]", wall clock, millisecond resolution).
5. With --topics N (default 100): a second cluster, N topics of --partitions/N partitions,
   created in one CreateTopics call, timed as in 2.

Prints a Markdown table (side by side) and writes everything to bench/results/partitions-*.json.
Targets (issue 12): creation <= 10 s; every partition led again within 2 s of the controller
noticing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _tree_from_argv() -> Path:
    if "--tree" in sys.argv:
        return Path(sys.argv[sys.argv.index("--tree") + 1]).resolve()
    return ROOT


TREE = _tree_from_argv()
sys.path.insert(0, str(TREE))

DEFAULT_REF = "ad616d3"
MAX_WAIT_S = 180.0
POLL_S = 0.05
TICKS = os.sysconf("SC_CLK_TCK")
DEAD_LINE = re.compile(r"^(\S+ \S+) .*brokers: dead \[([0-9, ]*)\]")


# ----- one side (runs inside the side's own process) ---------------------------------------


async def _metadata(port: int, topics: list[str] | None) -> Any:
    from protocol.api.metadata import MetadataRequest
    from transport.connection import BrokerConnection

    try:
        conn = await BrokerConnection.connect("127.0.0.1", port, connect_timeout_ms=2000)
    except Exception:
        return None
    try:
        return await conn.send(MetadataRequest(topics=topics), timeout_ms=10_000)
    except Exception:
        return None
    finally:
        await conn.close()


async def _all_led(ports: list[int], topics: list[str], total: int, dead: int | None) -> bool:
    """Every broker's metadata names a leader (not `dead`) for all `total` partitions."""
    answers = await asyncio.gather(*(_metadata(p, topics) for p in ports))
    for resp in answers:
        if resp is None:
            return False
        led = sum(
            1
            for t in resp.topics
            if not t.error_code
            for p in t.partitions
            if p.leader >= 0 and p.leader != dead
        )
        if led < total:
            return False
    return True


async def _wait_led(
    ports: list[int], topics: list[str], total: int, dead: int | None = None
) -> float | None:
    """Monotonic time at which every broker first reported every partition led; None."""
    deadline = time.monotonic() + MAX_WAIT_S
    while time.monotonic() < deadline:
        if await _all_led(ports, topics, total, dead):
            return time.monotonic()
        await asyncio.sleep(POLL_S)
    return None


def _full_isr(port: int, topics: list[str], total: int) -> bool:
    resp = asyncio.run(_metadata(port, topics))
    if resp is None:
        return False
    full = sum(1 for t in resp.topics for p in t.partitions if len(p.isr) == 3)
    return full == total


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _idle(pids: dict[int, int], window_s: float) -> dict[str, dict[str, float]]:
    before = {b: _cpu_ticks(p) for b, p in pids.items()}
    start = time.monotonic()
    time.sleep(window_s)
    elapsed = time.monotonic() - start
    out = {}
    for b, p in pids.items():
        cpu = (_cpu_ticks(p) - before[b]) / TICKS / elapsed * 100
        out[str(b)] = {"cpu_pct": round(cpu, 2), "rss_mb": round(_rss_mb(p), 1)}
    return out


def _noticed_at(log: Path, victim: int, after: float) -> float | None:
    """Wall-clock time of the controller's first "brokers: dead [..victim..]" after `after`."""
    if not log.exists():
        return None
    for line in log.read_text(errors="replace").splitlines():
        m = DEAD_LINE.match(line)
        if not m or str(victim) not in m.group(2).replace(" ", "").split(","):
            continue
        t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if t >= after - 0.01:
            return t
    return None


TIMELINE = re.compile(r"refuses connections|brokers: dead|new leaders|leader for|probed")


def _timeline(where: Path, since: float, limit: int = 40) -> list[str]:
    """Where the failover's time went: the brokers' log lines about it, in seconds after the
    kill (the controller's probe, its decision, each broker's new roles)."""
    rows: list[tuple[float, str]] = []
    for log in sorted(where.glob("broker-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if not TIMELINE.search(line):
                continue
            try:
                t = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            except ValueError:
                continue
            if t >= since - 0.01:
                rows.append((t - since, f"{log.stem}: {line[24:].split(': ', 1)[-1][:110]}"))
    return [f"+{t:.3f}s {text}" for t, text in sorted(rows)[:limit]]


def _create(bootstrap: str, topics: list[tuple[str, int]]) -> None:
    from client import Admin, NewTopic

    with Admin(bootstrap, request_timeout_ms=120_000) as admin:
        admin.create_topics([NewTopic(name, n, 3) for name, n in topics])


def _timed_creation(cluster: Any, topics: list[tuple[str, int]]) -> float | None:
    ports = [cluster.broker(b).port for b in cluster.broker_ids]
    total = sum(n for _, n in topics)
    start = time.monotonic()
    _create(cluster.bootstrap, topics)
    done = asyncio.run(_wait_led(ports, [t for t, _ in topics], total))
    return None if done is None else round(done - start, 3)


def _cluster(where: Path) -> Any:
    from deploy.cluster import LocalCluster

    cluster = LocalCluster(where, brokers=3, ready_timeout_s=120)
    cluster.up()
    return cluster


def _disk_floor(where: Path, partitions: int) -> float:
    """Seconds for 3 threads (the 3 brokers) to make `partitions` directories each with one
    empty file in each: the file-system work a new log cannot do without, on this disk now."""

    def make(broker: int) -> None:
        for p in range(partitions):
            directory = where / f"b{broker}" / f"t-{p}"
            directory.mkdir(parents=True)
            os.close(os.open(directory / "0.log", os.O_RDWR | os.O_CREAT, 0o644))

    start = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(make, range(3)))
    elapsed = time.monotonic() - start
    shutil.rmtree(where, ignore_errors=True)
    return round(elapsed, 3)


def run_side(partitions: int, topics: int, idle_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {"partitions": partitions, "loadavg_start": _loadavg()}
    tmp = Path(tempfile.mkdtemp(prefix="odradek-partitions-"))
    out["disk_floor_s"] = _disk_floor(tmp / "floor", partitions)
    cluster = _cluster(tmp / "one")
    try:
        out["session_timeout_ms"] = cluster._current_state().session_timeout_ms
        out["create_one_topic_s"] = _timed_creation(cluster, [("p3000", partitions)])
        port0 = cluster.broker(cluster.broker_ids[0]).port
        deadline = time.monotonic() + MAX_WAIT_S
        while not _full_isr(port0, ["p3000"], partitions) and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)  # let the start-up work settle
        pids = {b: cluster.broker(b).pid for b in cluster.broker_ids}
        out["idle"] = _idle(pids, idle_s)
        out["loadavg_idle"] = _loadavg()
        controller = cluster.controller_id()
        resp = None
        while resp is None and time.monotonic() < deadline + MAX_WAIT_S:
            resp = asyncio.run(_metadata(port0, ["p3000"]))  # None: not answered (a busy broker)
        leads: dict[int, int] = {}
        for t in resp.topics if resp is not None else []:
            for p in t.partitions:
                leads[p.leader] = leads.get(p.leader, 0) + 1
        victim = max((b for b in leads if b != controller), key=lambda b: leads[b])
        out.update(victim=victim, victim_leaderships=leads[victim], controller=controller)
        survivors = [cluster.broker(b).port for b in cluster.broker_ids if b != victim]
        wall, start = time.time(), time.monotonic()
        cluster.kill(victim, "KILL")
        done = asyncio.run(_wait_led(survivors, ["p3000"], partitions, dead=victim))
        out["failover_from_kill_s"] = None if done is None else round(done - start, 3)
        noticed = _noticed_at(tmp / "one" / f"broker-{controller}.log", victim, wall)
        out["noticed_after_kill_s"] = None if noticed is None else round(noticed - wall, 3)
        if done is not None and noticed is not None:
            out["failover_from_notice_s"] = round(done - start - (noticed - wall), 3)
        out["timeline"] = _timeline(tmp / "one", wall)
    finally:
        cluster.down(purge=True)
    if topics > 0:
        cluster = _cluster(tmp / "many")
        try:
            per = max(partitions // topics, 1)
            names = [(f"t{i:03d}", per) for i in range(topics)]
            out[f"create_{topics}_topics_s"] = _timed_creation(cluster, names)
        finally:
            cluster.down(purge=True)
    out["loadavg_end"] = _loadavg()
    return out


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# ----- both sides ----------------------------------------------------------------------------


def _run_in(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    script = ROOT / "bench" / "bench_partitions.py"
    cmd = [sys.executable, str(script), "--side-run", "--tree", str(tree),
           "--partitions", str(args.partitions), "--topics", str(args.topics),
           "--idle-s", str(args.idle_s)]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-800:]}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _fmt(v: Any) -> str:
    return "-" if v is None else str(v)


def table(rows: dict[str, dict[str, Any]]) -> str:
    names = list(rows)
    lines = ["| figure | " + " | ".join(names) + " | target |",
             "|---|" + "---|" * len(names) + "---|"]  # fmt: skip
    n_topics = next((k for r in rows.values() for k in r if k.startswith("create_") and
                     k.endswith("_topics_s")), None)  # fmt: skip
    figures = [("disk_floor_s", "the disk alone: 3 x 3,000 directories and files (s)", ""),
               ("create_one_topic_s", "create 1 topic x 3,000 partitions (s)", "<= 10"),
               *([(n_topics, n_topics.replace("_", " "), "<= 10")] if n_topics else []),
               ("victim_leaderships", "leaderships of the SIGKILLed broker", ""),
               ("noticed_after_kill_s", "controller noticed, after the kill (s)", ""),
               ("failover_from_notice_s", "all led again, after the notice (s)", "<= 2"),
               ("failover_from_kill_s", "all led again, after the kill (s)", "")]  # fmt: skip
    for key, label, target in figures:
        lines.append(f"| {label} | " + " | ".join(_fmt(rows[n].get(key)) for n in names) +
                     f" | {target} |")  # fmt: skip
    for b in ("1", "2", "3"):
        for what, unit in (("cpu_pct", "idle CPU %"), ("rss_mb", "RSS MB")):
            vals = [_fmt(rows[n].get("idle", {}).get(b, {}).get(what)) for n in names]
            lines.append(f"| broker {b} {unit} | " + " | ".join(vals) + " | |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--partitions", type=int, default=3000)
    ap.add_argument("--topics", type=int, default=100, help="second case: N topics (0: skip)")
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--ref", default=DEFAULT_REF, help="the baseline git ref ('' to skip it)")
    ap.add_argument("--side-run", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=str(ROOT), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side_run:
        print(json.dumps(run_side(args.partitions, args.topics, args.idle_s)))
        return 0
    from bench.bench_baseline import worktree

    rows: dict[str, dict[str, Any]] = {}
    if args.ref:
        with worktree(args.ref) as (src, commit):
            rows[f"baseline {commit}"] = _run_in(src, args)
    rows["working tree"] = _run_in(ROOT, args)
    print(table(rows))
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    path = results / f"partitions-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(rows, indent=2))
    print(f"\nwritten to {path}")
    for name, row in rows.items():
        if "error" in row:
            print(f"{name}: failed: {row['error']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
