"""Benchmark of log compaction (issue 22), beside this machine's raw disk figures of the same run.

Run with `make bench-compaction` (or `.venv/bin/python bench/bench_compaction.py --help` for the
sizes). Everything happens in a temporary directory under /tmp, removed at the end. It prints
one line per figure under four headings, then a markdown table (the one recorded in
docs/benchmarks.md), and writes every raw measurement to --json:

raw disk   a file the size of the test log, in the same directory: sequential os.write of
           1 MiB blocks into the page cache, the same with one fdatasync at the end (timed),
           and sequential os.read of it from the page cache and after evicting it (bench_log's
           helpers);
cleaner    one full pass (`LogCleaner.clean_once()`, in-process, as tests/unit/log/
           test_cleaner.py runs it) over a fresh log of --records keyed records of 100 B (a
           12-byte key, a value of random hex) over --keys distinct keys, cycling,
           --batch-records per batch, several segments (the last one rolled, so every record
           is dirty and cleanable): MB/s of dirty log cleaned, records/s, records kept;
           uncompressed, then with --codec. Each --repeats times on a fresh log (written just
           before, so in the page cache): median and spread (min-max); MB/s as a share of the
           raw read figures (from the page cache, where the pass reads, and from the disk);
produce    a one-broker cluster (deploy/cluster.py) per run: a compacted topic (segment.bytes
           1 MiB, min.cleanable.dirty.ratio 0.01, so the cleaner always has work), the native
           `client.Producer` (acks 1) sending 100 B records over --produce-keys keys in a plain
           loop for --produce-seconds, then flush(). With the cleaner disabled (A:
           log_cleaner_enable false) and running (B: log_cleaner_backoff_ms 100), alternated
           A B A B for --rounds rounds; medians and the ratio B/A. Beside each: the CPU
           seconds per second of the broker process and of this one (the producer) during the
           loop, the cleaner's passes (counted from the broker's log, "cleaned ...") and the
           partition's size at the end;
load       a `__consumer_offsets` partition log, built in-process, with --commits offset
           commits of one group (coordinator/group/records.py `offset_record` and `build`,
           --commit-batch records per batch, over --commit-partitions partitions), loaded the
           way a coordinator that takes the partition over loads it: GroupCoordinator._replay
           itself, over the log (read_records as ReplicaManager serves it); before and after
           one cleaning pass. The loaded offsets are checked against the last commits.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import functools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_log import MIB, RAW_FILE, raw_read, raw_write  # noqa: E402
from bench_partitions import TICKS, _cpu_ticks  # noqa: E402

from broker.log.cleaner.manager import CleanerSettings, LogCleaner  # noqa: E402
from broker.log.config import LogConfig  # noqa: E402
from broker.log.log import Log  # noqa: E402
from broker.log.manager import LogManager  # noqa: E402
from coordinator.group.records import OFFSETS_TOPIC, build, offset_record  # noqa: E402
from coordinator.group.service import GroupCoordinator, GroupOwned  # noqa: E402
from coordinator.internal_topics import OFFSETS_TOPIC_CONFIGS  # noqa: E402
from coordinator.runtime.runtime import Owned  # noqa: E402
from protocol.batch import CODECS, build_batch  # noqa: E402
from protocol.clock import ManualClock  # noqa: E402

RECORD_BYTES = 100  # key + value
T0_MS = 1_700_000_000_000
TOPIC = "compacted"
PRODUCE_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": str(MIB),
    "min.cleanable.dirty.ratio": "0.01",
}
WITHOUT_CLEANER: dict[str, int | bool | str] = {"log_cleaner_enable": False}
WITH_CLEANER: dict[str, int | bool | str] = {"log_cleaner_backoff_ms": 100}
CLEANER_TARGET_RECORDS_PER_S = 1_000_000
PRODUCE_TARGET_RATIO = 0.8

Row = tuple[str, str, str]


def note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def spread(values: list[float], fmt: str) -> str:
    """`median (min-max, n runs)` in `fmt`."""
    m = statistics.median(values)
    if len(values) == 1:
        return f"{m:{fmt}} (1 run)"
    return f"{m:{fmt}} ({min(values):{fmt}}-{max(values):{fmt}}, {len(values)} runs)"


# ----- the cleaner ----------------------------------------------------------------------------


@functools.cache
def keyed_batches(records: int, keys: int, per_batch: int, codec: int) -> list[bytes]:
    """Batches of `records` records of RECORD_BYTES (key + value), keys cycling over `keys`;
    each value random hex (so a codec halves it, as it might text, neither all nor nothing)."""
    rng = random.Random(7)
    hex_bytes = (RECORD_BYTES - len(b"key-%08d" % 0)) // 2
    out = []
    for first in range(0, records, per_batch):
        rows = [(b"key-%08d" % (i % keys), rng.randbytes(hex_bytes).hex().encode(), None, T0_MS)
                for i in range(first, min(first + per_batch, records))]  # fmt: skip
        out.append(build_batch(rows, codec=codec))
    return out


def compacted_log(directory: Path, configs: dict[str, str], topic: str) -> tuple[LogManager, Log]:
    clock = ManualClock(time_ms=T0_MS)
    manager = LogManager(directory, LogConfig.from_properties(configs), clock)
    return manager, manager.get_or_create(topic, 0)


def clean_pass(manager: LogManager, log: Log) -> tuple[float, LogCleaner]:
    """One pass of the cleaner over the (closed) log, everything below its end cleanable."""
    cleaner = LogCleaner(manager, manager.clock, CleanerSettings(), lambda t, p: log.log_end_offset)
    start = time.perf_counter()
    cleaned = asyncio.run(cleaner.clean_once())
    elapsed = time.perf_counter() - start
    assert cleaned, "the cleaner found nothing to clean"
    return elapsed, cleaner


def cleaner_run(directory: Path, batches: list[bytes], segment_bytes: int) -> dict[str, Any]:
    configs = {**PRODUCE_TOPIC_CONFIGS, "segment.bytes": str(segment_bytes)}
    manager, log = compacted_log(directory, configs, "t")
    for batch in batches:
        log.append_as_leader(batch, 1)
    log.roll()  # the active segment is never cleaned: every record is in a closed one
    size, segments, end = log.size_bytes, log.segments.count - 1, log.log_end_offset
    elapsed, cleaner = clean_pass(manager, log)
    s = cleaner.stats
    assert s.records_read == end, (s.records_read, end)  # the whole log in one pass
    log.close()
    shutil.rmtree(directory)
    return {
        "seconds": elapsed, "dirty_bytes": size, "segments": segments,
        "records": s.records_read, "records_kept": s.records_kept,
        "bytes_written": s.bytes_written,
        "mb_per_s": size / elapsed / 1e6, "records_per_s": s.records_read / elapsed,
    }  # fmt: skip


def bench_cleaner(
    root: Path, args: argparse.Namespace, raw: dict[str, float], report: Callable[..., None]
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for codec_name in dict.fromkeys(("none", args.codec)):
        batches = keyed_batches(args.records, args.keys, args.batch_records, CODECS[codec_name])
        runs = [cleaner_run(root / f"clean-{codec_name}-{i}", batches, args.segment_mib * MIB)
                for i in range(args.repeats)]  # fmt: skip
        out[codec_name] = runs
        first = runs[0]
        mb = [r["mb_per_s"] for r in runs]
        report(
            f"cleaner pass, {codec_name}, {first['records']:,} records, {args.keys:,} keys",
            f"{spread([r['records_per_s'] for r in runs], ',.0f')} records/s; "
            f"{spread(mb, ',.1f')} MB/s of dirty log "
            f"({100 * statistics.median(mb) / raw['read_warm_mb_s']:.1f}% of raw read from the "
            f"page cache, {100 * statistics.median(mb) / raw['read_cold_mb_s']:.0f}% of raw read "
            f"from the disk); "
            f"{first['dirty_bytes'] / 1e6:,.0f} MB in {first['segments']} segments, "
            f"{first['records_kept']:,} records kept, {first['bytes_written'] / 1e6:,.2f} MB "
            f"written",
            f">= {CLEANER_TARGET_RECORDS_PER_S:,} records/s",
            statistics.median(r["records_per_s"] for r in runs) >= CLEANER_TARGET_RECORDS_PER_S,
        )
    return out


# ----- raw disk -------------------------------------------------------------------------------


def bench_raw(root: Path, size_bytes: int, report: Callable[..., None]) -> dict[str, float]:
    """bench_log's raw figures for a file of `size_bytes` in `root` (1 MiB blocks)."""
    total = max(MIB, size_bytes // MIB * MIB)
    os.sync()
    out = {"file_bytes": total, "write_mb_s": raw_write(root, total, MIB, False)}
    os.sync()
    out["write_fdatasync_end_mb_s"] = raw_write(root, total, MIB, False, True, keep=True)
    out["read_warm_mb_s"] = raw_read(root / RAW_FILE, MIB, cold=False)
    out["read_cold_mb_s"] = raw_read(root / RAW_FILE, MIB, cold=True)
    (root / RAW_FILE).unlink()
    size = f"{total / 1e6:,.0f} MB"
    report(f"raw write, {size}, 1 MiB blocks, page cache", f"{out['write_mb_s']:,.0f} MB/s")
    report(f"raw write, {size}, 1 MiB blocks, fdatasync at the end",
           f"{out['write_fdatasync_end_mb_s']:,.0f} MB/s")  # fmt: skip
    report(f"raw read, {size}, 1 MiB blocks, page cache", f"{out['read_warm_mb_s']:,.0f} MB/s")
    report(f"raw read, {size}, 1 MiB blocks, evicted first",
           f"{out['read_cold_mb_s']:,.0f} MB/s")  # fmt: skip
    return out


# ----- produce with and without the cleaner ---------------------------------------------------


def cleaner_passes(cluster_dir: Path) -> int:
    return sum(
        line.count(" cleaned ")
        for path in cluster_dir.glob("broker-*.log")
        for line in path.read_text(errors="replace").splitlines()
    )


def produce_run(
    zk_connect: str, where: Path, settings: dict[str, int | bool | str], args: argparse.Namespace
) -> dict[str, Any]:
    from client import Admin, NewTopic, Producer
    from deploy.cluster import LocalCluster

    chroot = f"/odradek-bench-{uuid.uuid4().hex[:12]}"
    cluster = LocalCluster(where, brokers=1, zookeeper=zk_connect + chroot,
                           broker_settings=settings)  # fmt: skip
    try:
        bootstrap = cluster.up()
        with Admin(bootstrap) as admin:
            admin.create_topics([NewTopic(TOPIC, 1, 1, PRODUCE_TOPIC_CONFIGS)])
        value = b"v" * (RECORD_BYTES - len(b"key-%04d" % 0))
        keys = [b"key-%04d" % i for i in range(args.produce_keys)]
        sent = 0
        broker_pid = cluster.broker(cluster.broker_ids[0]).pid
        with Producer(bootstrap, acks=1) as producer:
            producer.send(TOPIC, value, key=keys[0]).get(timeout=30)  # connected, metadata known
            broker_ticks, client_cpu_s = _cpu_ticks(broker_pid), time.process_time()
            start = time.perf_counter()
            deadline = start + args.produce_seconds
            while time.perf_counter() < deadline:
                for key in keys:
                    producer.send(TOPIC, value, key=key)
                sent += len(keys)
            producer.flush()
            elapsed = time.perf_counter() - start
            broker_cpu_s = (_cpu_ticks(broker_pid) - broker_ticks) / TICKS
            client_cpu_s = time.process_time() - client_cpu_s
        log_dir = cluster.broker(cluster.broker_ids[0]).log_dir
        on_disk = sum(p.stat().st_size for p in Path(log_dir).glob(f"{TOPIC}-0/*.log"))
    finally:
        cluster.down(purge=False)
    passes = cleaner_passes(where)
    shutil.rmtree(where, ignore_errors=True)
    return {"records": sent, "seconds": elapsed, "records_per_s": sent / elapsed,
            "cleaner_passes": passes, "log_bytes_at_end": on_disk,
            "broker_cpu_s": broker_cpu_s, "client_cpu_s": client_cpu_s}  # fmt: skip


def bench_produce(root: Path, zk_connect: str, args: argparse.Namespace,
                  report: Callable[..., None]) -> dict[str, list[dict[str, Any]]]:  # fmt: skip
    runs: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
    for i in range(args.rounds):
        for name, settings in (("without", WITHOUT_CLEANER), ("with", WITH_CLEANER)):
            r = produce_run(zk_connect, root / f"cluster-{name}-{i}", settings, args)
            note(
                f"  produce round {i + 1}, cleaner {name}: {r['records_per_s']:,.0f} records/s, "
                f"{r['cleaner_passes']} cleaner passes, {r['log_bytes_at_end']:,} B at the end"
            )
            runs[name].append(r)
    for name in ("without", "with"):
        rs = runs[name]
        report(
            f"produce, compacted topic, cleaner {'running' if name == 'with' else 'disabled'}",
            f"{spread([r['records_per_s'] for r in rs], ',.0f')} records/s; CPU per second "
            f"broker {_per_run(rs, 'broker_cpu_s')}, this client {_per_run(rs, 'client_cpu_s')}; "
            f"cleaner passes {', '.join(str(r['cleaner_passes']) for r in rs)}; log at the end "
            f"{', '.join(str(round(r['log_bytes_at_end'] / 1e6, 1)) for r in rs)} MB",
        )
    ratio = statistics.median(r["records_per_s"] for r in runs["with"]) / statistics.median(
        r["records_per_s"] for r in runs["without"]
    )
    report("produce with the cleaner / without (medians)", f"{100 * ratio:.0f}%",
           f">= {100 * PRODUCE_TARGET_RATIO:.0f}%", ratio >= PRODUCE_TARGET_RATIO)  # fmt: skip
    return runs


def _per_run(runs: list[dict[str, Any]], cpu: str) -> str:
    return ", ".join(f"{r[cpu] / r['seconds']:.2f}" for r in runs)


# ----- coordinator load -----------------------------------------------------------------------


class LogAsCoordinatorLog:
    """The two CoordinatorLog methods a load uses, over one Log (as ReplicaManager)."""

    def __init__(self, log: Log) -> None:
        self.log = log

    def log_range(self, topic: str, partition: int) -> tuple[int, int]:
        return self.log.log_start_offset, self.log.log_end_offset

    def read_records(
        self, topic: str, partition: int, offset: int, max_bytes: int, max_offset: int
    ) -> tuple[bytes, int] | None:
        read = self.log.read(offset, max_bytes, max_offset=max_offset)
        if read.slice is None:
            return None
        return os.pread(read.slice.fd, read.slice.length, read.slice.position), read.next_offset


def coordinator_load(log: Log) -> tuple[float, int, GroupOwned]:
    """Seconds and records of the group coordinator's replay over the log, and what it loaded."""
    coordinator = GroupCoordinator(
        0, cast(Any, LogAsCoordinatorLog(log)), cast(Any, None), cast(Any, None),
        ManualClock(T0_MS),
    )  # fmt: skip
    owned: GroupOwned = Owned(0, 0, {})
    start = time.perf_counter()
    count = asyncio.run(coordinator.runtime._replay(owned))
    return time.perf_counter() - start, count, owned


def bench_load(root: Path, args: argparse.Namespace, report: Callable[..., None]) -> dict[str, Any]:
    manager, log = compacted_log(root / "offsets", OFFSETS_TOPIC_CONFIGS, OFFSETS_TOPIC)
    parts = args.commit_partitions
    for first in range(0, args.commits, args.commit_batch):
        n = min(args.commit_batch, args.commits - first)
        commits = [offset_record("bench-group", "events", i % parts, i // parts, None, T0_MS)
                   for i in range(first, first + n)]  # fmt: skip
        log.append_as_leader(build(commits, T0_MS), 1)
    log.roll()  # 1,000,000 commits fit one 100 MiB segment; the active one is never cleaned
    want = {("events", p): max(i // parts for i in range(p, args.commits, parts))
            for p in range(min(parts, args.commits))}  # fmt: skip
    out: dict[str, Any] = {"commits": args.commits}
    for when in ("before", "after"):
        if when == "after":
            out["clean_seconds"], _ = clean_pass(manager, log)
        seconds, count, owned = coordinator_load(log)
        got = {tp: e.offset for tp, e in owned.shard["bench-group"].offsets.items()}
        assert got == want, "the load gave other offsets than the last commits"
        out[when] = {"seconds": seconds, "records": count, "log_bytes": log.size_bytes}
        report(
            f"coordinator load, {args.commits:,} commits of one group, {when} compaction",
            f"{seconds:.3f} s, {count:,} records replayed, {log.size_bytes / 1e6:,.1f} MB log",
        )
    log.close()
    return out


# ----- main -----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--records", type=int, default=1_000_000, help="records per cleaner pass")
    p.add_argument("--keys", type=int, default=10_000, help="distinct keys of the cleaner's log")
    p.add_argument("--batch-records", type=int, default=500, help="records per batch")
    p.add_argument("--segment-mib", type=int, default=16, help="segment.bytes of the cleaner's log")
    p.add_argument("--codec", default="zstd", choices=sorted(set(CODECS) - {"none"}),
                   help="the second cleaner case's codec")  # fmt: skip
    p.add_argument("--repeats", type=int, default=3, help="cleaner passes per codec")
    p.add_argument("--produce-seconds", type=float, default=15.0, help="length of a produce run")
    p.add_argument("--produce-keys", type=int, default=100, help="keys of the produce loop")
    p.add_argument("--rounds", type=int, default=2, help="produce rounds (A B per round)")
    p.add_argument("--commits", type=int, default=1_000_000, help="offset commits to load")
    p.add_argument("--commit-batch", type=int, default=1000, help="commits per batch")
    p.add_argument("--commit-partitions", type=int, default=10, help="partitions committed")
    p.add_argument("--zookeeper", help="a running ZooKeeper's HOST:PORT (else one is started)")
    p.add_argument("--only", default="raw,cleaner,produce,load",
                   help="comma-separated parts (raw always runs)")  # fmt: skip
    p.add_argument("--json", type=Path,
                   help="raw results (default bench/results/compaction-<time>.json)")  # fmt: skip
    return p


def main() -> None:
    args = build_parser().parse_args()
    parts = set(args.only.split(","))
    root = Path(tempfile.mkdtemp(prefix="odradek-bench-compaction-", dir="/tmp"))
    rows: list[Row] = []
    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()},
                               "load_average_before": os.getloadavg()}  # fmt: skip

    def report(name: str, value: str, target: str = "", met: bool | None = None) -> None:
        verdict = "" if met is None else (": met" if met else ": **missed**")
        print(f"{name}: {value}" + (f"   (target {target}{verdict})" if target else ""),
              flush=True)  # fmt: skip
        rows.append((name, value, target + verdict))

    try:
        run(root, args, parts, results, report)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["load_average_after"] = os.getloadavg()
    print()
    results["tree"] = tree = tree_state()
    print(f"Measured {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at {tree} on "
          f"{os.cpu_count()} cores, {root.parent}; load average "
          f"{results['load_average_before'][0]:.1f} before, "
          f"{results['load_average_after'][0]:.1f} after")  # fmt: skip
    print("| figure | measured | target |")
    print("| --- | --- | --- |")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | {row[2]} |")
    results["rows"] = rows
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = args.json or ROOT / "bench" / "results" / f"compaction-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"raw results: {path}")


def tree_state() -> str:
    """The commit of the code measured, and whether files it tracks differed from it."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "--short", "HEAD") + (" + uncommitted changes" if dirty else "")


def run(
    root: Path,
    args: argparse.Namespace,
    parts: set[str],
    results: dict[str, Any],
    report: Callable[..., None],
) -> None:
    print("## raw disk", flush=True)
    plain = keyed_batches(args.records, args.keys, args.batch_records, CODECS["none"])
    test_log_bytes = sum(map(len, plain))
    results["raw"] = raw = bench_raw(root, test_log_bytes, report)
    if "cleaner" in parts:
        print("## cleaner", flush=True)
        results["cleaner"] = bench_cleaner(root, args, raw, report)
    if "produce" in parts:
        print("## produce", flush=True)
        results["produce"] = with_zookeeper(
            root, args, lambda zk: bench_produce(root, zk, args, report)
        )
    if "load" in parts:
        print("## coordinator load", flush=True)
        results["load"] = bench_load(root, args, report)


def with_zookeeper(root: Path, args: argparse.Namespace, body: Callable[[str], Any]) -> Any:
    """body(connect string) against --zookeeper, or a ZooKeeper started (and stopped) here."""
    if args.zookeeper:
        return body(args.zookeeper)
    from deploy.processes import free_port
    from deploy.zookeeper import start_zookeeper, stop_zookeeper

    zk = start_zookeeper(root / "zookeeper", free_port("127.0.0.1"))
    try:
        return body(zk.connect)
    finally:
        stop_zookeeper(zk.pid)


if __name__ == "__main__":
    main()
