#!/usr/bin/env python3
"""`make bench-failover`: unavailability per failover, and produce throughput with replication.

Both sides in the same run: the working tree, and a git worktree of --ref (default `ad616d3`,
today's main when fast death detection was added; bench/bench_baseline.py's `worktree`), each
measured in its own process with that tree first on sys.path, so its cluster runs its code
(--ref '' skips the baseline; the baseline side measures failovers only, not throughput).

1. Starts a local cluster (ZooKeeper + 3 brokers) with the local cluster's default ZooKeeper
   session timeout (6 s; --session-ms to change it: the point is not to wait for it, since the
   controller acts on a refused connection, coordinator/controller/fast_death.py) in a temporary
   directory; creates `failover` (1 partition, RF 3, min.insync.replicas 2).
2. A prober (its own thread and event loop) sends one acks=all record at a time to that
   partition, for the whole run, and records when each send started and when it was
   acknowledged (time.monotonic).
3. For each of --cycles cycles, per signal (KILL, then TERM): wait until the partition has all
   three replicas in its ISR and the prober is getting acks, signal the partition's leader,
   and measure the unavailability: from the signal to the first acknowledgement of a record
   whose send started after the signal. Then restart the broker and wait for it to rejoin.
   A cycle with no acknowledgement within --max-wait-s counts as that long and is flagged.
4. Produce throughput, 100-byte records, with `odradek bench produce` (deploy/perf.py, bulk API)
   in a separate process: topics of 3 partitions (one led by each broker), RF 3 with
   --acks all beside RF 1 with --acks 1, each run --repeat times (best kept).
5. Prints a Markdown table and writes every figure to bench/results/failover-<time>.json.

Targets (issue 12): SIGKILL p50 <= 0.5 s (issue 4 had: session timeout + 1 s); SIGTERM p50
<= 0.5 s; RF=3 acks=all >= 100,000 records/s.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# a side's run (--side-run --tree T) imports the code of tree T, so its brokers run it too
TREE = Path(sys.argv[sys.argv.index("--tree") + 1]).resolve() if "--tree" in sys.argv else ROOT
sys.path.insert(0, str(TREE))

from client import Admin, AsyncProducer, NewTopic  # noqa: E402
from deploy.cluster import DEFAULT_SESSION_TIMEOUT_MS, LocalCluster  # noqa: E402
from deploy.perf import percentile  # noqa: E402

TOPIC = "failover"
SESSION_TIMEOUT_MS = DEFAULT_SESSION_TIMEOUT_MS
DEFAULT_REF = "ad616d3"
MAX_ACKS_KEPT = 200_000


class Prober:
    """One acks=all record at a time to partition 0; keeps (send start, ack time) pairs."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.acks: list[tuple[float, float]] = []
        self.errors = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    async def _run(self) -> None:
        producer = AsyncProducer(
            self.bootstrap, acks="all", linger_ms=0, max_in_flight_per_partition=1,
            request_timeout_ms=1000, retry_backoff_ms=20, delivery_timeout_ms=60_000,
        )  # fmt: skip
        await producer.start()
        try:
            n = 0
            while not self._stop.is_set():
                sent = time.monotonic()
                try:
                    await (await producer.send(TOPIC, b"probe-%d" % n, partition=0))
                except Exception:
                    self.errors += 1
                    await asyncio.sleep(0.01)
                    continue
                with self._lock:
                    if len(self.acks) < MAX_ACKS_KEPT:
                        self.acks.append((sent, time.monotonic()))
                n += 1
        finally:
            await producer.close()

    def longest_gap(self, start: float, end: float) -> float:
        """The longest time without an acknowledgement between `start` and `end` (ack times)."""
        with self._lock:
            times = [start] + [a for _, a in self.acks if start < a <= end] + [end]
        return max(b - a for a, b in itertools.pairwise(times))

    def first_ack_after(self, t: float) -> float | None:
        """When the first record sent at or after `t` was acknowledged (None: not yet).
        Sends are sequential, so `acks` is sorted by send time."""
        with self._lock:
            i = bisect.bisect_left(self.acks, t, key=lambda pair: pair[0])
            return self.acks[i][1] if i < len(self.acks) else None


def _leader_and_isr(cluster: LocalCluster) -> tuple[int, list[int]]:
    alive = [b for b, state in cluster.broker_states().items() if state == "alive"]
    bootstrap = ",".join(f"127.0.0.1:{cluster.broker(b).port}" for b in alive)
    try:
        with Admin(bootstrap, request_timeout_ms=2000) as admin:
            (desc,) = admin.describe_topics([TOPIC])
    except Exception:
        return -1, []
    if desc.error_code or not desc.partitions:
        return -1, []
    return desc.partitions[0].leader, list(desc.partitions[0].isr)


def _wait_steady(cluster: LocalCluster, prober: Prober, timeout_s: float = 60.0) -> int:
    """Wait until all three replicas are in the ISR and acks flow; returns the leader."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        leader, isr = _leader_and_isr(cluster)
        if leader >= 0 and len(isr) == 3 and _acks_flow(prober):
            return leader
        time.sleep(0.1)
    raise RuntimeError("the partition did not get back to three in-sync replicas in time")


def _acks_flow(prober: Prober) -> bool:
    t = time.monotonic()
    deadline = t + 5.0
    while time.monotonic() < deadline:
        if prober.first_ack_after(t) is not None:
            return True
        time.sleep(0.01)
    return False


def measure_failovers(
    cluster: LocalCluster, prober: Prober, sig: str, cycles: int, max_wait_s: float
) -> dict[str, Any]:
    samples: list[float] = []
    gaps: list[float] = []
    missed = 0
    for i in range(cycles):
        leader = _wait_steady(cluster, prober)
        t0 = time.monotonic()
        cluster.kill(leader, sig)  # returns once the process is gone
        acked = _wait_ack(prober, t0, max_wait_s)
        took = (acked - t0) if acked is not None else max_wait_s
        # also: the longest stretch without any ack from the signal until service resumed
        # after the process had exited (a dying leader that stops answering shows up here)
        resumed = _wait_ack(prober, time.monotonic(), max_wait_s)
        gap = prober.longest_gap(t0, resumed) if resumed is not None else max_wait_s
        missed += acked is None
        samples.append(took)
        gaps.append(gap)
        print(f"SIG{sig} cycle {i + 1}/{cycles}: leader {leader}, first ack {took * 1000:.0f} ms,"
              f" longest gap {gap * 1000:.0f} ms", file=sys.stderr)  # fmt: skip
        cluster.start(leader)
    return {
        "signal": sig, "cycles": cycles, "no_ack_within_max_wait": missed,
        **_summary("", samples), **_summary("gap_", gaps),
    }  # fmt: skip


def _wait_ack(prober: Prober, t: float, max_wait_s: float) -> float | None:
    acked = None
    while acked is None and time.monotonic() - t < max_wait_s:
        acked = prober.first_ack_after(t)
        time.sleep(0.005)
    return acked


def _summary(prefix: str, samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    return {
        f"{prefix}p50_ms": round(1000 * (percentile(ordered, 50) or 0), 1),
        f"{prefix}max_ms": round(1000 * ordered[-1], 1),
        f"{prefix}samples_ms": [round(1000 * s, 1) for s in samples],
    }


def produce_throughput(cluster: LocalCluster, records: int, repeat: int) -> list[dict[str, Any]]:
    results = []
    for rf, acks in ((1, "1"), (3, "all")):
        best: dict[str, Any] | None = None
        for i in range(repeat):
            topic = f"tput-rf{rf}-{i}"
            with Admin(cluster.bootstrap) as admin:
                admin.create_topics([NewTopic(topic, 3, rf)])
            time.sleep(1.0)  # followers start fetching
            cmd = [sys.executable, "-m", "deploy.cli", "bench", "produce", "--topic", topic,
                   "--num-records", str(records), "--record-size", "100", "--acks", acks,
                   "--bootstrap", cluster.bootstrap]  # fmt: skip
            out = subprocess.run(cmd, cwd=TREE, capture_output=True, text=True, timeout=900)
            if out.returncode != 0:
                row: dict[str, Any] = {"error": out.stderr.strip()[-500:]}
            else:
                row = json.loads(out.stdout.strip().splitlines()[-1])
            row.update(replication_factor=rf, acks=acks, partitions=3)
            print(json.dumps(row), file=sys.stderr)
            if best is None or row.get("msgs_per_s", 0) > best.get("msgs_per_s", 0):
                best = row
        assert best is not None
        results.append(best)
    return results


def table(sides: dict[str, dict[str, Any]]) -> str:
    targets = {"KILL": 500.0, "TERM": 500.0}
    lines = ["| failover | side | cycles | p50 | max | target (p50) | longest ack gap p50 / max |",
             "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for name, side in sides.items():
        if "error" in side:
            lines.append(f"| - | {name} | failed: {side['error'][-120:]} | | | | |")
        for f in side.get("failovers", []):
            target = targets[f["signal"]]
            verdict = "met" if f["p50_ms"] <= target else "**missed**"
            gap = f"{f['gap_p50_ms']:,.0f} / {f['gap_max_ms']:,.0f} ms"
            lines.append(f"| SIG{f['signal']} of the leader | {name} | {f['cycles']} | "
                         f"{f['p50_ms']:,.0f} ms | {f['max_ms']:,.0f} ms | <= {target:,.0f} ms: "
                         f"{verdict} | {gap} |")  # fmt: skip
    tput = [r for side in sides.values() for r in side.get("throughput", [])]
    if not tput:
        return "\n".join(lines)
    lines += ["", "| produce, 100 B, 3 partitions (working tree) | records/s | MiB/s | target |",
              "| --- | --- | --- | --- |"]  # fmt: skip
    for r in tput:
        case = f"RF {r['replication_factor']}, acks={r['acks']}"
        if "error" in r:
            lines.append(f"| {case} | failed: {r['error'][:80]} | | |")
            continue
        goal = ""
        if r["replication_factor"] == 3:
            ok = r["msgs_per_s"] >= 100_000
            goal = ">= 100,000: " + ("met" if ok else "**missed**")
        lines.append(f"| {case} | {r['msgs_per_s']:,.0f} | {r.get('MiB_per_s', '')} | {goal} |")
    return "\n".join(lines)


def run_side(args: argparse.Namespace) -> dict[str, Any]:
    """The measurement on this process's tree: failovers, then throughput (--records > 0)."""
    tmp = Path(tempfile.mkdtemp(prefix="odradek-failover-"))
    cluster = LocalCluster(
        tmp / "cluster", brokers=3, session_timeout_ms=args.session_ms,
        progress=lambda s: print(s, file=sys.stderr),
    )  # fmt: skip
    load_before = os.getloadavg()
    tput: list[dict[str, Any]] = []
    try:
        cluster.up()
        with Admin(cluster.bootstrap) as admin:
            admin.create_topics([NewTopic(TOPIC, 1, 3, {"min.insync.replicas": "2"})])
        prober = Prober(cluster.bootstrap)
        prober.start()
        try:
            failovers = [
                measure_failovers(cluster, prober, sig, args.cycles, args.max_wait_s)
                for sig in args.signals.split(",")
            ]
        finally:
            prober.stop()
        if args.records > 0:
            tput = produce_throughput(cluster, args.records, args.repeat)
    finally:
        cluster.down(purge=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return {"session_timeout_ms": args.session_ms, "failovers": failovers, "throughput": tput,
            "prober_errors": prober.errors,
            "load_average_before_after": [load_before, os.getloadavg()]}  # fmt: skip


def _run_in(tree: Path, args: argparse.Namespace, records: int) -> dict[str, Any]:
    cmd = [sys.executable, str(ROOT / "bench" / "bench_failover.py"), "--side-run",
           "--tree", str(tree), "--cycles", str(args.cycles), "--signals", args.signals,
           "--max-wait-s", str(args.max_wait_s), "--records", str(records),
           "--repeat", str(args.repeat), "--session-ms", str(args.session_ms)]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        return {"error": f"exit status {out.returncode} (its log is above)"}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cycles", type=int, default=20, help="failovers per signal")
    ap.add_argument("--max-wait-s", type=float, default=30.0)
    ap.add_argument("--records", type=int, default=1_000_000, help="per throughput run (0: none)")
    ap.add_argument("--repeat", type=int, default=2, help="throughput runs per case")
    ap.add_argument("--signals", default="KILL,TERM")
    ap.add_argument("--session-ms", type=int, default=SESSION_TIMEOUT_MS)
    ap.add_argument("--ref", default=DEFAULT_REF, help="the baseline git ref ('' to skip it)")
    ap.add_argument("--side-run", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=str(ROOT), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side_run:
        print(json.dumps(run_side(args)))
        return 0
    from bench.bench_baseline import worktree

    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    sides: dict[str, dict[str, Any]] = {}
    if args.ref:
        with worktree(args.ref) as (src, commit):
            sides[f"baseline {commit}"] = _run_in(src, args, 0)
    sides["working tree"] = _run_in(ROOT, args, args.records)
    out = ROOT / "bench" / "results" / time.strftime("failover-%Y%m%d-%H%M%S.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"started": started, "sides": sides}
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(table(sides))
    print(f"\nraw results: {out.relative_to(ROOT)}", file=sys.stderr)
    failed = any("error" in side for side in sides.values())
    return (
        1 if failed or any("error" in r for r in sides["working tree"].get("throughput", [])) else 0
    )


if __name__ == "__main__":
    sys.exit(main())
