"""`odradek chaos run` and `odradek chaos faults`: a seeded fault schedule against a local cluster.

run: open the cluster that `cluster up` started in `--dir` (or start one there and stop it at
the end), create a fresh topic (RF 3, min.insync.replicas 2, PARTITIONS partitions, small
segments so they roll; an earlier run of the same seed's topic and group are deleted first, so
that a seed replays on the same cluster), start the workload (workload.py), then for each step
of the schedule (plan.py): inject the fault (faults.py), print a progress line, hold it, heal
it, let the cluster run calm. At the end: heal everything, stop the producers (flushing what
they hold), wait for every partition's ISR to be full, let the group catch up, then read back:

  - the log of every partition through the native client (leader, offsets 0 to the HW);
  - every replica's bytes up to the high watermark from its segment files (the brokers are on
    this machine): the whole batches below the HW, hashed; equal hashes = identical replicas.
    A compacted topic's replicas are compared by what they serve instead (each broker's log
    cleaner rewrites its own files, at its own time): the latest value of every key below
    the HW, hashed (`replica_digest(..., compacted=True)`).

The record (checker.RunRecord) goes to checker.check; the verdict table is printed and the whole
record, findings and availability figures are written as JSON with `--json`. The exit status is
0 on PASS, 1 on FAIL. `--workload txn` runs transactions instead (txn_run.py), `--workload
share` a share group (share_run.py). `faults` runs the same schedule without a workload and
prints a timeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client import Admin, Consumer, NewTopic, TopicPartition
from client.group.admin import GroupAdmin
from deploy.chaos import checker, faults, plan, security, workload
from deploy.cluster import LocalCluster
from deploy.console import timeline  # the events file the console shows
from protocol.batch import decode_all, iter_batches
from protocol.errors import GroupIdNotFoundError, OdradekError

PARTITIONS = 4
REPLICATION = 3
SEGMENT_BYTES = 256 * 1024
HEAL_WAIT_S = 120.0
DRAIN_WAIT_S = 90.0
PRODUCERS = 2
TMPFS_MB = 48  # a broker's log dir when disk-full is among the faults
MEMBERS = 2
TOPIC_GONE_S = 60.0  # an earlier run's topic deleted, before this run creates it again

Print = Callable[[str], None]


@dataclass
class Options:
    dir: str
    cycles: int
    seed: int
    kinds: list[str]
    workload: str = "native"
    rate: float = 400.0  # records per second, all producers together
    json_path: str | None = None
    brokers: int = 3
    topic: str | None = None
    command_config: Path | None = None  # --command-config: else the cluster's own, if secure
    extra: dict[str, Any] = field(default_factory=dict)
    # after each fault: (faults done, faults in the schedule, records acked or None), for a bar
    on_fault: Callable[[int, int, int | None], None] | None = None


def open_or_start(
    dir: str,
    brokers: int,
    out: Print,
    kinds: list[str] | None = None,
    broker_settings: dict[str, int | bool | str] | None = None,
) -> tuple[LocalCluster, bool]:
    """The cluster in `dir` if one runs there; else a new one (True: ours to stop), in network
    namespaces and on tmpfs log dirs when the faults need them and this process is root, its
    brokers given `broker_settings` (the share workload's group.share.* bounds)."""
    path = Path(dir)
    if (path / "cluster.json").exists():
        cluster = LocalCluster.open(path, progress=out)
        if any(s == "alive" for s in cluster.broker_states().values()):
            return cluster, False
    wanted = set(kinds or ())
    root = os.geteuid() == 0
    extra: dict[str, Any] = {}
    if root and wanted & plan.NETNS_KINDS:
        extra["network"] = "netns"
    if root and wanted & plan.TMPFS_KINDS:
        extra["tmpfs_mb"] = TMPFS_MB
    how = f" ({', '.join(f'{k}={v}' for k, v in extra.items())})" if extra else ""
    out(f"no running cluster in {dir}: starting {brokers} brokers there{how}")
    cluster = LocalCluster(path, brokers=brokers, progress=out,
                           broker_settings=broker_settings, **extra)  # fmt: skip
    cluster.up()
    return cluster, True


def fresh_topics(
    cluster: LocalCluster,
    topics: list[str],
    groups: list[str],
    seed: int,
    out: Print,
    partitions: int = PARTITIONS,
) -> None:
    """The run's topics and groups as new: an earlier run of the same seed on this cluster left
    them (chaos-<seed>...), so they are deleted first (the groups' committed offsets point
    into the old topics, even when the topics went by hand), then the topics created. The same
    seed replays on the same cluster."""
    with Admin(cluster.bootstrap, request_timeout_ms=10_000, **security.native()) as admin:
        old = [t for t in topics if t in admin.list_topics()]
        if old:
            out(f"deleting {', '.join(old)}, left by an earlier run of seed {seed}")
            admin.delete_topics(old)
            deadline = time.monotonic() + TOPIC_GONE_S
            while set(old) & set(admin.list_topics()):
                if time.monotonic() > deadline:
                    raise OdradekError(f"{', '.join(old)} still there {TOPIC_GONE_S:.0f}s after "
                                       "their deletion")  # fmt: skip
                time.sleep(0.3)
    asyncio.run(_delete_groups(cluster, groups, seed, out))
    for topic in topics:
        create_topic(cluster, topic, partitions)


async def _delete_groups(cluster: LocalCluster, groups: list[str], seed: int, out: Print) -> None:
    """Those of `groups` that exist (ListGroups needs no coordinator: a new cluster has none)."""
    async with GroupAdmin(cluster.bootstrap, 10_000, **security.native()) as admin:
        there = {g.group_id for g in await admin.listed_groups()}
        for group in [g for g in groups if g in there]:
            out(f"deleting group {group}, left by an earlier run of seed {seed}")
            with contextlib.suppress(GroupIdNotFoundError):
                await admin.delete_group(group)


def create_topic(cluster: LocalCluster, topic: str, partitions: int) -> None:
    replication = min(REPLICATION, len(cluster.broker_ids))
    configs = {"min.insync.replicas": str(min(2, replication)),
               "segment.bytes": str(SEGMENT_BYTES)}  # fmt: skip
    with Admin(cluster.bootstrap, request_timeout_ms=10_000, **security.native()) as admin:
        admin.create_topics([NewTopic(topic, partitions, replication, configs)])
    wait_full_isr(cluster, topic, partitions, 60.0)


def describe(cluster: LocalCluster, topic: str) -> list[Any]:
    with Admin(
        faults.alive_bootstrap(cluster), request_timeout_ms=3000, **security.native()
    ) as admin:
        (desc,) = admin.describe_topics([topic])
    return list(desc.partitions) if not desc.error_code else []


def wait_full_isr(cluster: LocalCluster, topic: str, partitions: int, timeout_s: float) -> bool:
    """Until every partition has a leader and all its replicas in the ISR (False: timed out)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            parts = describe(cluster, topic)
        except Exception:  # a broker died under the admin: ask again
            parts = []
        if len(parts) == partitions and all(
            p.leader >= 0 and set(p.isr) == set(p.replicas) for p in parts
        ):
            return True
        time.sleep(0.3)
    return False


def replica_digest(partition_dir: Path, high_watermark: int, compacted: bool = False) -> str:
    """sha256 of the whole batches below `high_watermark` in a replica's segment files; for a
    compacted topic, of the latest value of each key among the records below it."""
    h = hashlib.sha256()
    latest: dict[bytes | None, bytes | None] = {}
    for segment in sorted(partition_dir.glob("*.log")):
        buf = segment.read_bytes()
        for pos, header in iter_batches(buf, check_crc=False):
            if header.last_offset >= high_watermark:
                continue
            if not compacted:
                h.update(buf[pos : pos + header.size])
                continue
            for record in decode_all(buf[pos : pos + header.size]):
                latest[record.key] = record.value
    for key, value in sorted(latest.items(), key=lambda kv: kv[0] or b""):
        h.update(b"%d:%s:%d:%s" % (len(key or b""), key or b"", -1 if value is None else
                                   len(value), value or b""))  # fmt: skip
    return h.hexdigest()


def read_log(bootstrap: str, topic: str, partition: int) -> tuple[int, list[tuple[int, str]]]:
    """(log start, every record from the log start to the HW) through the native client."""
    tp = TopicPartition(topic, partition)
    with Consumer(bootstrap, auto_offset_reset="earliest", **security.native()) as c:
        c.assign([tp])
        start = c.beginning_offsets([tp])[tp]
        end = c.end_offsets([tp])[tp]
        c.seek(tp, start)
        out: list[tuple[int, str]] = []
        deadline = time.monotonic() + 60
        while (not out or out[-1][0] < end - 1) and end > start and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=300).values():
                out += [(r.offset, (r.value or b"").decode()) for r in records if r.offset < end]
    return start, out


class Chaos:
    def __init__(
        self, cluster: LocalCluster, options: Options, out: Print, partitions: int = PARTITIONS
    ) -> None:
        self.cluster = cluster
        self.o = options
        self.out = out
        self.topic = options.topic or f"chaos-{options.seed}"
        self.t0 = time.monotonic()
        self.faults: list[checker.FaultRecord] = []
        self._fault_times: list[float] = []
        self.ctx = faults.FaultContext(
            cluster, self.topic, partitions, random.Random(options.seed), out
        )

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 2)

    def run_schedule(self, steps: list[plan.Step], acked: Callable[[], int] | None) -> None:
        for step in steps:
            t_inject = time.monotonic()
            record = checker.FaultRecord(step.kind, "-", self.now())
            try:
                injected = faults.inject(self.ctx, step)
            except faults.Unavailable as exc:
                record.skipped = str(exc)
                timeline.append_event(self.cluster.dir, "skipped", kind=step.kind, detail=str(exc))
                self.faults.append(record)
                self._fault_times.append(t_inject)
                self.out(f"[{step.index + 1}/{len(steps)}] t={record.at_s:.1f}s {step.kind} {exc}")
                self._report(step, steps, acked)
                continue
            record.target, record.affected = injected.target, injected.affected
            t_inject = injected.at
            record.at_s = round(t_inject - self.t0, 2)
            timeline.append_event(
                self.cluster.dir, "injected", kind=step.kind, target=str(injected.target)
            )
            hold = injected.hold_s if injected.hold_s is not None else step.hold_s
            time.sleep(hold)
            try:
                injected.heal()
            except Exception as exc:  # heal again at the end; say so now
                self.out(f"      heal failed ({type(exc).__name__}: {exc}); retried at the end")
            record.healed_at_s = self.now()
            timeline.append_event(
                self.cluster.dir, "healed", kind=step.kind, target=str(injected.target)
            )
            self.faults.append(record)
            self._fault_times.append(t_inject)
            wait_full_isr(self.cluster, self.topic, self.ctx.partitions, HEAL_WAIT_S)
            time.sleep(step.calm_s)
            count = f"  acked {acked()}" if acked is not None else ""
            self.out(
                f"[{step.index + 1}/{len(steps)}] t={record.at_s:.1f}s {step.kind} "
                f"{injected.target}: held {hold:.1f}s{count}"
            )
            self._report(step, steps, acked)

    def _report(
        self, step: plan.Step, steps: list[plan.Step], acked: Callable[[], int] | None
    ) -> None:
        if self.o.on_fault is not None:
            self.o.on_fault(step.index + 1, len(steps), acked() if acked is not None else None)

    def heal_all(self) -> None:
        lab = getattr(self.cluster, "netlab", None)
        if lab is not None:
            lab.heal_all()
        for b, state in self.cluster.broker_states().items():
            if state != "alive":
                self.cluster.start(b, wait=False)
        self.cluster.wait_ready()

    def time_availability(self, clock: workload.AckClock) -> None:
        for record, t in zip(self.faults, self._fault_times, strict=True):
            if record.skipped is None and record.affected:
                first = clock.first_after(record.affected, t)
                record.recovered_s = round(first - t, 3) if first is not None else None


Body = Callable[[LocalCluster, Options, list[plan.Step], Print], int]


def run(options: Options, out: Print, body: Body | None = None) -> int:
    """The schedule on the cluster in options.dir (started if none runs there); `body` runs
    the workload and the faults (default: the native or kafka workload; cli.py passes
    txn_run.run_txn for --workload txn and share_run.run_share for --workload share, which
    build on this module)."""
    steps = plan.schedule(options.seed, options.kinds, options.cycles)
    out(f"chaos run: seed {options.seed}, {len(steps)} faults of "
        f"{', '.join(options.kinds)}, {options.workload} workload")  # fmt: skip
    cluster, ours = open_or_start(options.dir, options.brokers, out, options.kinds,
                                  options.extra.get("broker_settings"))  # fmt: skip
    try:
        security.configure(cluster, options.command_config)
        return (body or _run)(cluster, options, steps, out)
    finally:
        if ours:
            cluster.down()


def _run(cluster: LocalCluster, options: Options, steps: list[plan.Step], out: Print) -> int:
    chaos = Chaos(cluster, options, out)
    group = f"{chaos.topic}-group"
    fresh_topics(cluster, [chaos.topic], [group], options.seed, out)
    clock = workload.AckClock()
    native = options.workload == "native"
    bootstrap = cluster.bootstrap if native else cluster.kafka_bootstrap
    make_producer = workload.native_producer if native else workload.kafka_producer
    make_member = workload.native_member if native else workload.kafka_member
    producers = [
        make_producer(bootstrap, f"p{i}", chaos.topic, PARTITIONS, options.rate / PRODUCERS, clock)
        for i in range(PRODUCERS)
    ]
    members = [make_member(bootstrap, f"c{i}", group, chaos.topic) for i in range(MEMBERS)]
    sampler = workload.CommitSampler(
        lambda: faults.alive_bootstrap(cluster), group, chaos.topic, PARTITIONS
    )
    for producer in producers:
        producer.start()
    for member in members:
        member.start()
    sampler.start()
    try:
        chaos.run_schedule(steps, lambda: sum(p.acked() for p in producers))
    finally:
        out("healing everything, stopping the producers, waiting for full ISR")
        chaos.heal_all()
        for p in producers:
            p.stop()
    full = wait_full_isr(cluster, chaos.topic, PARTITIONS, HEAL_WAIT_S)
    record = _read_back(cluster, chaos, producers, full)
    _drain_group(members, record, out)
    sampler.stop()
    for m in members:
        m.stop()
    record.consumed = _merge_consumed(members)
    record.commits = _commit_history(members, sampler, chaos.t0)
    chaos.time_availability(clock)
    record.faults = chaos.faults
    findings = checker.check(record)
    if not full:
        findings.append(checker.Finding("full-isr", False, "the ISR did not fill after healing"))
    return report(cluster, options, steps, options.workload, record.to_json(), findings,
                  record.faults, out)  # fmt: skip


def report(
    cluster: LocalCluster, options: Options, steps: list[plan.Step], workload: str,
    record: dict[str, Any], findings: list[checker.Finding],
    faults: list[checker.FaultRecord], out: Print, extra: dict[str, Any] | None = None,
) -> int:  # fmt: skip
    """Every workload's end: the checks and the faults' availability printed, the verdict on
    the console's timeline, and with --json the whole record (`extra` beside it); the exit
    status, 0 for PASS."""
    avail = checker.availability(faults)
    print_report(findings, avail, out)
    verdict = "PASS" if checker.passed(findings) else "FAIL"
    timeline.append_event(cluster.dir, "verdict", verdict=verdict, seed=options.seed)
    if options.json_path:
        doc = {"seed": options.seed, "workload": workload,
               "schedule": [vars(s) for s in steps], "record": record, **(extra or {}),
               "findings": [vars(f) for f in findings], "availability": avail,
               "verdict": verdict}  # fmt: skip
        Path(options.json_path).write_text(json.dumps(doc, indent=1) + "\n")
        out(f"the whole record: {options.json_path}")
    return 0 if verdict == "PASS" else 1


def _read_back(
    cluster: LocalCluster, chaos: Chaos, producers: list[workload.ProducerThread], full: bool
) -> checker.RunRecord:
    record = checker.RunRecord(chaos.topic, PARTITIONS, chaos.o.seed)
    record.sends = {p.name: p.sends for p in producers}
    bootstrap = faults.alive_bootstrap(cluster)
    for p in range(PARTITIONS):
        start, log = read_log(bootstrap, chaos.topic, p)
        record.log[p], record.log_start[p] = log, start
        hw = start + len(log)
        record.replica_digests[p] = {
            b: replica_digest(Path(cluster.broker(b).log_dir) / f"{chaos.topic}-{p}", hw)
            for b in cluster.broker_ids
        }
    return record


def _drain_group(
    members: list[workload.GroupMember], record: checker.RunRecord, out: Print
) -> None:
    """Until the group received every acknowledged record (bounded)."""
    wanted = {p: {s.value for by_p in record.sends.values() for s in by_p.get(p, []) if s.acked}
              for p in range(record.partitions)}  # fmt: skip
    deadline = time.monotonic() + DRAIN_WAIT_S
    while time.monotonic() < deadline:
        seen = _merge_consumed(members)
        if all(wanted[p] <= set(seen.get(p, ())) for p in wanted):
            return
        time.sleep(0.5)
    out("the group did not receive every acknowledged record in time")


def _merge_consumed(members: list[workload.GroupMember]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for m in members:
        for p, values in list(m.consumed.items()):
            out.setdefault(p, []).extend(values)
    return out


def _commit_history(
    members: list[workload.GroupMember], sampler: workload.CommitSampler, t0: float
) -> dict[int, list[tuple[float, float, int, str]]]:
    """Per partition, the commits that succeeded and the samples, with their time spans."""
    events = [e for m in members for e in m.commits] + list(sampler.samples)
    out: dict[int, list[tuple[float, float, int, str]]] = {}
    for start, end, p, offset, who in sorted(events):
        out.setdefault(p, []).append((round(start - t0, 4), round(end - t0, 4), offset, who))
    return out


def print_report(
    findings: list[checker.Finding], avail: dict[str, dict[str, Any]], out: Print
) -> None:
    out("")
    out(f"{'CHECK':<22} {'VERDICT':<8} DETAIL")
    for f in findings:
        out(f"{f.check:<22} {'PASS' if f.ok else 'FAIL':<8} {f.detail}")
    out("")
    out(f"{'FAULT':<16} {'COUNT':>5} {'TIMED':>5} {'P50 S':>7} {'MAX S':>7}  (fault -> first ack)")
    for kind, a in avail.items():
        p50 = "-" if a["p50_s"] is None else f"{a['p50_s']:.2f}"
        mx = "-" if a["max_s"] is None else f"{a['max_s']:.2f}"
        out(f"{kind:<16} {a['count']:>5} {a['timed']:>5} {p50:>7} {mx:>7}")
    out("")
    out(f"verdict: {'PASS' if checker.passed(findings) else 'FAIL'}")


def run_faults(options: Options, out: Print) -> int:
    """The schedule without a workload, as a timeline (the user's application runs meanwhile)."""
    steps = plan.schedule(options.seed, options.kinds, options.cycles)
    cluster, ours = open_or_start(options.dir, options.brokers, out, options.kinds)
    try:
        security.configure(cluster, options.command_config)
        chaos = Chaos(cluster, options, out)
        if chaos.topic not in _topics(cluster):
            create_topic(cluster, chaos.topic, PARTITIONS)
        out(f"chaos faults: seed {options.seed}, {len(steps)} faults, aimed at the leaders of "
            f"{chaos.topic}")  # fmt: skip
        try:
            chaos.run_schedule(steps, None)
        finally:
            chaos.heal_all()
        out(f"t={chaos.now():>6.1f}s healed; every broker is running")
        return 0
    finally:
        if ours:
            cluster.down()


def _topics(cluster: LocalCluster) -> list[str]:
    with Admin(
        faults.alive_bootstrap(cluster), request_timeout_ms=5000, **security.native()
    ) as admin:
        return admin.list_topics()
