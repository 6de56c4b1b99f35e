#!/usr/bin/env python3
"""`make bench`'s work-queue part (issue 35): a share group beside Redis Streams and NATS
JetStream, in one run, each through its own Python client (bench/queue_member.py, one process
per member):

    odradek  a one-broker cluster of this tree, a 1-partition topic and a share group, members
             on confluent-kafka 2.16's ShareConsumer (.venv-share) acknowledging each record
             explicitly (ACCEPT), the acknowledgements carried by the next ShareFetch
    redis    redis-server (AOF everysec), a stream and its consumer group: XREADGROUP, XACK
    nats     nats-server -js (file storage): a durable pull consumer, fetch and msg.ack()

For each system and round: --messages records of --size bytes are loaded first, then --members
members take and acknowledge them all; the rate is records / (last record taken - first, across
the members); on odradek also the broker's CPU time (/proc utime + stime) over that phase
per record, the fair measure on a loaded machine. Then the acknowledgement's round trip, one
record at a time (--ack-samples): odradek acknowledge + commit_sync, Redis XACK, NATS ack_sync.
Then, on odradek only, a member that holds its records is SIGKILLed and another gets them
again: the time from the hold's acquisition to the redelivery, beside the acquisition lock
(--lock-ms).

    .venv/bin/python bench/bench_queue.py [--messages N] [--members M] [--rounds R] [--json F]

The peers run under ../shared/peers/servers.py and the system python3 (redis, nats-py, from
../shared/peers/setup.sh); they are skipped, with a line saying why, when absent.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# ../shared/peers beside the checkout, or two levels up for a worktree (/work/wt/<name>)
_PEER_DIRS = [ROOT.parent / "shared" / "peers", ROOT.parent.parent / "shared" / "peers"]
PEERS = next((p for p in _PEER_DIRS if (p / "servers.py").exists()), _PEER_DIRS[0])
MEMBER = ROOT / "bench" / "queue_member.py"
SHARE_PYTHON = ROOT / ".venv-share" / "bin" / "python"
PEER_PYTHON = "python3"
REDIS, NATS = "127.0.0.1:16379", "127.0.0.1:14222"
sys.path.insert(0, str(ROOT))


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def member(python: str, system: str, address: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([python, str(MEMBER), system, address, *args], text=True,
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)  # fmt: skip


def last_json(proc: subprocess.Popen[str], timeout: float = 600) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=timeout)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{proc.args} exited {proc.returncode}: {out[-500:]}")
    return lines[-1]


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


class System:
    def __init__(self, name: str, python: str, address: str) -> None:
        self.name, self.python, self.address = name, python, address

    def run(self, *args: str) -> subprocess.Popen[str]:
        return member(self.python, self.name, self.address, *args)

    def load(self, topic: str, count: int, size: int, groups: list[str]) -> None:
        last_json(self.run("--topic", topic, "--mode", "load", "--count", str(count),
                           "--size", str(size), "--group", ",".join(groups)))  # fmt: skip

    def work(self, topic: str, group: str, members: int, total: int) -> dict[str, Any]:
        """Members take and acknowledge until together they took `total`, then stop."""
        procs = [self.run("--topic", topic, "--group", group, "--name", f"m{i}")
                 for i in range(members)]  # fmt: skip
        taken = [0] * members
        finals: list[dict[str, Any]] = [{} for _ in procs]
        enough = threading.Event()

        def read(i: int, proc: subprocess.Popen[str]) -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                got = json.loads(line)
                if "n" in got:
                    taken[i] = got["n"]
                    if sum(taken) >= total:
                        enough.set()
                else:
                    finals[i] = got

        readers = [threading.Thread(target=read, args=(i, p)) for i, p in enumerate(procs)]
        for t in readers:
            t.start()
        if not enough.wait(600):
            log(f"{self.name}: only {sum(taken)} of {total} records taken in 600 s")
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p, t in zip(procs, readers, strict=True):
            p.wait(120)
            t.join()
        took = [t for t in finals if t.get("count")]
        span = max(t["last"] for t in took) - min(t["first"] for t in took)
        count = sum(t.get("count", 0) for t in finals)
        return {"count": count, "seconds": span, "rate": count / span if span else 0.0,
                "per_member": [t.get("count", 0) for t in finals],
                "redelivered": sum(t.get("redelivered", 0) for t in finals)}  # fmt: skip

    def ack_rtt(self, topic: str, group: str, samples: int) -> list[float]:
        got = last_json(self.run("--topic", topic, "--group", group, "--mode", "ack",
                                 "--samples", str(samples)))  # fmt: skip
        return [float(x) for x in got["rtt_s"]]


def redelivery(odradek: System, topic: str, group: str, lock_ms: int) -> dict[str, float]:
    """A member takes records and holds them; SIGKILLed, another member gets them again."""
    hold = odradek.run("--topic", topic, "--group", group, "--mode", "hold", "--name", "holder")
    assert hold.stdout is not None
    held = json.loads(hold.stdout.readline())
    watch = odradek.run("--topic", topic, "--group", group, "--mode", "watch", "--name",
                        "watcher")  # fmt: skip
    assert watch.stdout is not None
    time.sleep(0.5)  # the watcher joins meanwhile (the held records are locked either way)
    killed = time.time()
    os.kill(hold.pid, signal.SIGKILL)
    hold.wait()
    wanted, again = set(held["held"]), 0.0
    for line in watch.stdout:
        got = json.loads(line)
        if "offsets" in got and wanted & set(got["offsets"]):
            again = got["t"]
            break
    watch.send_signal(signal.SIGKILL)
    watch.wait()
    return {"held": len(wanted), "after_acquisition_s": again - held["t"],
            "after_kill_s": again - killed, "lock_s": lock_ms / 1000}  # fmt: skip


def peers_up(notes: list[str]) -> list[System]:
    if not (PEERS / "servers.py").exists() or not shutil.which("redis-server"):
        notes.append("peers: not installed (run ../shared/peers/setup.sh); skipped")
        return []
    up = []
    for name, args, address in (("redis", ["--fsync", "everysec"], REDIS), ("nats", [], NATS)):
        done = subprocess.run([PEER_PYTHON, str(PEERS / "servers.py"), "start", name, *args],
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode == 0:
            up.append(System(name, PEER_PYTHON, address))
        else:
            notes.append(f"peers: {name} did not start: {done.stderr.strip()[-200:]}")
    return up


def peers_down() -> None:
    subprocess.run([PEER_PYTHON, str(PEERS / "servers.py"), "stop", "all"], capture_output=True)


def cpu_seconds(pid: int) -> float | None:
    """A process's user + system CPU time (/proc/<pid>/stat), None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from deploy.cluster import LocalCluster

    if not SHARE_PYTHON.exists():
        raise SystemExit(f"{SHARE_PYTHON} is missing: `make setup` builds it")
    notes: list[str] = []
    results: dict[str, Any] = {"rounds": [], "notes": notes, "messages": args.messages,
                               "members": args.members, "size": args.size}  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-queue-"))
    settings: dict[str, int | bool | str] = {
        "group_share_record_lock_duration_ms": args.lock_ms,
        "group_share_heartbeat_interval_ms": 500,
        "group_share_session_timeout_ms": 6000,
        # past Kafka's bounds (15-60 s, 5 s, 45 s), which the settings above must be within
        "group_share_min_record_lock_duration_ms": min(args.lock_ms, 15_000),
        "group_share_max_record_lock_duration_ms": max(args.lock_ms, 60_000),
        "group_share_min_heartbeat_interval_ms": 100,
        "group_share_min_session_timeout_ms": 1000,
    }
    cluster = LocalCluster(tmp / "cluster", brokers=1, progress=log, broker_settings=settings)
    systems: list[System] = []
    try:
        cluster.up()
        systems = [System("odradek", str(SHARE_PYTHON), cluster.kafka_bootstrap)]
        broker_pid = cluster.status()[0].pid
        systems += peers_up(notes)
        for r in range(args.rounds):
            for s in systems:
                topic, groups = f"q{r}", [f"work{r}", f"ack{r}", f"hold{r}"]
                total = max(args.messages, args.ack_samples)
                s.load(topic, total, args.size, groups)
                row: dict[str, Any] = {"system": s.name, "round": r}
                cpu = cpu_seconds(broker_pid) if s.name == "odradek" else None
                row.update(s.work(topic, groups[0], args.members, total))
                if cpu is not None:  # the broker's CPU for the work: fair on a loaded machine
                    used = (cpu_seconds(broker_pid) or cpu) - cpu
                    row["broker_cpu_us_per_record"] = used / max(row["count"], 1) * 1e6
                rtts = s.ack_rtt(topic, groups[1], args.ack_samples)
                row["ack_p50_ms"] = statistics.median(rtts) * 1000
                row["ack_p99_ms"] = quantile(rtts, 0.99) * 1000
                if s.name == "odradek":
                    row["redelivery"] = redelivery(s, topic, groups[2], args.lock_ms)
                log(json.dumps(row))
                results["rounds"].append(row)
    finally:
        if len(systems) > 1:
            peers_down()
        cluster.down(purge=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def table(results: dict[str, Any]) -> str:
    lines = [f"work queue: {results['messages']} records of {results['size']} B, 1 partition, "
             f"{results['members']} members, consume + acknowledge each (median of rounds)",
             "", "| system | records/s | ack p50 ms | ack p99 ms |",
             "| --- | --- | --- | --- |"]  # fmt: skip
    by: dict[str, list[dict[str, Any]]] = {}
    for row in results["rounds"]:
        by.setdefault(row["system"], []).append(row)
    for name, rows in by.items():
        rate = statistics.median(r["rate"] for r in rows)
        p50 = statistics.median(r["ack_p50_ms"] for r in rows)
        p99 = statistics.median(r["ack_p99_ms"] for r in rows)
        lines.append(f"| {name} | {rate:,.0f} | {p50:.2f} | {p99:.2f} |")
    cpu = [r["broker_cpu_us_per_record"] for r in by.get("odradek", [])
           if "broker_cpu_us_per_record" in r]  # fmt: skip
    if cpu:
        lines.append(f"odradek broker CPU per record consumed + acknowledged: "
                     f"{statistics.median(cpu):.2f} us (median of rounds)")  # fmt: skip
    for row in results["rounds"]:
        if "redelivery" in row:
            d = row["redelivery"]
            lines.append(f"odradek round {row['round']}: {d['held']} held records redelivered "
                         f"{d['after_acquisition_s']:.2f} s after their acquisition "
                         f"({d['after_kill_s']:.2f} s after the kill), "
                         f"lock {d['lock_s']:.1f} s")  # fmt: skip
    lines += [f"note: {n}" for n in results["notes"]]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ack-samples", type=int, default=500)
    ap.add_argument("--lock-ms", type=int, default=5000)
    ap.add_argument("--json", type=Path)
    return ap


def main() -> int:
    args = build_parser().parse_args()
    results = run(args)
    print(table(results))
    out = args.json or ROOT / "bench" / "results" / f"queue-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
