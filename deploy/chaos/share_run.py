"""`odradek chaos run --workload share`: a share group (KIP-932) through the faults, then
share_checker.py's checks.

Creates the topic `chaos-<seed>` (PARTITIONS partitions, fewer than the MEMBERS members, so
that Kafka's simple share assignor shares a partition between members) and a new share group
whose configs make redelivery quick: `share.auto.offset.reset` earliest, a LOCK_MS lock,
`share.delivery.count.limit` LIMIT, a short session and heartbeat. A broker whose
group.share.min.* bounds refuse those (Kafka's defaults do: a 15 s lock at least, a 45 s
session) gets the group's reset and limit alone and the bounds' shortest lock, said in one line;
a cluster the run starts itself lowers the bounds (SHARE_BROKER_SETTINGS). Then: the native
producer of unique values (workload.py), MEMBERS member processes (share_workload.py: explicit
acknowledgement, mostly accept, some release and reject), a watch of the topic's leaders, and
the fault schedule (kill-member and kill-share-coord aim at this group). At the end: heal
everything, stop the producer, SIGTERM the members, and drain with a fresh member that accepts
until nothing comes for the lock duration plus QUIET_S. The record (ShareRunRecord: the
acknowledged produces, every delivery with its action and outcome, the failover times) goes to
share_checker.check; `--json` writes it for `odradek chaos check`.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from client import Admin
from deploy.chaos import checker, faults, plan, runner, security, share_checker
from deploy.chaos.share_workload import LeaderWatch, MemberPool
from deploy.chaos.workload import AckClock, ProducerThread, native_producer
from deploy.cluster import LocalCluster
from deploy.processes import wait_until
from protocol.api.admin import RESOURCE_GROUP
from protocol.errors import InvalidConfigError

PARTITIONS = 2
MEMBERS = 3
LOCK_MS = 3000
LIMIT = 3
QUIET_S = 3.0
FIRST_DELIVERY_S = 60.0
KAFKA_MIN_LOCK_MS = 15_000  # group.share.min.record.lock.duration.ms's default
SHARE_CONFIGS = {
    "share.auto.offset.reset": "earliest",
    "share.record.lock.duration.ms": str(LOCK_MS),
    "share.delivery.count.limit": str(LIMIT),
    "share.session.timeout.ms": "6000",
    "share.heartbeat.interval.ms": "500",
}
# the group.share.* bounds a cluster started by the run gets, so that SHARE_CONFIGS fit them
SHARE_BROKER_SETTINGS: dict[str, int | bool | str] = {
    "group_share_min_record_lock_duration_ms": 1000,
    "group_share_min_heartbeat_interval_ms": 100,
    "group_share_min_session_timeout_ms": 1000,
}


def configure_group(bootstrap: str, group: str, out: runner.Print) -> int:
    """The group's share configs (module docstring); the lock duration it got, in ms."""
    with Admin(bootstrap, request_timeout_ms=10_000, **security.native()) as admin:
        try:
            admin.alter_configs(group, SHARE_CONFIGS, resource_type=RESOURCE_GROUP)
            return LOCK_MS
        except InvalidConfigError as exc:
            out(f"the brokers' group.share.min.* bounds refuse a short lock or session "
                f"({exc}): the group gets a {KAFKA_MIN_LOCK_MS} ms lock and the brokers' "
                "session")  # fmt: skip
        fallback = {"share.auto.offset.reset": "earliest",
                    "share.record.lock.duration.ms": str(KAFKA_MIN_LOCK_MS),
                    "share.delivery.count.limit": str(LIMIT)}  # fmt: skip
        admin.alter_configs(group, fallback, resource_type=RESOURCE_GROUP)
        return KAFKA_MIN_LOCK_MS


def run_share(
    cluster: LocalCluster, options: runner.Options, steps: list[plan.Step], out: runner.Print
) -> int:
    chaos = runner.Chaos(cluster, options, out, partitions=PARTITIONS)
    topic = chaos.topic
    group = f"{topic}-share-{uuid.uuid4().hex[:6]}"  # new: no earlier run's share state
    runner.fresh_topics(cluster, [topic], [], options.seed, out, partitions=PARTITIONS)
    lock_ms = configure_group(cluster.bootstrap, group, out)
    out(f"share group {group}: {MEMBERS} members on {PARTITIONS} partitions, a {lock_ms} ms "
        f"lock, delivery count limit {LIMIT}")  # fmt: skip
    work_dir = Path(cluster.dir) / "chaos-share" / group
    pool = MemberPool(cluster.bootstrap, group, topic, work_dir, options.seed, chaos.t0)
    chaos.ctx.members, chaos.ctx.share_group = pool, group
    watch = LeaderWatch(lambda: faults.alive_bootstrap(cluster), topic, chaos.t0)
    clock = AckClock()
    producer = native_producer(cluster.bootstrap, "p0", topic, PARTITIONS, options.rate, clock)
    watch.start()
    producer.start()
    try:
        for _ in range(MEMBERS):
            pool.start_one()
        if not wait_until(lambda: pool.delivered() > 0, FIRST_DELIVERY_S, 0.2):
            out(f"no member received a record in {FIRST_DELIVERY_S:.0f} s: "
                + " | ".join(pool.errors()[-3:]))  # fmt: skip
        chaos.run_schedule(steps, producer.acked)
    finally:
        out("healing everything, stopping the producer and the members, draining the group")
        chaos.heal_all()
        producer.stop()
        pool.stop()
    full = runner.wait_full_isr(cluster, topic, PARTITIONS, runner.HEAL_WAIT_S)
    pool.drain(lock_ms / 1000 + QUIET_S, out)
    watch.stop()
    chaos.time_availability(clock)
    record = build_record(producer, pool, watch, chaos.faults, lock_ms)
    findings = share_checker.check(record)
    if not full:
        findings.append(checker.Finding("full-isr", False, "the ISR did not fill after healing"))
    out(share_checker.summary(record) + f"; members killed: {', '.join(pool.killed) or 'none'}")
    return runner.report(
        cluster,
        options,
        steps,
        "share",
        record.to_json(),
        findings,
        chaos.faults,
        out,
        {"faults": [vars(f) for f in chaos.faults]},
    )


def build_record(producer: ProducerThread, pool: MemberPool, watch: LeaderWatch,
                 faults_done: list[checker.FaultRecord], lock_ms: int,
                 ) -> share_checker.ShareRunRecord:  # fmt: skip
    """The run's record. Failovers: the leader watch's, and when each broker fault was
    injected and healed (a leader killed between two samples and back before the next)."""
    record = share_checker.ShareRunRecord(limit=LIMIT, lock_s=lock_ms / 1000)
    for p, sends in producer.sends.items():
        for s in sends:
            if s.offset is not None:
                record.produced[(p, s.offset)] = s.value
            else:
                record.unacknowledged.add(s.value)
    record.deliveries = pool.deliveries()
    broker_faults = [f for f in faults_done if f.skipped is None and f.kind != "kill-member"]
    times = [t for f in broker_faults for t in (f.at_s, f.healed_at_s) if t is not None]
    record.failovers = sorted(set(watch.failovers) | set(times))
    record.deaths = dict(pool.deaths)
    return record
