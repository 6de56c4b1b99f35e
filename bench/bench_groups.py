#!/usr/bin/env python3
"""Consumer-group measurements: rebalance time and group consume throughput.

1. Starts a local cluster (ZooKeeper + 3 brokers) in a temporary directory.
2. Rebalance time, 10 consumers (one process, asyncio) on a topic of 30 partitions, range
   assignor, session timeout 3 s, heartbeat interval 300 ms:
   - join: an 11th consumer subscribes; time until every member holds the same new generation
     and the 30 partitions are covered exactly once. The member then leaves (LeaveGroup).
   - kill: one of the 10 stops without a LeaveGroup (its heartbeats and connections simply end,
     as a SIGKILLed process's would); time until the 9 others hold all 30 partitions. This
     includes the session timeout, which is how the coordinator learns of the death.
   Each is repeated `--runs` times (default 10); p50 and min/max are printed.
3. Throughput: `--records` 100-byte records in a 6-partition topic, read by a group of 1 and then
   a group of 3 consumers, each consumer a separate process started at the same time (auto
   commit on, so partitions moved by the group's first rebalances are not read twice);
   records/s from the first record received to the last, and from the first `subscribe()` to
   the last (clients that fetch ahead in the background, as both do, have much of the data in
   memory before they hand out the first record).
4. The same with confluent-kafka consumers through the Kafka listener, in the same run
   (bench/bench_groups_kafka.py): rebalance join and kill times of a group of 10 (each its own
   process, the killed one SIGKILLed) on another 30-partition topic, and the throughput of 1
   and 3 consumers on the same 6-partition topic. `--no-kafka` skips this part.
5. The join and kill times again with confluent-kafka on KIP-848's consumer protocol
   (`group.protocol=consumer`: the broker assigns, `uniform`, and reconciles incrementally; the
   brokers' group.consumer session timeout and heartbeat interval are set to the classic
   figures above so the two compare).
6. A rolling restart of 6 confluent-kafka members (classic, range) on the 30-partition topic,
   dynamic and then static (`group.instance.id`, KIP-345): how long some partition had no
   owner, and the partition-seconds without one over the partition count.

Prints Markdown tables (native, confluent-kafka classic and KIP-848 side by side) and writes
JSON lines to bench/results/groups-<time>.jsonl (`client`: odradek, confluent-kafka or
confluent-kafka (KIP-848)).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_groups_kafka  # noqa: E402

from client import AsyncAdmin, AsyncConsumer, AsyncProducer, NewTopic  # noqa: E402

SESSION_MS = 3000
HEARTBEAT_MS = 300
KIP848 = "confluent-kafka (KIP-848)"
# KIP-848 members cannot choose their session timeout or heartbeat interval: the broker's
# group.consumer.* settings are set to the classic groups' figures so the two compare
KIP848_BROKER_SETTINGS: dict[str, int | bool | str] = {
    "group_consumer_session_timeout_ms": SESSION_MS,
    "group_consumer_heartbeat_interval_ms": HEARTBEAT_MS,
    "group_consumer_min_session_timeout_ms": SESSION_MS,  # below Kafka's bounds (45 s, 5 s)
    "group_consumer_min_heartbeat_interval_ms": HEARTBEAT_MS,
}
OPTS = {"session_timeout_ms": SESSION_MS, "heartbeat_interval_ms": HEARTBEAT_MS,
        "enable_auto_commit": False, "auto_offset_reset": "earliest",
        "fetch_max_wait_ms": 100}  # fmt: skip


class Polling:
    def __init__(self, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.consumer = AsyncConsumer(bootstrap, group_id=group, client_id=name, **OPTS)  # type: ignore[arg-type]
        self.consumer.subscribe([topic])
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            await self.consumer.poll(timeout_ms=100)

    @property
    def generation(self) -> int:
        group = self.consumer._group
        assert group is not None
        return group.membership.generation

    async def leave(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.consumer.close()

    async def crash(self) -> None:
        """Stop like a killed process: no LeaveGroup, no commit, connections dropped."""
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        group = self.consumer._group
        assert group is not None
        await group.membership.close(leave=False)
        group.enable_auto_commit = False
        await self.consumer.close()


def stable(members: list[Polling], partitions: int) -> bool:
    gens = {m.generation for m in members}
    owned = [tp for m in members for tp in m.consumer.assignment()]
    return len(gens) == 1 and len(owned) == partitions and len(set(owned)) == partitions


async def until(check, timeout_s: float = 60.0) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout_s:
            raise TimeoutError("group did not settle")
        await asyncio.sleep(0.005)
    return time.monotonic() - start


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    async with AsyncAdmin(bootstrap) as admin:
        await admin.create_topics([NewTopic(name, partitions, 1)])


async def rebalance_times(bootstrap: str, runs: int) -> dict[str, list[float]]:
    await create_topic(bootstrap, "rb30", 30)
    out: dict[str, list[float]] = {"join": [], "kill": []}
    members = [Polling(bootstrap, "rb", "rb30", f"c{i:02d}") for i in range(10)]
    await until(lambda: stable(members, 30), 120)
    for run in range(runs):
        t0 = time.monotonic()
        extra = Polling(bootstrap, "rb", "rb30", f"new{run:02d}")
        grown = [*members, extra]
        await until(lambda grown=grown: stable(grown, 30))
        out["join"].append(time.monotonic() - t0)
        await extra.leave()
        await until(lambda: stable(members, 30))
        victim = members.pop(0)
        t0 = time.monotonic()
        await victim.crash()
        await until(lambda: stable(members, 30))
        out["kill"].append(time.monotonic() - t0)
        members.append(Polling(bootstrap, "rb", "rb30", f"r{run:02d}"))
        await until(lambda: stable(members, 30))
        print(f"run {run}: join {out['join'][-1]:.3f} s, kill {out['kill'][-1]:.3f} s",
              file=sys.stderr)  # fmt: skip
    for m in members:
        await m.leave()
    return out


def _consume_process(bootstrap: str, group: str, topic: str, total: int, q) -> None:  # type: ignore[no-untyped-def]
    async def run() -> tuple[int, float, float, float]:
        opts = {**OPTS, "enable_auto_commit": True}  # revoking members commit: no re-reads
        consumer = AsyncConsumer(bootstrap, group_id=group, max_poll_records=5000, **opts)  # type: ignore[arg-type]
        start = time.monotonic()
        consumer.subscribe([topic])
        count, first, last, idle_since = 0, 0.0, 0.0, time.monotonic()
        while time.monotonic() - idle_since < 3.0:
            polled = await consumer.poll(timeout_ms=200)
            n = sum(len(v) for v in polled.values())
            if n:
                now = time.monotonic()
                first = first or now
                count, last, idle_since = count + n, now, now
        await consumer.close()
        return count, first, last, start

    q.put(asyncio.run(run()))


async def fill(bootstrap: str, topic: str, records: int) -> None:
    async with AsyncAdmin(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 6, 1)])
    value = b"x" * 100
    async with AsyncProducer(bootstrap) as producer:
        per = records // 6
        for p in range(6):
            for i in range(0, per, 10_000):
                await producer.send_batch(topic, [value] * min(10_000, per - i), partition=p)
        await producer.flush()


def throughput(bootstrap: str, topic: str, consumers: int, total: int) -> dict[str, float]:
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    group = f"tp-{consumers}-{time.time_ns()}"
    procs = [ctx.Process(target=_consume_process, args=(bootstrap, group, topic, total, q))
             for _ in range(consumers)]  # fmt: skip
    for p in procs:
        p.start()
    results = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    count = sum(r[0] for r in results)
    first = min(r[1] for r in results if r[0])
    last = max(r[2] for r in results if r[0])
    start = min(r[3] for r in results)
    return bench_groups_kafka.rates(consumers, count, start, first, last)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--records", type=int, default=600_000)
    ap.add_argument("--no-kafka", action="store_true", help="native groups only")
    args = ap.parse_args()
    from deploy.cluster import LocalCluster

    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-groups-"))
    cluster = LocalCluster(tmp / "cluster", brokers=3, progress=lambda s: print(s, file=sys.stderr),
                           broker_settings=KIP848_BROKER_SETTINGS)  # fmt: skip
    lines: list[dict[str, object]] = []
    try:
        bootstrap = cluster.up()
        times = asyncio.run(rebalance_times(bootstrap, args.runs))
        for kind, values in times.items():
            lines.append({"measure": f"rebalance_{kind}", "client": "odradek", "runs": values,
                          "p50_s": statistics.median(values)})  # fmt: skip
        if not args.no_kafka:
            asyncio.run(create_topic(bootstrap, "krb30", bench_groups_kafka.PARTITIONS))
            for protocol, client in (("classic", "confluent-kafka"), ("consumer", KIP848)):
                times = bench_groups_kafka.rebalance_times(
                    cluster.kafka_bootstrap, "krb30", args.runs, protocol
                )
                for kind, values in times.items():
                    lines.append({"measure": f"rebalance_{kind}", "client": client,
                                  "runs": values, "p50_s": statistics.median(values)})  # fmt: skip
            for static in (False, True):
                lines.append({"measure": "rolling_restart", "client": "confluent-kafka",
                              "static": static, **bench_groups_kafka.rolling_restart(
                                  cluster.kafka_bootstrap, "krb30", static)})  # fmt: skip
        asyncio.run(fill(bootstrap, "tput", args.records))
        for n in (1, 3):
            lines.append({"measure": "group_throughput", "client": "odradek",
                          **throughput(bootstrap, "tput", n, args.records)})  # fmt: skip
            if not args.no_kafka:
                lines.append({"measure": "group_throughput", "client": "confluent-kafka",
                              **bench_groups_kafka.throughput(cluster.kafka_bootstrap, "tput",
                                                              n)})  # fmt: skip
    finally:
        cluster.down(purge=True)
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    with (results / f"groups-{time.strftime('%Y%m%d-%H%M%S')}.jsonl").open("w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    print_table(lines)
    return 0


def _cell(line: dict[str, object] | None) -> str:
    if line is None:
        return "-"
    if line["measure"] == "rolling_restart":
        return (f"some partition unowned {line['uncovered_s']:.3f} s; group stalled "
                f"{line['stalled_partition_s']:.3f} s (partition-seconds / partitions); "
                f"{line['total_s']:.1f} s in all")  # fmt: skip
    if line["measure"] == "group_throughput":
        return (f"{line['from_subscribe_records_per_s']:,.0f} records/s from subscribe "
                f"({line['records']:,} in {line['seconds_from_subscribe']:.2f} s); "
                f"{line['records_per_s']:,.0f} from the first record")  # fmt: skip
    runs = line["runs"]
    assert isinstance(runs, list)
    return f"p50 {line['p50_s']:.3f} s (min {min(runs):.3f}, max {max(runs):.3f})"


def print_table(lines: list[dict[str, object]]) -> None:
    """One row per measurement: the native group's figure beside confluent-kafka's."""
    rows = [("rebalance_join", None, "rebalance when an 11th member joins (10 consumers, 30 "
             "partitions)"), ("rebalance_kill", None, "rebalance when a member is killed (10 "
             "consumers, 30 partitions)"), ("group_throughput", 1, "group consume, 1 consumer"),
            ("group_throughput", 3, "group consume, 3 consumers (separate processes)")]  # fmt: skip

    def find(measure: str, consumers: int | None, client: str) -> dict[str, object] | None:
        return next((x for x in lines if x["measure"] == measure and x["client"] == client
                     and (consumers is None or x["consumers"] == consumers)), None)  # fmt: skip

    print("| measurement | odradek consumers | confluent-kafka consumers | confluent-kafka, "
          "KIP-848 |\n| --- | --- | --- | --- |")  # fmt: skip
    for measure, consumers, label in rows:
        cells = [_cell(find(measure, consumers, c)) for c in ("odradek", "confluent-kafka", KIP848)]
        print(f"| {label} | {' | '.join(cells)} |")
    roll = [x for x in lines if x["measure"] == "rolling_restart"]
    if roll:
        n = roll[0]["members"]
        print(f"\n| rolling restart of {n} confluent-kafka members (30 partitions, range) | "
              "stop consuming |\n| --- | --- |")  # fmt: skip
        for x in roll:
            kind = "static (group.instance.id)" if x["static"] else "dynamic"
            print(f"| {kind} | {_cell(x)} |")


if __name__ == "__main__":
    raise SystemExit(main())
