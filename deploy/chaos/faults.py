"""Injecting and healing the fault kinds of plan.py on a LocalCluster, by PID, files and links.

`inject(ctx, step)` resolves the step's target against the live cluster (the leader of a
partition, the controller, two brokers...), breaks it and returns an `Injected`: the brokers
hit, the partitions whose leader was among them (whose first acknowledged write afterwards
measures availability), and a `heal` that undoes the fault. Process faults use the cluster's
own kill/start (signals by recorded PID); torn-tail rewrites the end of a killed follower's
active segment (cut inside its last batch, then garbage appended), which recovery must cut back
at restart; the network kinds call the cluster's network lab (deploy/netns.py: iptables DROP
rules inside the broker's namespace, so connections hang as with a pulled cable); disk-full
writes a ballast file into the tmpfs under the broker's log directory until it is full (the
broker stops at its next write there: every log directory it has failed, as Kafka's stops), and
heals by deleting it and starting the broker again; kill-txn-coord SIGKILLs the broker leading the
`__transaction_state` partition of one of the workload's transactional ids (Kafka's
partition_for(id, the topic's partition count), as FindCoordinator with key type 1 answers; no
Kafka client here asks FindCoordinator for a transactional id by itself); kill-share-coord
SIGKILLs the share coordinator of one of the share group's share partitions (the leader of the
`__share_group_state` partition of "group:topicId:partition", as FindCoordinator with key type
2 answers; the topic id read through the Kafka door, which carries it); kill-member SIGKILLs
one of the share workload's member processes and starts a new member when it heals. A kind the
cluster cannot do (not root, no namespaces, no tmpfs, no transactional ids, no share group)
raises `Unavailable` with one line saying why; the runner skips it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from client import Admin
from coordinator.share import records as share_records
from coordinator.transaction.records import TRANSACTION_STATE_TOPIC, partition_for
from deploy.chaos import security
from deploy.chaos.plan import NETNS_KINDS, ROOT_KINDS, TMPFS_KINDS, Step
from deploy.cluster import LocalCluster
from protocol.errors import OdradekError

BALLAST = ".chaos-ballast"
ZOMBIE_EXTRA_S = 1.5  # SIGSTOP this long past the ZooKeeper session timeout


class Unavailable(Exception):
    """This fault kind cannot run on this cluster or machine (the message says why)."""


@dataclass
class Injected:
    target: str
    brokers: list[int]
    affected: list[int]  # partitions whose leader was hit
    heal: Callable[[], None]
    hold_s: float | None = None  # overrides the step's hold (zombie: past the session)
    # when the fault took hold (monotonic): built right after the kill, the rule or the
    # ballast, so the metadata lookups before it are not counted as time to recover
    at: float = field(default_factory=time.monotonic)


class Members(Protocol):
    """The share workload's member processes (share_workload.MemberPool)."""

    def kill_one(self, pick: int) -> str: ...  # SIGKILL a live member: its name

    def start_one(self, drain: bool = False) -> str: ...  # a new member: its name


@dataclass
class FaultContext:
    cluster: LocalCluster
    topic: str
    partitions: int
    rng: random.Random
    progress: Callable[[str], None] = field(default=lambda _line: None)
    txn_ids: list[str] = field(default_factory=list)  # the workload's transactional ids
    share_group: str | None = None  # the share workload's group, and its members
    members: Members | None = None

    def leaders(self) -> dict[int, int]:
        """partition -> leader id as a live broker sees it (-1: none)."""
        bootstrap = alive_bootstrap(self.cluster)
        with Admin(bootstrap, request_timeout_ms=3000, **security.native()) as admin:
            (desc,) = admin.describe_topics([self.topic])
        return {p.partition: p.leader for p in desc.partitions}

    def leader_of(self, pick: int) -> tuple[int, int]:
        """(partition, its leader) for a step's pick; a live broker when there is no leader."""
        p = pick % self.partitions
        leader = self.leaders().get(p, -1)
        if leader < 0:
            leader = self.alive()[pick % len(self.alive())]
        return p, leader

    def alive(self) -> list[int]:
        return [b for b, s in self.cluster.broker_states().items() if s == "alive"]

    def led_by(self, brokers: list[int]) -> list[int]:
        return sorted(p for p, leader in self.leaders().items() if leader in brokers)


def alive_bootstrap(cluster: LocalCluster) -> str:
    """The native bootstrap of the brokers that are running now (all of them if none is)."""
    states = cluster.broker_states()
    hosts = cluster.bootstrap.split(",")
    ids = cluster.broker_ids
    alive = [h for b, h in zip(ids, hosts, strict=False) if states.get(b) == "alive"]
    return ",".join(alive or hosts)


def check_available(cluster: LocalCluster, kind: str) -> None:
    """Raise Unavailable when `kind` cannot run here (not root, no namespaces, no tmpfs)."""
    if kind in ROOT_KINDS and os.geteuid() != 0:
        raise Unavailable(f"{kind} needs root (network namespaces, tmpfs): skipped")
    if kind in NETNS_KINDS and getattr(cluster, "netlab", None) is None:
        raise Unavailable(f"{kind} needs a cluster started with `cluster up --netns`: skipped")
    if kind in TMPFS_KINDS and not _tmpfs_mb(cluster):
        raise Unavailable(f"{kind} needs a cluster started with `cluster up --tmpfs-mb N`")


def inject(ctx: FaultContext, step: Step) -> Injected:
    check_available(ctx.cluster, step.kind)
    return _INJECT[step.kind](ctx, step)


def _restart(cluster: LocalCluster, brokers: list[int]) -> Callable[[], None]:
    def heal() -> None:
        for b in brokers:
            if cluster.broker_states().get(b) != "alive":
                cluster.start(b, wait=False)
        cluster.wait_ready(must_run=brokers)

    return heal


def _kill(ctx: FaultContext, brokers: list[int], sig: str = "KILL") -> None:
    for b in brokers:
        with contextlib.suppress(OdradekError):  # already dead: nothing to do
            ctx.cluster.kill(b, sig)


def _kill_leader(ctx: FaultContext, step: Step) -> Injected:
    p, leader = ctx.leader_of(step.pick)
    affected = ctx.led_by([leader])
    _kill(ctx, [leader])
    return Injected(f"broker {leader} (leader of {p})", [leader], affected,
                    _restart(ctx.cluster, [leader]))  # fmt: skip


def _kill_ctrl(ctx: FaultContext, step: Step) -> Injected:
    controller = ctx.cluster.controller_id()
    if controller is None or controller not in ctx.alive():
        controller = ctx.alive()[step.pick % len(ctx.alive())]
    affected = ctx.led_by([controller])
    _kill(ctx, [controller])
    return Injected(f"broker {controller} (controller)", [controller], affected,
                    _restart(ctx.cluster, [controller]))  # fmt: skip


def _kill_two(ctx: FaultContext, step: Step) -> Injected:
    alive = ctx.alive()
    victims = sorted(random.Random(step.pick).sample(alive, min(2, len(alive))))
    affected = ctx.led_by(victims)
    _kill(ctx, victims)
    return Injected(f"brokers {','.join(map(str, victims))}", victims, affected,
                    _restart(ctx.cluster, victims))  # fmt: skip


def _term(ctx: FaultContext, step: Step) -> Injected:
    p, leader = ctx.leader_of(step.pick)
    affected = ctx.led_by([leader])
    _kill(ctx, [leader], "TERM")
    return Injected(f"broker {leader} (leader of {p}, SIGTERM)", [leader], affected,
                    _restart(ctx.cluster, [leader]))  # fmt: skip


def _zombie(ctx: FaultContext, step: Step) -> Injected:
    p, leader = ctx.leader_of(step.pick)
    affected = ctx.led_by([leader])
    ctx.cluster.kill(leader, "STOP")
    hold = session_timeout_s(ctx.cluster) + ZOMBIE_EXTRA_S
    return Injected(f"broker {leader} (leader of {p}, SIGSTOP {hold:.1f}s)", [leader], affected,
                    _restart(ctx.cluster, [leader]), hold_s=hold)  # fmt: skip


def _kill_txn_coord(ctx: FaultContext, step: Step) -> Injected:
    if not ctx.txn_ids:
        raise Unavailable("kill-txn-coord needs transactional ids (--workload txn): skipped")
    tid = ctx.txn_ids[step.pick % len(ctx.txn_ids)]
    coordinator = txn_coordinator(alive_bootstrap(ctx.cluster), tid)
    if coordinator < 0 or coordinator not in ctx.alive():
        raise Unavailable(f"{tid} has no live transaction coordinator now: skipped")
    affected = ctx.led_by([coordinator])
    _kill(ctx, [coordinator])
    return Injected(f"broker {coordinator} (transaction coordinator of {tid})", [coordinator],
                    affected, _restart(ctx.cluster, [coordinator]))  # fmt: skip


def txn_coordinator(bootstrap: str, transactional_id: str) -> int:
    """The broker leading `transactional_id`'s partition of __transaction_state (-1: none)."""
    with Admin(bootstrap, request_timeout_ms=3000, **security.native()) as admin:
        (desc,) = admin.describe_topics([TRANSACTION_STATE_TOPIC])
    if desc.error_code or not desc.partitions:
        raise Unavailable(f"{TRANSACTION_STATE_TOPIC} does not exist yet: skipped")
    wanted = partition_for(transactional_id, len(desc.partitions))
    return next((p.leader for p in desc.partitions if p.partition == wanted), -1)


def _kill_member(ctx: FaultContext, step: Step) -> Injected:
    if ctx.members is None:
        raise Unavailable("kill-member needs share group members (--workload share): skipped")
    members = ctx.members
    victim = members.kill_one(step.pick)

    def heal() -> None:
        members.start_one()

    return Injected(f"share member {victim}", [], [], heal)


def _kill_share_coord(ctx: FaultContext, step: Step) -> Injected:
    if ctx.share_group is None:
        raise Unavailable("kill-share-coord needs a share group (--workload share): skipped")
    p = step.pick % ctx.partitions
    coordinator = share_coordinator(ctx.cluster, ctx.share_group, ctx.topic, p)
    if coordinator < 0 or coordinator not in ctx.alive():
        raise Unavailable(f"{ctx.share_group}'s share partition {p} has no live share "
                          "coordinator now: skipped")  # fmt: skip
    affected = ctx.led_by([coordinator])
    _kill(ctx, [coordinator])
    return Injected(f"broker {coordinator} (share coordinator of {ctx.topic}-{p})",
                    [coordinator], affected, _restart(ctx.cluster, [coordinator]))  # fmt: skip


def share_coordinator(cluster: LocalCluster, group: str, topic: str, partition: int) -> int:
    """The broker leading the `__share_group_state` partition of (group, topic, partition)
    (-1: none). The native door's metadata has no topic ids; the Kafka door's does."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient  # type: ignore[import-untyped]

    kafka = AdminClient({"bootstrap.servers": alive_kafka_bootstrap(cluster), "log_level": 0,
                         **security.librdkafka()})  # fmt: skip
    try:
        desc = kafka.describe_topics(TopicCollection([topic]))[topic].result(10)
    except Exception as exc:  # a broker died under it: this fault waits for another cycle
        raise Unavailable(f"{topic}'s topic id is not known now ({exc}): skipped") from None
    tid = desc.topic_id  # confluent-kafka's Uuid: its text is plain base64, so the two halves
    bits = (tid.get_most_significant_bits() % (1 << 64)) << 64
    topic_id = uuid.UUID(int=bits | tid.get_least_significant_bits() % (1 << 64))
    key = share_records.ShareKey(group, topic_id, partition)
    with Admin(alive_bootstrap(cluster), request_timeout_ms=3000, **security.native()) as admin:
        (state,) = admin.describe_topics([share_records.SHARE_STATE_TOPIC])
    if state.error_code or not state.partitions:
        raise Unavailable(f"{share_records.SHARE_STATE_TOPIC} does not exist yet: skipped")
    wanted = share_records.partition_for(key, len(state.partitions))
    return next((s.leader for s in state.partitions if s.partition == wanted), -1)


def alive_kafka_bootstrap(cluster: LocalCluster) -> str:
    """The Kafka bootstrap of the brokers that are running now (all of them if none is)."""
    states = cluster.broker_states()
    hosts = cluster.kafka_bootstrap.split(",")
    alive = [h for b, h in zip(cluster.broker_ids, hosts, strict=False)
             if states.get(b) == "alive"]  # fmt: skip
    return ",".join(alive or hosts)


def _torn_tail(ctx: FaultContext, step: Step) -> Injected:
    """A follower of a partition is killed and its active segment's tail torn."""
    p, leader = ctx.leader_of(step.pick)
    followers = [b for b in ctx.alive() if b != leader]
    victim = followers[step.pick % len(followers)] if followers else leader
    role = "a follower of" if followers else "the leader (no follower alive) of"
    affected = ctx.led_by([victim])
    _kill(ctx, [victim])
    torn = tear_tail(Path(ctx.cluster.broker(victim).log_dir) / f"{ctx.topic}-{p}",
                     random.Random(step.pick))  # fmt: skip
    return Injected(f"broker {victim} ({role} {ctx.topic}-{p}, killed; {torn})", [victim],
                    affected, _restart(ctx.cluster, [victim]))  # fmt: skip


def tear_tail(partition_dir: Path, rng: random.Random) -> str:
    """Cut the active segment inside its last batch and append garbage, as a crash mid-write
    leaves it; returns what was done, in words: "chaos-7-1/00000000000000000000.log cut by 13
    of its 5120 bytes, then 27 garbage bytes appended"."""
    segments = sorted(partition_dir.glob("*.log"))
    if not segments:
        return f"{partition_dir.name} has no segment to tear"
    active = segments[-1]
    size = active.stat().st_size
    cut = min(size, rng.randint(1, 60))
    garbage = rng.randint(1, 40)
    with open(active, "r+b") as f:
        f.truncate(size - cut)
        f.seek(0, os.SEEK_END)
        f.write(rng.randbytes(garbage))
    where = f"{partition_dir.name}/{active.name}"
    if size == 0:  # rolled a moment ago, or nothing written yet
        return f"{where} was empty: {garbage} garbage bytes written"
    return f"{where} cut by {cut} of its {size} bytes, then {garbage} garbage bytes appended"


def _net(ctx: FaultContext, step: Step) -> Injected:
    lab: Any = ctx.cluster.netlab
    p, leader = ctx.leader_of(step.pick)
    affected = ctx.led_by([leader])
    if step.kind == "net-isolate":
        lab.isolate(leader)
        what = "cut from peers and ZooKeeper"
    else:
        lab.cut_zookeeper(leader)
        what = "cut from ZooKeeper"
    hold = max(step.hold_s, session_timeout_s(ctx.cluster) + ZOMBIE_EXTRA_S)

    def heal() -> None:
        lab.heal(leader)
        ctx.cluster.wait_ready(must_run=[leader])

    return Injected(f"broker {leader} (leader of {p}) {what}", [leader], affected, heal, hold)


def _disk_full(ctx: FaultContext, step: Step) -> Injected:
    p, leader = ctx.leader_of(step.pick)
    affected = ctx.led_by([leader])
    ballast = Path(ctx.cluster.broker(leader).log_dir) / BALLAST
    fill(ballast)

    def heal() -> None:
        with contextlib.suppress(FileNotFoundError):
            ballast.unlink()
        if ctx.cluster.broker_states().get(leader) == "alive":
            ctx.cluster.kill(leader, "TERM")
        _restart(ctx.cluster, [leader])()

    return Injected(f"broker {leader} (leader of {p}) log disk full", [leader], affected, heal)


def fill(path: Path, chunk: int = 1 << 20) -> int:
    """Write zeros to `path` until the file system is full; returns the bytes written."""
    written = 0
    block = bytes(chunk)
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                written += f.write(block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(block) == 1:
                    return written
                block = bytes(max(1, len(block) // 16))


def session_timeout_s(cluster: LocalCluster) -> float:
    state = cluster.state
    ms = getattr(state, "session_timeout_ms", None) or cluster.session_timeout_ms
    return float(ms) / 1000


def _tmpfs_mb(cluster: LocalCluster) -> int:
    return int(getattr(cluster.state, "tmpfs_mb", 0) or 0)


_INJECT: dict[str, Callable[[FaultContext, Step], Injected]] = {
    "kill-leader": _kill_leader,
    "kill-ctrl": _kill_ctrl,
    "kill-two": _kill_two,
    "term": _term,
    "zombie": _zombie,
    "torn-tail": _torn_tail,
    "net-isolate": _net,
    "net-zk": _net,
    "disk-full": _disk_full,
    "kill-txn-coord": _kill_txn_coord,
    "kill-member": _kill_member,
    "kill-share-coord": _kill_share_coord,
}
