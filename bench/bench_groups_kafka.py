#!/usr/bin/env python3
"""Consumer groups of confluent-kafka (librdkafka) consumers on odradek's coordinator, measured
as bench/bench_groups.py measures native groups (which runs these in the same run):

- Rebalance time, 10 consumers (each its own process, so one can be SIGKILLed) on a topic of 30
  partitions, range assignor, session timeout 3 s, heartbeat interval 300 ms:
  - join: an 11th consumer subscribes; time from its `subscribe()` until all 11 hold
    assignments that cover the 30 partitions exactly once (each member reports every
    assignment and revocation, from librdkafka's rebalance callbacks, on its stdout). The
    member then closes (LeaveGroup) and the 10 settle again.
  - kill: one of the 10 is SIGKILLed; time until the 9 others hold all 30 partitions. This
    includes the session timeout, which is how the coordinator learns of the death.
- Throughput: the 6-partition topic of 100 B records bench_groups.py filled, read by a group of
  1 and then 3 consumers, each its own process (auto commit on); records/s from the first
  record received to the last, and from the first `subscribe()` to the last (librdkafka
  fetches ahead in its own threads, up to `queued.max.messages.kbytes` = 64 MiB per consumer,
  from the moment it has its assignment, so the first count leaves that fetching out).

The members are this file run as a child: `python bench/bench_groups_kafka.py member ...` or
`... consume ...`; each prints JSON lines. Times are CLOCK_MONOTONIC, shared by the processes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SESSION_MS = 3000
HEARTBEAT_MS = 300
MEMBERS = 10
ROLLING_MEMBERS = 6
PARTITIONS = 30
SETTLE_TIMEOUT_S = 120.0
IDLE_S = 3.0


def _config(
    bootstrap: str, group: str, name: str, protocol: str = "classic", **extra: Any
) -> dict[str, Any]:
    """A consumer's settings. KIP-848 (`protocol="consumer"`): the broker assigns, and holds
    the session timeout and heartbeat interval (librdkafka refuses the classic settings)."""
    common = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
              "auto.offset.reset": "earliest", "enable.partition.eof": False}  # fmt: skip
    if protocol == "consumer":
        return {**common, "group.protocol": "consumer", **extra}
    return {**common, "partition.assignment.strategy": "range", "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS, **extra}  # fmt: skip


def _emit(**line: Any) -> None:
    print(json.dumps(line), flush=True)


# ----- children --------------------------------------------------------------------------------


def run_member(
    bootstrap: str, group: str, topic: str, name: str, protocol: str, instance: str | None
) -> None:
    """Poll, reporting each assignment and revocation, until SIGTERM (close: LeaveGroup, but
    none for a static member, `instance` being its group.instance.id)."""
    from confluent_kafka import Consumer

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    extra: dict[str, Any] = {"enable.auto.commit": False}
    if instance:
        extra["group.instance.id"] = instance
    c = Consumer(_config(bootstrap, group, name, protocol, **extra))

    def assigned(_c: Any, parts: list[Any]) -> None:
        _emit(name=name, event="assigned", partitions=[p.partition for p in parts],
              t=time.monotonic())  # fmt: skip

    def revoked(_c: Any, parts: list[Any]) -> None:
        _emit(name=name, event="revoked", partitions=[p.partition for p in parts],
              t=time.monotonic())  # fmt: skip

    _emit(name=name, event="subscribed", t=time.monotonic())
    c.subscribe([topic], on_assign=assigned, on_revoke=revoked)
    while not stop.is_set():
        c.poll(0.05)
    c.close()


def run_consume(bootstrap: str, group: str, topic: str) -> None:
    """Read until nothing came for IDLE_S; print the count and the first and last times."""
    from confluent_kafka import Consumer

    c = Consumer(_config(bootstrap, group, f"tput-{os.getpid()}"))
    start = time.monotonic()
    c.subscribe([topic])
    count, first, last, idle_since = 0, 0.0, 0.0, time.monotonic()
    while time.monotonic() - idle_since < IDLE_S:
        msgs = c.consume(num_messages=10_000, timeout=0.2)
        n = sum(1 for m in msgs if m.error() is None)
        if n:
            now = time.monotonic()
            first = first or now
            count, last, idle_since = count + n, now, now
    c.close()
    _emit(count=count, start=start, first=first, last=last)


# ----- the group of member processes -----------------------------------------------------------


class Members:
    """Member processes and what each last reported holding, read from their stdout.
    `protocol`: "classic" (eager range: each assignment is the whole one) or "consumer"
    (KIP-848: assignments and revocations are increments); `static`: each member's
    group.instance.id is its name."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str = "classic",
                 static: bool = False) -> None:  # fmt: skip
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.protocol, self.static = protocol, static
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.held: dict[str, set[int]] = {}
        self.subscribed_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def start(self, name: str) -> None:
        proc = subprocess.Popen(
            [sys.executable, str(HERE), "member", "--bootstrap", self.bootstrap, "--group",
             self.group, "--topic", self.topic, "--name", name, "--protocol", self.protocol,
             *(["--instance", name] if self.static else [])],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self.procs[name] = proc
        with self._lock:
            self.held[name] = set()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            with self._lock:
                if event["event"] == "subscribed":
                    self.subscribed_at[event["name"]] = event["t"]
                elif event["event"] == "assigned" and self.protocol == "consumer":
                    self.held[event["name"]] |= set(event["partitions"])
                elif event["event"] == "assigned":  # eager (range): the whole assignment
                    self.held[event["name"]] = set(event["partitions"])
                elif event["name"] in self.held:
                    self.held[event["name"]] -= set(event["partitions"])

    def covers(self, names: list[str]) -> bool:
        """Each of `names` holds partitions, and together exactly the topic's, once each."""
        with self._lock:
            owned = [p for n in names for p in self.held.get(n, set())]
            return (all(self.held.get(n) for n in names) and len(owned) == PARTITIONS
                    and set(owned) == set(range(PARTITIONS)))  # fmt: skip

    def wait(self, names: list[str]) -> float:
        """Wait until `names` cover the topic; the (monotonic) time it was seen."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while not self.covers(names):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the group did not settle: {self.held}")
            time.sleep(0.005)
        return time.monotonic()

    def close(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        with self._lock:
            del self.held[name]

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.kill()
        proc.wait(timeout=10)
        with self._lock:
            del self.held[name]

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.kill()
        for proc in self.procs.values():
            proc.wait(timeout=10)
        self.procs.clear()


def rebalance_times(
    kafka_bootstrap: str, topic: str, runs: int, protocol: str = "classic"
) -> dict[str, list[float]]:
    """`topic` has PARTITIONS partitions; join and kill times over `runs` runs."""
    members = Members(kafka_bootstrap, f"krb-{protocol}-{time.time_ns()}", topic, protocol)
    out: dict[str, list[float]] = {"join": [], "kill": []}
    names = [f"c{i:02d}" for i in range(MEMBERS)]
    try:
        for n in names:
            members.start(n)
        members.wait(names)
        for run in range(runs):
            extra = f"new{run:02d}"
            members.start(extra)
            settled = members.wait([*names, extra])
            out["join"].append(settled - members.subscribed_at[extra])
            members.close(extra)
            members.wait(names)
            victim = names.pop(0)
            t0 = time.monotonic()
            members.kill(victim)
            out["kill"].append(members.wait(names) - t0)
            names.append(f"r{run:02d}")
            members.start(names[-1])
            members.wait(names)
            print(f"confluent {protocol} run {run}: join {out['join'][-1]:.3f} s, "
                  f"kill {out['kill'][-1]:.3f} s", file=sys.stderr)  # fmt: skip
    finally:
        members.stop_all()
    return out


def rolling_restart(kafka_bootstrap: str, topic: str, static: bool) -> dict[str, float]:
    """A group of ROLLING_MEMBERS (classic, range) on `topic` (PARTITIONS partitions) is
    restarted one member at a time, as a deploy does: each is closed (SIGTERM: a dynamic member
    leaves the group, a static one does not) and started again at once under the same name
    (and, static, the same group.instance.id), and the next waits until the group covers the
    topic again. Sampled every 5 ms from the first close to the last settle:
    - `uncovered_s`: how long some partition had no owner (someone stopped consuming);
    - `stalled_partition_s`: the partition-seconds without an owner, over PARTITIONS: how long
      the whole group was, in effect, stopped."""
    members = Members(kafka_bootstrap, f"roll-{static}-{time.time_ns()}", topic, static=static)
    names = [f"m{i}" for i in range(ROLLING_MEMBERS)]
    sums = {"uncovered": 0.0, "stalled": 0.0}
    done = threading.Event()

    def sample() -> None:
        last = time.monotonic()
        while not done.wait(0.005):
            now = time.monotonic()
            with members._lock:
                missing = PARTITIONS - len({p for m in names for p in members.held.get(m, ())})
            sums["uncovered"] += (now - last) if missing else 0.0
            sums["stalled"] += (now - last) * missing / PARTITIONS
            last = now

    try:
        for n in names:
            members.start(n)
        members.wait(names)
        sampler = threading.Thread(target=sample, daemon=True)
        t0 = time.monotonic()
        sampler.start()
        for n in names:
            members.close(n)
            members.start(n)
            members.wait(names)
        done.set()
        sampler.join()
        total = time.monotonic() - t0
    finally:
        done.set()
        members.stop_all()
    uncovered, stalled = sums["uncovered"], sums["stalled"]
    print(f"confluent rolling restart static={static}: uncovered {uncovered:.3f} s, "
          f"stalled {stalled:.3f} s, total {total:.3f} s", file=sys.stderr)  # fmt: skip
    return {"members": ROLLING_MEMBERS, "uncovered_s": uncovered,
            "stalled_partition_s": stalled, "total_s": total}  # fmt: skip


def throughput(kafka_bootstrap: str, topic: str, consumers: int) -> dict[str, float]:
    group = f"ktp-{consumers}-{time.time_ns()}"
    procs = [
        subprocess.Popen([sys.executable, str(HERE), "consume", "--bootstrap", kafka_bootstrap,
                          "--group", group, "--topic", topic], stdout=subprocess.PIPE, text=True)
        for _ in range(consumers)
    ]  # fmt: skip
    got = [json.loads(p.communicate(timeout=600)[0].splitlines()[-1]) for p in procs]
    count = sum(r["count"] for r in got)
    start = min(r["start"] for r in got)
    first = min(r["first"] for r in got if r["count"])
    last = max(r["last"] for r in got if r["count"])
    return rates(consumers, count, start, first, last)


def rates(consumers: int, count: int, start: float, first: float, last: float) -> dict[str, float]:
    """A throughput line (bench_groups.py's too): records/s from the first record received to
    the last, and from the first `subscribe()` to the last record."""
    return {"consumers": consumers, "records": count, "seconds": last - first,
            "records_per_s": count / (last - first), "seconds_from_subscribe": last - start,
            "from_subscribe_records_per_s": count / (last - start)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("role", choices=["member", "consume"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--name", default="member")
    ap.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    ap.add_argument("--instance", help="group.instance.id: a static member")
    a = ap.parse_args()
    if a.role == "member":
        run_member(a.bootstrap, a.group, a.topic, a.name, a.protocol, a.instance)
    else:
        run_consume(a.bootstrap, a.group, a.topic)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
