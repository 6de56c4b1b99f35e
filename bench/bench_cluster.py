#!/usr/bin/env python3
"""`make bench`: the native client, Kafka clients, the previous commit and the peers, in one run.

Parts (`--only native,kafka,txn,registry,acls,security,baseline,user,tail,doors,queue,peers`,
all by default), in this order:

native    a local cluster (ZooKeeper + 3 brokers, RF 1) in a temporary directory; for each case
          `odradek bench produce|consume|latency` in a separate process: 100 B and 1 KiB
          records, acks=1, the bulk API and per-record send(), one and eight partitions; then
          end-to-end latency at --rate records/s, with the brokers' event-loop lag over it.
kafka     on the same cluster, through its Kafka listener: confluent-kafka and kafka-python
          produce (the plain per-record loop) and consume (from earliest, by assignment),
          1 partition, RF 1, acks=1, 100 B and 1 KiB (bench/bench_kafka_clients.py).
txn       on the same cluster, confluent-kafka: transactional produce at 100 B with a commit
          every 100 ms and every 1,000 ms beside idempotent produce, read_committed consume
          beside read_uncommitted, commit latency p50/p99 (bench/bench_txn.py).
registry  on the same cluster, the schema registry: registrations per second through a broker
          that forwards to the writer and through the writer, and lookups of schemas by id
          per second, uncached (the broker answers) and cached in confluent-kafka's client
          (bench/bench_registry.py).
acls      two one-broker clusters, one without an authorizer and one with 10,000 ACLs loaded:
          native produce (bulk and send()) as a ratio, acls / plain (bench/bench_acls.py).
security  one broker with PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512) Kafka listeners:
          confluent-kafka produce and consume over TLS as a ratio of plaintext, and
          confluent-kafka logins per second (bench/bench_security.py); the native client's
          SCRAM logins per second (bench/bench_scram.py).
baseline  the native bulk, send() and consume cases at 100 B against a cluster run from a git
          worktree of --baseline REF (default: the last commit before the Kafka listener) and
          against one run from this tree, alternating (bench/bench_baseline.py).
user      the paths users take, through the public clients only, against a worktree of
          --baseline (default here: ad616d3, the main of the start of the latency work) and this
          tree, alternating: sync send()+flush, async send+gather, a poll() loop, and end-to-end
          latency at --rate through Producer(linger_ms=0) and a Consumer in another process,
          RF 1 acks 1 and RF 3 acks=all, with the brokers' event-loop lag p99 and max over
          each run, read from their metrics (bench/bench_user.py); NATS JetStream and Redis
          Streams latency from the peers' harness (ONLY=latency) when `peers` is not run.
tail      the user part's end-to-end latency (this tree, RF 1 and RF 3, 5,000 records at --rate)
          plain and then beside each of a transactional producer, a compacted topic being
          cleaned, TLS, two CPU-bound processes (with NATS JetStream's latency in the same
          loaded state) and 10,000 ACLs, each in turn: one table with each case's p99 over
          plain's (bench/bench_tail.py, `make bench-tail`).
doors     one broker, our client's Produce and Fetch requests with the same record batches
          through the native door and through the Kafka door (kio's codec on the client's
          transport), alternating: bulk, poll, Spark's read, produce round trip, end-to-end
          latency, and the codec's CPU per request (bench/bench_doors.py, `make bench-doors`).
queue     a work queue: a share group on a one-broker cluster (confluent-kafka 2.16's
          ShareConsumer, .venv-share) beside Redis Streams (XREADGROUP + XACK) and NATS JetStream
          (a pull consumer, ack per message): 4 members consume and acknowledge every record of 1
          partition; the acknowledgement's round trip p50/p99; a member SIGKILLed holding records
          and their redelivery beside the lock duration (bench/bench_queue.py).
peers     the peers' own harness (../shared/peers/run_peers.sh): Redis Streams (AOF everysec
          and always) and NATS JetStream with the same record sizes. Skipped, with one line
          saying why, when ../shared/peers/setup.sh has not installed them or they fail.

Prints Markdown tables and writes them, with every raw measurement, to --json (default
bench/results/cluster-<time>.json).
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
sys.path.insert(0, str(ROOT / "bench"))

import bench_acls  # noqa: E402
import bench_baseline  # noqa: E402
import bench_doors  # noqa: E402
import bench_kafka_clients  # noqa: E402
import bench_queue  # noqa: E402
import bench_registry  # noqa: E402
import bench_scram  # noqa: E402
import bench_security  # noqa: E402
import bench_tail  # noqa: E402
import bench_txn  # noqa: E402
import bench_user  # noqa: E402
from bench_report import render, summarize  # noqa: E402

PARTS = ("native", "kafka", "txn", "registry", "acls", "security", "baseline", "user", "tail",
         "doors", "queue", "peers")  # fmt: skip
USER_DEFAULT_REF = "ad616d3"  # main at the start of the latency work (issue 12)


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def log_row(row: dict) -> None:
    log(json.dumps(row))


def odradek_bench(bootstrap: str, *args: str) -> dict:
    cmd = [sys.executable, "-m", "deploy.cli", "bench", *args, "--bootstrap", bootstrap]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        return {"system": "odradek", "error": out.stderr.strip()[-500:], "args": list(args)}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def native_cases(
    bootstrap: str, n: int, repeat: int, lat_n: int, lat_rate: int,
    lag_of: list[tuple[int, str, int]] | None = None,
) -> list[dict]:  # fmt: skip
    """Every native case; `lag_of` (broker id, host, metrics port): the brokers whose event-loop
    lag is read around each latency run (bench_user.loop_lag_fields)."""
    from client import Admin, NewTopic

    results: list[dict] = []
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
                    log_row(r)
                    if api == "bulk":
                        c = odradek_bench(bootstrap, "consume", "--topic", topic,
                                          "--num-records", str(count))  # fmt: skip
                        c.update(partitions=parts)
                        results.append(c)
                        log_row(c)
        before = bench_user.loop_lag_readings(lag_of or [])
        lat = odradek_bench(
            bootstrap, "latency", "--topic", f"lat-{size}", "--num-records", str(lat_n),
            "--rate", str(lat_rate), "--record-size", str(size),
        )  # fmt: skip
        lat.update(bench_user.loop_lag_fields(before, bench_user.loop_lag_readings(lag_of or [])))
        results.append(lat)
        log_row(lat)
    return results


def run_cluster(args: argparse.Namespace, parts: set[str], txn: dict, registry: dict) -> list[dict]:
    """The native, Kafka-client, transaction and registry cases, on one local cluster of this
    tree's code (the transaction and registry figures go into `txn` and `registry`: their own
    tables)."""
    from deploy.cluster import LocalCluster

    results: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-"))
    cluster = LocalCluster(tmp / "cluster", brokers=3, progress=log)
    try:
        bootstrap = cluster.up()
        if "native" in parts:
            lag_of = bench_user.loop_lag_brokers(tmp / "cluster")
            results += native_cases(bootstrap, args.messages, args.repeat,
                                    args.latency_messages, args.rate, lag_of)  # fmt: skip
        if "kafka" in parts:
            counts = {"confluent": args.confluent_messages,
                      "kafka-python": args.kafka_python_messages}  # fmt: skip
            results += bench_kafka_clients.run_cases(
                bootstrap, cluster.kafka_bootstrap, counts, args.kafka_repeat, report=log_row
            )
        if "txn" in parts:
            txn.update(bench_txn.run(cluster.kafka_bootstrap, args.txn_messages))
        if "registry" in parts:
            registry.update(bench_registry.run_on(cluster, args.registry_seconds, log_row))
    finally:
        cluster.down(purge=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def run_peers(
    n: int, repeat: int, lat_n: int, lat_rate: int, notes: list[str], only: str = "all"
) -> list[dict]:
    if not (PEERS / "run_peers.sh").exists() or not shutil.which("redis-server"):
        notes.append("peers: not installed (run ../shared/peers/setup.sh); skipped")
        return []
    env = dict(os.environ, LAT_N=str(lat_n), LAT_RATE=str(lat_rate), PY="python3", ONLY=only)
    out = subprocess.run(["bash", str(PEERS / "run_peers.sh"), str(n), str(repeat)],
                         capture_output=True, text=True, env=env, timeout=3600)  # fmt: skip
    rows = []
    for line in out.stdout.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    if out.returncode != 0 or not rows:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1][:200]
        notes.append(f"peers: run_peers.sh exited {out.returncode} with {len(rows)} rows: {tail}")
    return rows


def parse_only(text: str) -> set[str]:
    parts = {p.strip() for p in text.split(",") if p.strip()}
    unknown = parts - set(PARTS)
    if unknown or not parts:
        raise argparse.ArgumentTypeError(f"--only takes a comma list of {', '.join(PARTS)}")
    return parts


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--only",
        type=parse_only,
        default=set(PARTS),
        help=f"comma list of parts to run: {','.join(PARTS)} (default: all)",
    )
    ap.add_argument(
        "--messages",
        type=int,
        default=1_000_000,
        help="native bulk and consume runs (send() runs: a quarter)",
    )
    ap.add_argument("--peer-messages", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=2, help="native and peer runs per case (best)")
    ap.add_argument("--latency-messages", type=int, default=10_000)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument(
        "--confluent-messages",
        type=int,
        default=4_000_000,  # about 3 s at the ~1.4M records/s measured here
        help="confluent-kafka records at 100 B (1 KiB: a quarter)",
    )
    ap.add_argument(
        "--kafka-python-messages",
        type=int,
        default=300_000,
        help="kafka-python records at 100 B (1 KiB: a quarter)",
    )
    ap.add_argument("--kafka-repeat", type=int, default=1, help="runs per Kafka-client case")
    ap.add_argument(
        "--txn-messages", type=int, default=1_000_000, help="records per transaction case (100 B)"
    )
    ap.add_argument("--registry-seconds", type=float, default=5.0,
                    help="registry part: seconds per case")  # fmt: skip
    ap.add_argument("--acl-messages", type=int, default=1_000_000, help="records per ACL case")
    ap.add_argument(
        "--baseline",
        metavar="REF",
        help=f"git ref of the code to compare with (default: {bench_baseline.DEFAULT_REF} for "
        f"the baseline part, {USER_DEFAULT_REF} for the user part)",
    )
    ap.add_argument(
        "--baseline-messages",
        type=int,
        default=1_000_000,
        help="baseline bulk and consume runs (send(): a quarter)",
    )
    ap.add_argument("--baseline-rounds", type=int, default=3, help="alternating rounds")
    ap.add_argument(
        "--user-messages", type=int, default=200_000, help="user part: records per produce run"
    )
    ap.add_argument("--user-rounds", type=int, default=2, help="user part: alternating rounds")
    ap.add_argument("--doors-rounds", type=int, default=3, help="doors part: alternating rounds")
    ap.add_argument("--no-peers", action="store_true", help="same as leaving peers out of --only")
    ap.add_argument("--json", type=Path, help="where to write the results")
    return ap


def main() -> int:
    args = build_parser().parse_args()
    parts = args.only - ({"peers"} if args.no_peers else set())
    started, load_before = time.time(), os.getloadavg()
    rows: list[dict] = []
    notes: list[str] = []
    phases: dict[str, float] = {}
    txn: dict = {}
    registry: dict = {}
    if parts & {"native", "kafka", "txn", "registry"}:
        t = time.monotonic()
        rows += run_cluster(args, parts, txn, registry)
        phases["native+kafka+txn+registry"] = round(time.monotonic() - t, 1)
    acls: dict = {}
    if "acls" in parts:
        t = time.monotonic()
        acls = bench_acls.run(args.acl_messages, 3, 10_000, report=log_row)
        phases["acls"] = round(time.monotonic() - t, 1)
    security: dict = {}
    if "security" in parts:
        t = time.monotonic()
        security = bench_security.run(100_000, 3, 10.0, report=log_row)
        security["native_scram"] = bench_scram.run(5.0, [1, 8])
        phases["security"] = round(time.monotonic() - t, 1)
    if "baseline" in parts:
        t = time.monotonic()
        try:
            rows += bench_baseline.run_baseline(
                args.baseline or bench_baseline.DEFAULT_REF,
                args.baseline_messages,
                args.baseline_rounds,
                report=log_row,
            )
        except bench_baseline.BaselineError as exc:
            notes.append(f"baseline: {exc}; skipped")
        phases["baseline"] = round(time.monotonic() - t, 1)
    if "user" in parts:
        t = time.monotonic()
        try:
            rows += bench_user.run_user(
                args.baseline or USER_DEFAULT_REF, args.user_messages, args.latency_messages,
                args.rate, args.user_rounds, report=log_row,
            )  # fmt: skip
        except bench_baseline.BaselineError as exc:
            notes.append(f"user: {exc}; skipped")
        if "peers" not in parts:  # the peers' latency beside ours, in the same run
            rows += run_peers(args.peer_messages, 1, args.latency_messages, args.rate, notes,
                              only="latency")  # fmt: skip
        phases["user"] = round(time.monotonic() - t, 1)
    tail: dict = {}
    if "tail" in parts:
        t = time.monotonic()
        tail = bench_tail.run(bench_tail.build_parser().parse_args(["--rate", str(args.rate)]))
        phases["tail"] = round(time.monotonic() - t, 1)
    doors: list[dict] = []
    if "doors" in parts:
        t = time.monotonic()
        doors = bench_doors.run(
            bench_doors.build_parser().parse_args(["--rounds", str(args.doors_rounds)]),
            report=log_row,
        )
        phases["doors"] = round(time.monotonic() - t, 1)
    queue: dict = {}
    if "queue" in parts:
        t = time.monotonic()
        queue = bench_queue.run(bench_queue.build_parser().parse_args([]))
        phases["queue"] = round(time.monotonic() - t, 1)
    if "peers" in parts:
        t = time.monotonic()
        rows += run_peers(args.peer_messages, args.repeat, args.latency_messages, args.rate,
                          notes)  # fmt: skip
        phases["peers"] = round(time.monotonic() - t, 1)
    summary = summarize(rows, args.baseline or bench_baseline.DEFAULT_REF)
    text = render(summary)
    out = args.json or ROOT / "bench" / "results" / time.strftime("cluster-%Y%m%d-%H%M%S.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 1),
        "phases_s": phases,
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "args": {k: sorted(v) if isinstance(v, set) else str(v) if isinstance(v, Path) else v
                 for k, v in vars(args).items()},
        "notes": notes,
        "summary": summary,
        "table": text,
        "txn": txn,
        "registry": registry,
        "acls": acls,
        "security": security,
        "tail": tail,
        "doors": doors,
        "queue": queue,
        "results": rows,
    }  # fmt: skip
    out.write_text(json.dumps(doc, indent=1) + "\n")
    if text:
        print(text)
    if txn:
        print("\n" + bench_txn.render(txn))
    if registry:
        print("\n" + bench_registry.render(registry))
    if acls:
        print("\n" + bench_acls.render(acls))
    if security:
        print("\n" + bench_security.render(security))
        print("\n" + bench_scram.render(security["native_scram"], [1, 8]))
    if tail:
        print("\n" + tail["table"])
    if doors:
        print("\n" + bench_doors.render(doors))
    if queue:
        print("\n" + bench_queue.table(queue))
    for note in notes:
        print(f"\n{note}")
    log(f"\nphases (s): {phases}; load average before {load_before}, after {os.getloadavg()}")
    log(f"results: {out}")
    every = rows + txn.get("rows", []) + acls.get("rows", []) + tail.get("rows", []) + doors
    errors = [r for r in every if "error" in r and "peer" not in r]
    for e in errors:
        log(f"run failed: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
