#!/usr/bin/env python3
"""`make bench-tail` (and `make bench`'s part `tail`): the end-to-end latency of `make bench`'s
`user` part beside each of the tail's disturbances in turn (issue 34, "How to show it").

    python bench/bench_tail.py [--messages N] [--rate R] [--side-rate R] [--acls N]
                               [--loop-debug-ms N] [--json FILE]

The measurement is bench/bench_user.py's (`run_latency`): a `Consumer` polling in one process,
the public `Producer(linger_ms=0)` sending 100 B records at --rate in another, each record
carrying its send time; RF 1 acks=1 and RF 3 acks=all, with the brokers' event-loop lag p99 and
max over the producer's run (their metrics, read before and after). Every latency topic and
every disturbing topic is placed by replica assignment with broker 1 as its leader, so the
disturbance lands on the broker that leads the measured partition. The cases:

plain      this tree's 3-broker cluster, nothing else running. Measured first and again last
           (`plain again`): the distance between the two is the run's noise.
kafka producer  the control of `txn`: the same confluent-kafka loop on another topic (RF 3,
           Kafka door), --side-rate records/s of 100 B, idempotent, a flush() every 100 ms.
txn        beside the same loop made transactional: a commit every 100 ms.
writer     the control of `compacted`: the writer below on a topic of cleanup.policy delete.
compacted  beside a writer (the native Producer, acks 1) of --side-rate records/s over 100 keys
           on a compacted topic (RF 3, segment.bytes 64 KiB, min.cleanable.dirty.ratio 0.01;
           the brokers run with log_cleaner_backoff_ms 1000, Kafka's 15 s would leave a short
           run uncleaned), started 3 s before the measurement. That the cleaner ran is shown by
           its passes over that topic during the case (each broker's "cleaned <topic>-0"
           lines) and its `odradek_log_cleaner_max_clean_time_secs` metric after it.
tls        the latency clients over TLS: the native door's second listener, TLS (SSL, no client
           certificate; certificates from deploy/certs.py); replication stays on the plaintext
           native listener PLAIN.
loaded     two CPU-bound processes (`yes`, output to /dev/null, started and stopped by PID)
           running beside the measurement; NATS JetStream's latency (the peers' harness,
           ../shared/peers: servers.py and nats_js_bench.py --mode latency, the same n and rate)
           measured in the same loaded state, and once quiet after `plain` for reference
           (../shared/peers beside the checkout, or beside the directory of its worktree).
acls       a second 3-broker cluster with the authorizer on and --acls ACLs loaded
           (bench/bench_acls.py's `load_acls`: the producer is no super user, so every request
           goes through the lookup); its own plain is not measured: the ratio is to `plain`.

--loop-debug-ms N runs every broker in debug mode (`loop_debug_slow_ms = N`, broker/slow_steps.py;
it slows the brokers, so its latency figures are not the plain run's): each row gets the loop
steps whose own CPU passed N ms during it, by broker and step name (count, max CPU ms), and
the JSON every broker's loop CPU by step name from its shutdown summary. A second table lists
those steps per case, with the requests the slowest of each handled (debug mode names them).

Prints one Markdown table: case, p50, p99, p99.9, max, the worst broker's loop-lag p99 / max,
each case's p99 over plain's p99 at the same RF (for `loaded` also odradek's p99 over NATS's
in the same state), and a note (what ran beside it); writes every raw figure to --json
(default bench/results/tail-<time>.json) with the load average before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()
# the peers' harness: ../shared/peers beside the checkout (or beside its worktrees' directory)
PEERS = next((d for d in (ROOT.parent / "shared" / "peers", ROOT.parents[1] / "shared" / "peers")
              if d.is_dir()), ROOT.parent / "shared" / "peers")  # fmt: skip
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_user  # noqa: E402
import tail_table  # noqa: E402

LEADER = 1  # the broker that leads every topic of this benchmark
RF3_REPLICAS = (1, 2, 3)
SIDE_START_S = 3.0  # a disturbance runs this long before the measurement starts
COMPACT_KEYS = 100
COMPACT_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(64 * 1024),
                   "min.cleanable.dirty.ratio": "0.01"}  # fmt: skip
CLEANER_BACKOFF_MS = 1000
TXN_COMMIT_S = 0.1
CPU_HOGS = 2
# (case, side process, its door, its topic's configs): each disturbance after its control, the
# same client at the same rate without the thing measured
SIDE_CASES = (("kafka producer", "kafka", "kafka", None), ("txn", "txn", "kafka", None),
              ("writer", "writer", "native", None),
              ("compacted", "writer", "native", COMPACT_CONFIGS))  # fmt: skip


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Target:
    """What bench_user.run_latency needs of a side: this tree, a bootstrap."""

    name: str
    bootstrap: str
    dir: Path
    root: Path = ROOT
    options: dict[str, Any] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return dict(os.environ, PYTHONPATH=str(ROOT))


# ----- the disturbances, each a process of its own (`bench_tail.py side KIND ...`) -----------


class _Stop:
    """Set by SIGTERM: a side process finishes its step, prints its summary and exits."""

    def __init__(self) -> None:
        self.now = False
        signal.signal(signal.SIGTERM, self._set)

    def _set(self, _sig: int, _frame: Any) -> None:
        self.now = True


def side_txn(bootstrap: str, topic: str, rate: int, txn: bool = True) -> dict[str, Any]:
    """A transactional producer (confluent-kafka): `rate` records/s, a commit every 100 ms.
    Not `txn`: the control, the same loop idempotent, a flush() where the commit was."""
    from confluent_kafka import Producer

    stop = _Stop()
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": "none",
            "enable.idempotence": True}  # fmt: skip
    p = Producer({**conf, "transactional.id": f"tail-{os.getpid()}"} if txn else conf)
    if txn:
        p.init_transactions(30)
    else:
        p.list_topics(topic, timeout=30)
    print("ready", flush=True)
    value, commits, records = b"x" * bench_user.SIZE, [], 0
    start = time.perf_counter()
    while not stop.now:
        if txn:
            p.begin_transaction()
        until = time.perf_counter() + TXN_COMMIT_S
        while time.perf_counter() < until:
            due = int((time.perf_counter() - start) * rate)
            while records < due:
                p.produce(topic, value)
                records += 1
            p.poll(0)
            time.sleep(0.001)
        t = time.perf_counter()
        if txn:
            p.commit_transaction(30)
        else:
            p.flush(30)
        commits.append((time.perf_counter() - t) * 1000)
    commits.sort()
    return {"transactions" if txn else "flushes": len(commits), "records": records,
            "commit_ms_p50": bench_user.percentile(commits, 50),
            "commit_ms_p99": bench_user.percentile(commits, 99)}  # fmt: skip


def side_writer(bootstrap: str, topic: str, rate: int) -> dict[str, Any]:
    """A writer of `rate` records/s over COMPACT_KEYS keys (the native Producer, acks 1)."""
    from client import Producer

    stop = _Stop()
    keys = [f"key-{i:03d}".encode() for i in range(COMPACT_KEYS)]
    value, records = bytes(bench_user.SIZE), 0
    with Producer(bootstrap, acks=1) as producer:
        producer.send(topic, value, key=keys[0]).get(timeout=30)
        print("ready", flush=True)
        start = time.perf_counter()
        while not stop.now:
            due = int((time.perf_counter() - start) * rate)
            while records < due:
                producer.send(topic, value, key=keys[records % COMPACT_KEYS])
                records += 1
            time.sleep(0.002)
        producer.flush()
    return {"records": records}


@contextlib.contextmanager
def beside(kind: str, bootstrap: str, topic: str, rate: int) -> Iterator[dict[str, Any]]:
    """Run a side process for the `with` body (after SIDE_START_S); its summary lands in the
    yielded dict when it has stopped (SIGTERM to its PID)."""
    proc = subprocess.Popen([sys.executable, str(HERE), "side", kind, bootstrap, topic, str(rate)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    summary: dict[str, Any] = {}
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            proc.kill()
            raise RuntimeError(f"side {kind} did not start: {proc.communicate()[1][-300:]}")
        time.sleep(SIDE_START_S)
        yield summary
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        lines = out.strip().splitlines()
        summary.update(json.loads(lines[-1]) if lines and lines[-1].startswith("{")
                       else {"error": err.strip()[-300:]})  # fmt: skip


@contextlib.contextmanager
def cpu_hogs(count: int) -> Iterator[list[int]]:
    """`count` processes of `yes > /dev/null`, stopped by their PIDs at the end."""
    procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(count)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


# ----- measurements --------------------------------------------------------------------------


def make_topic(bootstrap: str, name: str, rf: int, configs: dict[str, str] | None = None) -> None:
    from client import Admin, NewTopic

    replicas = RF3_REPLICAS if rf == 3 else (LEADER,)
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(name, 1, rf, dict(configs or {}), (replicas,))])


def measure(target: Target, admin_bootstrap: str, case: str, n: int, rate: int) -> list[dict]:
    """One case: RF 1 acks=1 then RF 3 acks=all, each on a topic of its own."""
    rows = []
    lag_of = bench_user.loop_lag_brokers(target.dir)
    for rf, acks in bench_user.LATENCY_CASES:
        topic = f"bench-tail-{case.replace(' ', '-')}-rf{rf}"
        make_topic(admin_bootstrap, topic, rf)
        since = log_sizes(target.dir)
        row = bench_user.run_latency(target, topic, n, rate, acks, lag_of, target.options or None)
        row.update(system="odradek", case=case, rf=rf, acks=acks, messages=n, rate=rate,
                   load=os.getloadavg()[0])  # fmt: skip
        steps = slow_steps(target.dir, since)
        if any(steps.values()):
            row["slow_steps"] = steps
        log(json.dumps(row))
        rows.append(row)
    return rows


def nats_latency(n: int, rate: int, case: str, where: Path) -> dict[str, Any]:
    """NATS JetStream's latency through the peers' harness, on a server of our own."""
    from deploy.processes import free_port

    nats = {"system": "nats", "peer": "nats-jetstream", "case": case}  # a peer's error: a note
    if not (PEERS / "nats_js_bench.py").exists() or not shutil.which("nats-server"):
        return {**nats, "error": "peers not installed (../shared/peers/setup.sh)"}
    port, base = str(free_port()), str(where / "peers")
    servers = ["python3", str(PEERS / "servers.py")]
    started = subprocess.run([*servers, "start", "nats", "--port", port, "--base", base],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    try:
        if started.returncode != 0:
            return {**nats, "error": started.stderr.strip()[-300:]}
        out = subprocess.run(["python3", str(PEERS / "nats_js_bench.py"), "--mode", "latency",
                              "--messages", str(n), "--rate", str(rate), "--size",
                              str(bench_user.SIZE), "--port", port],
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    finally:
        subprocess.run([*servers, "stop", "nats", "--base", base], capture_output=True,
                       timeout=60)  # fmt: skip
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return {**nats, "error": out.stderr.strip()[-300:]}
    row = {**json.loads(lines[-1]), **nats, "load": os.getloadavg()[0]}
    log(json.dumps(row))
    return row


_CLEANED = re.compile(r"cleaned (\S+)-0 up to")
_CLEAN_TIME = re.compile(r"^odradek_log_cleaner_max_clean_time_secs (\S+)$", re.M)


def log_sizes(cluster_dir: Path) -> dict[Path, int]:
    return {p: p.stat().st_size for p in cluster_dir.glob("broker-*.log")}


_SLOW_STEP = re.compile(r"slow loop step: (\S+) ms, CPU (\S+) ms(?: \(GC (\S+) ms\))? in "
                        r"(.+?)(?: \(task [^)]*\))?(?: handling (.+))?$", re.M)  # fmt: skip
_SUMMARY = re.compile(r"odradek\.broker\.loop: (loop steps.*)$", re.M)


def _logs_since(since: dict[Path, int]) -> Iterator[tuple[str, str]]:
    for path, start in since.items():
        with open(path, "rb") as f:
            f.seek(start)
            yield path.stem, f.read().decode(errors="replace")


def slow_steps(cluster_dir: Path, since: dict[Path, int]) -> dict[str, dict[str, list[float]]]:
    """Debug mode's steps whose own CPU passed its threshold since `since`, per broker and step
    name: [count, max CPU ms, how many of them ran a garbage collection, the requests the step
    of the max CPU handled ('' for none)] (none when the brokers are not in debug mode)."""
    found: dict[str, dict[str, list[float]]] = {}
    for broker, text in _logs_since(since):
        steps = found[broker] = {}
        for m in _SLOW_STEP.finditer(text):
            count, max_cpu, with_gc, what = steps.get(m.group(4), [0, 0.0, 0, ""])
            cpu = float(m.group(2))
            steps[m.group(4)] = [count + 1, max(max_cpu, cpu), with_gc + (m.group(3) is not None),
                                 (m.group(5) or "") if cpu > max_cpu else what]  # fmt: skip
    return found


def loop_summaries(cluster_dir: Path) -> dict[str, list[str]]:
    """Each broker's loop CPU by step name, the lines debug mode logs at shutdown."""
    return {
        broker: _SUMMARY.findall(text)
        for broker, text in _logs_since(dict.fromkeys(cluster_dir.glob("broker-*.log"), 0))
    }


def slow_step_table(rows: list[dict]) -> str:
    """Debug mode's slow steps per case, all brokers and both RFs together, the largest first."""
    lines = ["| case | broker | step over the threshold by CPU | count | max CPU ms | with a GC "
             "| the max's requests |", "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for case in dict.fromkeys(r["case"] for r in rows if "slow_steps" in r):
        merged: dict[tuple[str, str], list[float]] = {}
        for row in rows:
            if row["case"] != case:
                continue
            for broker, steps in row.get("slow_steps", {}).items():
                for name, (count, max_cpu, with_gc, *what) in steps.items():
                    was = merged.get((broker, name), [0, 0.0, 0, ""])
                    top = (what or [""])[0] if max_cpu > was[1] else was[3]
                    merged[(broker, name)] = [was[0] + count, max(was[1], max_cpu),
                                              was[2] + with_gc, top]  # fmt: skip
        for (broker, name), (count, max_cpu, with_gc, what) in sorted(
            merged.items(), key=lambda i: -i[1][1]
        ):
            lines.append(f"| {case} | {broker} | {name} | {count} | {max_cpu} | {with_gc} "
                         f"| {what} |")  # fmt: skip
    return "\n".join(lines)


def cleaner_evidence(cluster_dir: Path, since: dict[Path, int], topic: str) -> dict[str, Any]:
    """The cleaner's passes over `topic` per broker since `since` (their logs' sizes then) and
    each broker's max-clean-time metric now."""
    import urllib.request

    passes = {}
    for path, start in since.items():
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        passes[path.stem] = sum(1 for m in _CLEANED.finditer(text) if m.group(1) == topic)
    clean_time = {}
    for broker, host, port in bench_user.loop_lag_brokers(cluster_dir):
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as answer:
                found = _CLEAN_TIME.search(answer.read().decode())
            clean_time[str(broker)] = float(found.group(1)) if found else None
        except OSError:
            clean_time[str(broker)] = None
    return {"cleaner_passes": passes, "max_clean_time_secs": clean_time}


# ----- the clusters ------------------------------------------------------------------------------


def main_cluster(where: Path, debug: dict[str, int]) -> tuple[Any, str]:
    """3 brokers with two native listeners, PLAIN (replication too) and TLS; the CA's path."""
    from deploy.certs import issue, make_ca
    from deploy.cluster import LocalCluster

    ca = make_ca(where / "certs", "ca")
    cert = issue(ca, where / "certs", "broker", common_name="broker")
    keystore = where / "broker.pem"
    keystore.write_bytes(cert.cert_path.read_bytes() + cert.key_path.read_bytes())
    cluster = LocalCluster(
        where / "main", brokers=3, progress=log,
        native_listeners={"PLAIN": "PLAINTEXT", "TLS": "SSL"},
        broker_settings={"inter_broker_listener_name": "PLAIN",
                         "ssl_keystore_location": str(keystore),
                         "ssl_truststore_location": str(ca.cert_path),
                         "log_cleaner_backoff_ms": CLEANER_BACKOFF_MS, **debug},
    )  # fmt: skip
    return cluster, str(ca.cert_path)


def run_main(args: argparse.Namespace, where: Path, rows: list[dict], sides: dict) -> None:
    debug = {"loop_debug_slow_ms": args.loop_debug_ms} if args.loop_debug_ms else {}
    cluster, ca = main_cluster(where, debug)
    try:
        boot = cluster.up()
        plain = Target("plain", boot, cluster.dir)
        rows += measure(plain, boot, "plain", args.messages, args.rate)
        rows.append(nats_latency(args.messages, args.rate, "quiet", where))
        for case, kind, door, configs in SIDE_CASES:
            topic = f"bench-tail-{case.replace(' ', '-')}-side"
            make_topic(boot, topic, 3, configs)
            since = log_sizes(cluster.dir)
            side_boot = cluster.kafka_bootstrap if door == "kafka" else boot
            try:
                with beside(kind, side_boot, topic, args.side_rate) as s:
                    rows += measure(plain, boot, case, args.messages, args.rate)
                    if configs:
                        s.update(cleaner_evidence(cluster.dir, since, topic))
                sides[case] = s
            except RuntimeError as exc:  # the side process did not start: a row, not the end
                rows.append({"system": "odradek", "case": case, "rf": 1, "acks": "1",
                             "error": str(exc)})  # fmt: skip
        tls_boot = f"127.0.0.1:{cluster.broker(LEADER).listener_ports['TLS']}"
        tls = Target("tls", tls_boot, cluster.dir, options={"security_protocol": "SSL",
                                                            "ssl_cafile": ca})  # fmt: skip
        rows += measure(tls, boot, "tls", args.messages, args.rate)
        with cpu_hogs(CPU_HOGS) as pids:
            rows += measure(plain, boot, "loaded", args.messages, args.rate)
            rows.append(nats_latency(args.messages, args.rate, "loaded", where))
        sides["loaded"] = {"cpu_hogs": pids}
        rows += measure(plain, boot, "plain again", args.messages, args.rate)
    finally:
        stop_cluster(cluster, args, sides, "main")


def stop_cluster(cluster: Any, args: argparse.Namespace, sides: dict, name: str) -> None:
    """Down; in debug mode the brokers' shutdown summaries kept first (in `sides`)."""
    cluster.down(purge=not args.loop_debug_ms)
    if args.loop_debug_ms:
        sides.setdefault("loop_cpu_by_step", {})[name] = loop_summaries(cluster.dir)
        shutil.rmtree(cluster.dir, ignore_errors=True)


def run_acls(args: argparse.Namespace, where: Path, rows: list[dict], sides: dict) -> None:
    import bench_acls

    from deploy.cluster import LocalCluster

    debug = {"loop_debug_slow_ms": args.loop_debug_ms} if args.loop_debug_ms else {}
    cluster = LocalCluster(where / "acls", brokers=3, progress=log,
                           broker_settings={**bench_acls.AUTHORIZER, **debug})  # fmt: skip
    try:
        boot = cluster.up()
        t = time.monotonic()
        loaded = bench_acls.load_acls(boot, args.acls)
        sides["acls"] = {"acls": loaded, "load_s": round(time.monotonic() - t, 1)}
        rows += measure(Target("acls", boot, cluster.dir), boot, "acls", args.messages, args.rate)
    finally:
        stop_cluster(cluster, args, sides, "acls")


def run(args: argparse.Namespace, report: Callable[[str], None] = log) -> dict[str, Any]:
    where = Path(tempfile.mkdtemp(prefix="odradek-bench-tail-"))
    rows: list[dict] = []
    sides: dict[str, Any] = {}
    load_before = os.getloadavg()
    try:
        run_main(args, where, rows, sides)
        run_acls(args, where, rows, sides)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    summary = tail_table.summarize(rows, sides)
    table = tail_table.render(summary)
    if args.loop_debug_ms:
        table += "\n\n" + slow_step_table(rows)
    return {"loadavg_before": load_before, "loadavg_after": os.getloadavg(),
            "sides": sides, "rows": rows, "table": table, "summary": summary}  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--messages", type=int, default=5000, help="records per latency run")
    ap.add_argument("--rate", type=int, default=1000, help="latency records/s")
    ap.add_argument("--side-rate", type=int, default=1000,
                    help="records/s of the transactional producer and of the compacted "
                    "topic's writer")  # fmt: skip
    ap.add_argument("--acls", type=int, default=10_000, help="ACLs loaded in the acls case")
    ap.add_argument("--loop-debug-ms", type=int, default=0,
                    help="brokers in debug mode at this threshold: each case's loop steps "
                    "over it by CPU (see above); 0: off")  # fmt: skip
    ap.add_argument("--json", type=Path, help="where to write the results")
    return ap


def main() -> int:
    args = build_parser().parse_args()
    doc = run(args)
    out = args.json or ROOT / "bench" / "results" / time.strftime("tail-%Y%m%d-%H%M%S.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, **doc},
                              indent=1) + "\n")  # fmt: skip
    print(doc["table"])
    log(f"load average before {doc['loadavg_before']}, after {doc['loadavg_after']}; {out}")
    return 1 if any("error" in r and "peer" not in r for r in doc["rows"]) else 0  # peers: noted


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "side":
        kind, bootstrap, topic, rate = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
        if kind == "writer":
            summary = side_writer(bootstrap, topic, rate)
        else:
            summary = side_txn(bootstrap, topic, rate, txn=kind == "txn")
        print(json.dumps(summary), flush=True)
        sys.exit(0)
    sys.exit(main())
