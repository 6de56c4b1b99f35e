#!/usr/bin/env python3
"""`make bench`: odradek beside Redis Streams and NATS JetStream, measured in the same run.

1. Starts a local odradek cluster (ZooKeeper + 3 brokers) in a temporary directory and creates
   topics with 1 and 8 partitions (RF 1).
2. Runs `odradek bench produce|consume|latency` in a separate process for each case: 100 B and
   1 KiB records, acks=1, the bulk API and per-record send(), one and eight partitions; then the
   end-to-end latency at 1,000 records/s.
3. Runs the peers' own harness (../shared/peers/run_peers.sh) for Redis Streams (AOF everysec
   and always) and NATS JetStream with the same record sizes.
4. Writes every JSON line to bench/results/cluster-<time>.jsonl and prints a Markdown table.

Peers are skipped (and the table says so) when ../shared/peers/setup.sh has not installed them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT.parent / "shared" / "peers"
sys.path.insert(0, str(ROOT))


def odradek_bench(bootstrap: str, *args: str) -> dict:
    cmd = [sys.executable, "-m", "deploy.cli", "bench", *args, "--bootstrap", bootstrap]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        return {"system": "odradek", "error": out.stderr.strip()[-500:], "args": list(args)}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_odradek(n: int, repeat: int, lat_n: int, lat_rate: int) -> list[dict]:
    from client import Admin, NewTopic
    from deploy.cluster import LocalCluster

    results: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-"))
    cluster = LocalCluster(tmp / "cluster", brokers=3, progress=lambda s: print(s, file=sys.stderr))
    try:
        bootstrap = cluster.up()
        with Admin(bootstrap) as admin:
            admin.create_topics([NewTopic(f"lat-{s}", 1, 1) for s in (100, 1024)])
        for size in (100, 1024):
            for parts in (1, 8):
                for api in ("bulk", "send"):
                    count = n if api == "bulk" else max(n // 4, 1000)
                    for i in range(repeat):
                        topic = f"p{parts}-s{size}-{api}-{i}"
                        with Admin(bootstrap) as admin:
                            admin.create_topics([NewTopic(topic, parts, 1)])
                        args = ["produce", "--topic", topic, "--num-records", str(count),
                                "--record-size", str(size)]  # fmt: skip
                        if api == "send":
                            args.append("--per-record")
                        r = odradek_bench(bootstrap, *args)
                        r.update(partitions=parts, acks="1")
                        results.append(r)
                        print(json.dumps(r), file=sys.stderr)
                        if api == "bulk":
                            c = odradek_bench(bootstrap, "consume", "--topic", topic,
                                              "--num-records", str(count))  # fmt: skip
                            c.update(partitions=parts)
                            results.append(c)
                            print(json.dumps(c), file=sys.stderr)
            lat = odradek_bench(
                bootstrap, "latency", "--topic", f"lat-{size}", "--num-records", str(lat_n),
                "--rate", str(lat_rate), "--record-size", str(size),
            )  # fmt: skip
            results.append(lat)
            print(json.dumps(lat), file=sys.stderr)
    finally:
        cluster.down(purge=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def run_peers(n: int, repeat: int, lat_n: int, lat_rate: int) -> list[dict]:
    if not (PEERS / "run_peers.sh").exists() or not shutil.which("redis-server"):
        print("peers not installed (../shared/peers/setup.sh); skipping them", file=sys.stderr)
        return []
    env = dict(os.environ, LAT_N=str(lat_n), LAT_RATE=str(lat_rate), PY="python3")
    out = subprocess.run(["bash", str(PEERS / "run_peers.sh"), str(n), str(repeat)],
                         capture_output=True, text=True, env=env, timeout=3600)  # fmt: skip
    rows = []
    for line in out.stdout.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def best(rows: list[dict], **match: object) -> dict | None:
    cands = [r for r in rows if all(r.get(k) == v for k, v in match.items()) and "error" not in r]
    return max(cands, key=lambda r: r.get("msgs_per_s", 0), default=None)


def _peer_key(r: dict) -> tuple:
    fields = ("peer", "mode", "client", "appendfsync", "size", "consumer", "window")
    return tuple(r.get(f) for f in fields)


def table(ours: list[dict], peers: list[dict]) -> str:
    lines = ["| system | case | size | partitions | records/s | MiB/s |",
             "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for size in (100, 1024):
        for parts in (1, 8):
            for mode, api in (("produce", "bulk"), ("produce", "send"), ("consume", "poll")):
                r = best(ours, mode=mode, api=api, size=size, partitions=parts)
                if r:
                    lines.append(f"| odradek | {mode} ({api}) | {size} | {parts} | "
                                 f"{r['msgs_per_s']:,.0f} | {r['MiB_per_s']} |")  # fmt: skip
    seen = set()
    for r in peers:
        if "msgs_per_s" not in r:
            continue
        key = _peer_key(r)
        if key in seen:
            continue
        seen.add(key)
        group = [x for x in peers if _peer_key(x) == key]
        top = max(group, key=lambda x: x["msgs_per_s"])
        parts = [top.get(f) for f in ("mode", "client", "appendfsync", "consumer", "window")]
        label = " ".join(str(v) for v in parts if v is not None)
        lines.append(f"| {top.get('peer')} | {label} | {top.get('size')} | 1 | "
                     f"{top['msgs_per_s']:,.0f} | {top.get('MiB_per_s', '')} |")  # fmt: skip
    lines += ["", "| system | latency case | size | e2e p50 ms | e2e p99 ms | max ms |",
              "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in [*ours, *peers]:
        if r.get("mode") == "latency" and "error" not in r:
            who = r.get("system") or r.get("peer")
            lines.append(f"| {who} | {r.get('rate')}/s {r.get('appendfsync', '')} | "
                         f"{r.get('size')} | {r.get('e2e_ms_p50')} | {r.get('e2e_ms_p99')} | "
                         f"{r.get('e2e_ms_max')} |")  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--peer-messages", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--latency-messages", type=int, default=10_000)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args()
    ours = run_odradek(args.messages, args.repeat, args.latency_messages, args.rate)
    peers = [] if args.no_peers else run_peers(args.peer_messages, args.repeat,
                                                 args.latency_messages, args.rate)  # fmt: skip
    out = ROOT / "bench" / "results" / time.strftime("cluster-%Y%m%d-%H%M%S.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in [*ours, *peers]))
    print(table(ours, peers))
    print(f"\nraw results: {out.relative_to(ROOT)}", file=sys.stderr)
    errors = [r for r in ours if "error" in r]
    for e in errors:
        print(f"odradek run failed: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
