"""`make bench` part `user`: the paths users take, through the public client API only.

Every case runs in its own process (`bench_user.py worker CASE ...`) whose only imports from the
project are `from client import ...` (Producer, AsyncProducer, Consumer, TopicPartition), so the
same worker runs unchanged against this tree and against a git worktree of the baseline ref
(PYTHONPATH and cwd set to that side's tree; bench/bench_baseline.py's worktree and Side):

produce-sync   `Producer.send()` in a plain loop, then `flush()`; 100 B, acks 1, linger default,
               1 partition: records/s from the first send to the end of flush.
produce-async  `await AsyncProducer.send()` per record and `asyncio.gather` per 1,000 futures
               (asyncio.run, the loop a user gets).
produce-async-floor  the same loop (same code, same n, asyncio.run, a worker process of its own)
               over a `send` that does no work: the ceiling the loop shape itself leaves. No
               broker. An exception to "public API only", as the hop stamps below: its settled
               futures are made with client/record_future.py and client/accumulator.py (in a
               tree from before them, asyncio futures: what that tree's AsyncProducer returned).
consume        a plain `Consumer.poll()` loop from the start of the produce-sync topic until N
               records came back: records/s.
latency        a `Consumer` (defaults, auto_offset_reset latest, position pinned before the
               first send) polling in one process, the sync `Producer` (linger_ms=0) in another
               sending 100 B records at --rate on an absolute schedule; each value carries its
               send time as CLOCK_MONOTONIC ns (system-wide on Linux, so both processes read
               the same clock); RF 1 acks 1 and RF 3 acks=all. Warm-up records (send time -1)
               go first, acknowledged one by one, and are skipped by the consumer.
               Where the time goes (the latency rows' hop_us_*): an exception to "public
               API only", two stamps on the same clock taken inside the client, by wrapping
               `transport.connection.encode_request` (the Produce request's frame is made, just
               before its write) and `_BrokerProtocol.buffer_updated` (`data_received` in
               trees before it: bytes from the broker arrive): send -> write in the producer,
               send -> the fetch answer's arrival and arrival -> poll()'s return in the
               consumer. What lies between write and arrival is the two kernel hops and the
               broker. A side without those names runs without.
               Both latency workers take an optional last argument, a JSON object of client
               settings (e.g. TLS: security_protocol, ssl_cafile) given to both clients
               (`run_latency(..., options=)`; bench_tail.py's TLS case).

Both sides get a cluster of 3 brokers (RF 3 needs them) through their own CLI; each round runs
every case on both sides back to back, alternating which side goes first. NATS JetStream and
Redis Streams latency come from the peers' harness (ONLY=latency) in the same run, unless the
`peers` part runs anyway. Rows: throughput rows mode "user" (api, msgs_per_s), latency rows
mode "user-latency" (rf, acks, e2e_ms_p50/p99/max, ack_ms_p50/p99); both with side, ref, round.
A latency row also has its side's brokers' event-loop lag over the producer's run, read from
their metrics before and after it (deploy/loop_lag.py): `loop_lag` {broker: p50_ms, p99_ms,
max_ms, samples} and the worst broker's `loop_lag_ms_p99` and `loop_lag_ms_max` (none from a
tree whose brokers do not export it). And what a record costs each process, whatever the
machine's load (CPU time is not wall time): `producer_cpu_us_per_record` and
`producer_wakeups_per_record` (the producer process's CPU, all threads, and its voluntary
context switches over the measured sends, getrusage), the same for the consumer, and
`broker_cost` {broker: cpu_us_per_record, wakeups_per_record} over the producer's run
(/proc/<pid>/stat and each thread's voluntary_ctxt_switches; a local cluster's pids).
bench_report.py turns them into tables beside the targets of issue 12.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import json
import os
import resource
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SIZE = 100
GATHER_EVERY = 1000  # produce-async: futures per asyncio.gather
WARMUP_RECORDS = 20
WARMUP_NS = -1
CASE_TIMEOUT_S = 600
LATENCY_CASES = ((1, "1"), (3, "all"))  # (replication factor, acks)
_TS = struct.Struct(">q")


def now_ns() -> int:
    """CLOCK_MONOTONIC: one clock for every process of the machine (Linux)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def percentile(sorted_values: list[float], pct: float) -> float | None:
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, round(pct / 100.0 * (len(sorted_values) - 1))))
    return round(sorted_values[k], 3)


# ----- workers: public API only, run with PYTHONPATH = the side's tree ---------------------------


def produce_sync(bootstrap: str, topic: str, n: int) -> dict[str, Any]:
    from client import Producer

    value = bytes(SIZE)
    with Producer(bootstrap, acks=1) as producer:
        producer.send(topic, value).get(timeout=30)  # connect and learn the metadata first
        start = time.perf_counter()
        for _ in range(n):
            producer.send(topic, value)
        producer.flush()
        elapsed = time.perf_counter() - start
    return {"api": "sync send+flush", "messages": n, "msgs_per_s": round(n / elapsed)}


async def _send_and_gather(producer: Any, topic: str, n: int) -> float:
    """The user's loop of produce-async and of its floor: seconds for n sends, gathered per
    GATHER_EVERY (after one record sent and awaited alone: connected, metadata known)."""
    value = bytes(SIZE)
    await (await producer.send(topic, value))
    start = time.perf_counter()
    for done in range(0, n, GATHER_EVERY):
        futures = [await producer.send(topic, value) for _ in range(min(GATHER_EVERY, n - done))]
        await asyncio.gather(*futures)
    return time.perf_counter() - start


def produce_async(bootstrap: str, topic: str, n: int) -> dict[str, Any]:
    from client import AsyncProducer

    async def run() -> float:
        producer = AsyncProducer(bootstrap, acks=1)
        await producer.start()
        try:
            return await _send_and_gather(producer, topic, n)
        finally:
            await producer.close()

    elapsed = asyncio.run(run())
    return {"api": "async send+gather/1000", "messages": n, "msgs_per_s": round(n / elapsed)}


def _settled_futures(loop: asyncio.AbstractEventLoop, count: int) -> list[Any]:
    """`count` settled futures of the class this tree's `AsyncProducer.send` returns.

    RecordFutures over one batch acknowledged once (`ProducerBatch.complete`, as the sender
    does; their `result()` builds each record's RecordMetadata, as in produce-async); in a
    tree from before client/record_future.py, asyncio futures (what its producer returned).
    """
    try:
        from client import TopicPartition
        from client.accumulator import ProducerBatch
        from client.record_future import RecordFuture
    except ImportError:
        futures = []
        for _ in range(count):
            future = loop.create_future()
            future.set_result(None)
            futures.append(future)
        return futures
    batch = ProducerBatch(TopicPartition("floor", 0), 0, 0, loop)
    batch.stamps.extend([0] * count)  # the records' timestamps, read by result()
    batch.complete(0, -1)  # base offset 0, no LogAppendTime
    return [RecordFuture(batch, index) for index in range(count)]


class _IdleProducer:
    """A `send` that does no work: each call hands out the next of `futures`, in turn."""

    def __init__(self, futures: list[Any]) -> None:
        self._next = itertools.cycle(futures).__next__

    async def send(self, topic: str, value: bytes) -> Any:
        return self._next()


def produce_async_floor(topic: str, n: int) -> dict[str, Any]:
    """produce-async's loop (`_send_and_gather`, same n, asyncio.run) with no producer work.

    What is left is the loop shape: a coroutine call per record and `asyncio.gather` over each
    GATHER_EVERY futures (it asks each future for its loop, adds and runs its done callback,
    and reads its exception and result). `send` hands out GATHER_EVERY settled futures in
    turn, made before the clock starts: any GATHER_EVERY in a row are distinct (gather counts
    a repeated future once), and no more of them are alive than in produce-async (200,000
    would cost this case its own full GC passes).

    They are settled before gather sees them, as a third or more of produce-async's are: their
    gather callbacks run in one loop pass per batch (client/record_future.py `run_soon`), as
    those of a batch acknowledged after gather registered do; a tree from before run_soon makes
    one `loop.call_soon` per settled future, so its floor is that much lower.
    """

    async def run() -> float:
        producer = _IdleProducer(_settled_futures(asyncio.get_running_loop(), GATHER_EVERY))
        return await _send_and_gather(producer, topic, n)

    elapsed = asyncio.run(run())
    api = f"async send+gather/{GATHER_EVERY}, send does no work"
    return {"api": api, "messages": n, "msgs_per_s": round(n / elapsed)}


def consume(bootstrap: str, topic: str, n: int) -> dict[str, Any]:
    from client import Consumer, TopicPartition

    got = 0
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        start = time.perf_counter()
        deadline = time.monotonic() + 120
        while got < n and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                got += len(records)
        elapsed = time.perf_counter() - start
    return {"api": "sync poll", "messages": got, "msgs_per_s": round(got / elapsed)}


def _stamp_arrivals(into: list[int]) -> None:
    """Stamp every read of bytes from a broker (see the module docstring: hop stamps)."""
    try:
        from transport.connection import _BrokerProtocol
    except ImportError:
        return
    # buffer_updated since the client reads into its own buffers; data_received before
    name = "buffer_updated" if "buffer_updated" in vars(_BrokerProtocol) else "data_received"
    received = getattr(_BrokerProtocol, name)

    def stamped(self: Any, data: Any) -> None:
        into.append(now_ns())
        received(self, data)

    setattr(_BrokerProtocol, name, stamped)


def _stamp_produce_writes(into: list[int]) -> None:
    """Stamp every Produce request's frame as it is made, just before its write."""
    try:
        import transport.connection as connection
        from protocol.api.produce import ProduceRequest
    except ImportError:
        return
    # the frame's encoder as the connection module imports it: encode_request_chunks since the
    # produce path writes big batches as they are, encode_request in a baseline tree before it
    name = (
        "encode_request_chunks"
        if hasattr(connection, "encode_request_chunks")
        else "encode_request"
    )
    encode = getattr(connection, name)

    def stamped(request: Any, *args: Any) -> Any:
        if type(request) is ProduceRequest:
            into.append(now_ns())
        return encode(request, *args)

    setattr(connection, name, stamped)


def _hops(name: str, values_ns: list[int]) -> dict[str, Any]:
    values = sorted(v / 1000 for v in values_ns)
    return {f"hop_us_{name}_p50": percentile(values, 50),
            f"hop_us_{name}_p99": percentile(values, 99)}  # fmt: skip


def latency_consumer(
    bootstrap: str, topic: str, n: int, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    from client import Consumer, TopicPartition

    lat: list[float] = []
    arrivals: list[int] = []
    to_arrival: list[int] = []
    to_return: list[int] = []
    _stamp_arrivals(arrivals)
    with Consumer(bootstrap, **(options or {})) as consumer:  # auto_offset_reset latest
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.position(tp)  # pin "latest" before the producer starts
        print("ready", flush=True)
        used = None  # the process's CPU and wake-ups, from the first record on
        deadline = time.monotonic() + 120
        while len(lat) < n and time.monotonic() < deadline:
            arrivals.clear()
            batch = consumer.poll(timeout_ms=500)
            now = now_ns()
            if used is None and batch:
                used = process_cost()
            arrived = arrivals[-1] if arrivals else None  # the fetch answer that brought them
            for records in batch.values():
                for r in records:
                    (sent,) = _TS.unpack_from(r.value or bytes(8))
                    if sent != WARMUP_NS:
                        lat.append((now - sent) / 1e6)
                        if arrived is not None and sent <= arrived:
                            to_arrival.append(arrived - sent)
                            to_return.append(now - arrived)
    lat.sort()
    return {"received": len(lat), "e2e_ms_p50": percentile(lat, 50),
            "e2e_ms_p99": percentile(lat, 99), "e2e_ms_p999": percentile(lat, 99.9),
            "e2e_ms_max": percentile(lat, 100),
            **_hops("send_to_arrival", to_arrival),
            **_hops("arrival_to_poll", to_return),
            **cost_per_record("consumer", used, len(lat))}  # fmt: skip


def process_cost() -> tuple[float, int]:
    """This process's CPU seconds (every thread, user + system) and its wake-ups (voluntary
    context switches: each time one of its threads slept and was woken) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_nvcsw


def cost_per_record(who: str, since: tuple[float, int] | None, n: int) -> dict[str, float]:
    """CPU microseconds and wake-ups per record since `since` (load-independent, unlike the
    wall-clock figures: what a record costs a process, not how long it waited for a CPU)."""
    if since is None or n <= 0:
        return {}
    cpu_s, wakes = process_cost()
    return {f"{who}_cpu_us_per_record": round((cpu_s - since[0]) / n * 1e6, 1),
            f"{who}_wakeups_per_record": round((wakes - since[1]) / n, 2)}  # fmt: skip


def latency_producer(
    bootstrap: str, topic: str, n: int, rate: int, acks: str, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    from client import Producer

    pad = bytes(SIZE - _TS.size)
    acked: list[float] = []
    sends: list[int] = []
    writes: list[int] = []

    def on_ack(sent: int) -> Callable[[Any], None]:
        return lambda _f: acked.append((now_ns() - sent) / 1e6)

    with Producer(bootstrap, acks=1 if acks == "1" else "all", linger_ms=0,
                  **(options or {})) as producer:  # fmt: skip
        for _ in range(WARMUP_RECORDS):
            producer.send(topic, _TS.pack(WARMUP_NS) + pad).get(timeout=30)
        _stamp_produce_writes(writes)
        used = process_cost()
        start = time.perf_counter()
        for i in range(n):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent = now_ns()
            sends.append(sent)
            producer.send(topic, _TS.pack(sent) + pad).add_done_callback(on_ack(sent))
        producer.flush()
        cost = cost_per_record("producer", used, n)
    acked.sort()
    to_write = []  # each send to the first Produce frame made after it
    for sent in sends:
        k = bisect.bisect_left(writes, sent)
        if k < len(writes):
            to_write.append(writes[k] - sent)
    return {"ack_ms_p50": percentile(acked, 50), "ack_ms_p99": percentile(acked, 99),
            **_hops("send_to_write", to_write), **cost}  # fmt: skip


def _options(rest: list[str]) -> dict[str, Any] | None:
    """A latency worker's optional last argument: client settings as a JSON object."""
    return dict(json.loads(rest[0])) if rest else None


def worker_main(argv: list[str]) -> int:
    case, bootstrap, topic, n = argv[0], argv[1], argv[2], int(argv[3])
    if case == "produce-sync":
        out = produce_sync(bootstrap, topic, n)
    elif case == "produce-async":
        out = produce_async(bootstrap, topic, n)
    elif case == "produce-async-floor":
        out = produce_async_floor(topic, n)
    elif case == "consume":
        out = consume(bootstrap, topic, n)
    elif case == "latency-consumer":
        out = latency_consumer(bootstrap, topic, n, _options(argv[4:]))
    elif case == "latency-producer":
        out = latency_producer(bootstrap, topic, n, int(argv[4]), argv[5], _options(argv[6:]))
    else:
        print(f"unknown case {case!r}", file=sys.stderr)
        return 2
    print(json.dumps(out), flush=True)
    return 0


# ----- the orchestration (run by bench_cluster.py) ----------------------------------------------


def _worker_cmd(*args: object) -> list[str]:
    return [sys.executable, str(HERE), "worker", *map(str, args)]


def _last_json(text: str) -> dict[str, Any]:
    return dict(json.loads(text.strip().splitlines()[-1]))


def run_worker(side: Any, *args: object) -> dict[str, Any]:
    out = subprocess.run(_worker_cmd(*args), cwd=side.root, env=side.env(), capture_output=True,
                         text=True, timeout=CASE_TIMEOUT_S)  # fmt: skip
    if out.returncode != 0 or not out.stdout.strip():
        return {"error": out.stderr.strip()[-500:] or f"exit {out.returncode}"}
    return _last_json(out.stdout)


def loop_lag_brokers(cluster_dir: Path) -> list[tuple[int, str, int]]:
    """(broker id, host, metrics port) of a local cluster, from its state file (none from a
    tree whose brokers serve no metrics)."""
    try:
        state = json.loads((cluster_dir / "cluster.json").read_text())
    except (OSError, ValueError):
        return []
    host = state.get("host", "127.0.0.1")
    return [(b["id"], b.get("host") or host, b["metrics_port"])
            for b in state.get("brokers", []) if b.get("metrics_port")]  # fmt: skip


def loop_lag_readings(brokers: Sequence[tuple[int, str, int]]) -> dict[int, Any]:
    """Each broker's loop-lag histogram now (None: no answer, or a broker without it)."""
    from deploy.loop_lag import lag_buckets  # this tree's: not the workers' (baseline) tree

    out: dict[int, Any] = {}
    for broker, host, port in brokers:
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as answer:
                out[broker] = lag_buckets(answer.read().decode())
        except (OSError, ValueError):
            out[broker] = None
    return out


def broker_costs(cluster_dir: Path) -> dict[int, tuple[float, int]]:
    """Each local broker's CPU seconds (utime + stime, /proc/<pid>/stat) and wake-ups
    (voluntary context switches of all its threads, /proc/<pid>/task/*/status) now."""
    try:
        state = json.loads((cluster_dir / "cluster.json").read_text())
    except (OSError, ValueError, AttributeError):
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    costs = {}
    for b in state.get("brokers", []):
        pid = b.get("pid")
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            wakes = sum(int(line.split()[1])
                        for task in Path(f"/proc/{pid}/task").iterdir()
                        for line in (task / "status").read_text().splitlines()
                        if line.startswith("voluntary_ctxt_switches"))  # fmt: skip
        except (OSError, IndexError, ValueError):
            continue
        costs[b["id"]] = ((int(fields[11]) + int(fields[12])) / ticks, wakes)
    return costs


def broker_cost_fields(
    before: dict[int, tuple[float, int]], after: dict[int, tuple[float, int]], n: int
) -> dict[str, Any]:
    """Per broker, CPU microseconds and wake-ups per record over the producer's run (everything
    the broker did meanwhile: the latency topic's records, its replication, its timers)."""
    per = {str(b): {"cpu_us_per_record": round((after[b][0] - before[b][0]) / n * 1e6, 1),
                    "wakeups_per_record": round((after[b][1] - before[b][1]) / n, 2)}
           for b in after if b in before and n > 0}  # fmt: skip
    return {"broker_cost": per} if per else {}


def loop_lag_fields(before: dict[int, Any], after: dict[int, Any]) -> dict[str, Any]:
    """The brokers' loop lag between two readings: per broker (p50, p99, max, samples) and the
    worst broker's p99 and max, the figures the tables show beside the end-to-end ones."""
    from deploy.loop_lag import interval

    per = {}
    for broker, buckets in after.items():
        lag = interval(before.get(broker), buckets) if buckets and before.get(broker) else None
        if lag is not None:
            per[str(broker)] = lag.as_dict()
    if not per:
        return {}
    return {"loop_lag": per, "loop_lag_ms_p99": max(v["p99_ms"] for v in per.values()),
            "loop_lag_ms_max": max(v["max_ms"] for v in per.values())}  # fmt: skip


def run_latency(
    side: Any, topic: str, n: int, rate: int, acks: str,
    lag_of: Sequence[tuple[int, str, int]] = (), options: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The consumer process first (until it says ready), then the producer process; the
    brokers of `lag_of` have their loop lag read around the producer's run. `options`: client
    settings both workers add to their clients' (none: the defaults)."""
    extra = [json.dumps(options)] if options else []
    consumer = subprocess.Popen(
        _worker_cmd("latency-consumer", side.bootstrap, topic, n, *extra), cwd=side.root,
        env=side.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert consumer.stdout is not None
        if consumer.stdout.readline().strip() != "ready":
            consumer.kill()
            _, err = consumer.communicate(timeout=30)
            return {"error": f"latency consumer did not start: {err.strip()[-300:]}"}
        before = loop_lag_readings(lag_of)
        brokers_before = broker_costs(side.dir)
        produced = run_worker(side, "latency-producer", side.bootstrap, topic, n, rate, acks,
                              *extra)  # fmt: skip
        produced.update(broker_cost_fields(brokers_before, broker_costs(side.dir), n))
        produced.update(loop_lag_fields(before, loop_lag_readings(lag_of)))
        rest, err = consumer.communicate(timeout=CASE_TIMEOUT_S)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    if consumer.returncode != 0 or not rest.strip():
        return {"error": f"latency consumer: {err.strip()[-300:]}", **produced}
    return {**_last_json(rest), **produced}


def _create(side: Any, topic: str, rf: int) -> str | None:
    made = side.cli("topics", "create", topic, "--partitions", "1", "--replication-factor",
                    str(rf), "--bootstrap", side.bootstrap)  # fmt: skip
    return None if made.returncode == 0 else made.stderr.strip()[-300:]


USER_CASES = ("produce-sync", "produce-async", "produce-async-floor", "consume",
              *(f"rf{rf} acks={acks}" for rf, acks in LATENCY_CASES))  # fmt: skip


def run_case(side: Any, case: str, r: int, n: int, lat_n: int, rate: int) -> dict[str, Any]:
    """One case on one side; the consume case reads round r's produce-sync topic."""
    base = {"system": "odradek", "size": SIZE, "partitions": 1, "side": side.name, "round": r}
    if case == "produce-async-floor":  # no topic, no broker (the topic name is only passed on)
        row = run_worker(side, case, side.bootstrap, f"user-async-floor-{r}", n)
        return {**base, "mode": "user", "case": case, **row}
    if case in ("produce-sync", "produce-async", "consume"):
        topic = f"user-sync-{r}" if case != "produce-async" else f"user-async-{r}"
        err = None if case == "consume" else _create(side, topic, 1)
        row = {"error": err} if err else run_worker(side, case, side.bootstrap, topic, n)
        return {**base, "mode": "user", "case": case, "acks": "1", **row}
    rf, acks = next((f, a) for f, a in LATENCY_CASES if case == f"rf{f} acks={a}")
    topic = f"user-lat-rf{rf}-{r}"
    err = _create(side, topic, rf)
    lag_of = loop_lag_brokers(side.dir)  # the brokers' loop lag beside the end-to-end figures
    row = {"error": err} if err else run_latency(side, topic, lat_n, rate, acks, lag_of)
    return {**base, "mode": "user-latency", "case": case, "rf": rf, "acks": acks, "rate": rate,
            "messages": lat_n, **row}  # fmt: skip


def run_user(
    ref: str, n: int, lat_n: int, rate: int, rounds: int,
    report: Callable[[dict], None] = lambda _r: None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Every case on both sides (this tree, the worktree of `ref`), `rounds` times, alternating."""
    import bench_baseline

    rows: list[dict[str, Any]] = []
    with bench_baseline.two_sides(ref, brokers=3) as (sides, commit):
        for r in range(rounds):
            for case in USER_CASES:
                for side in sides if r % 2 == 0 else sides[::-1]:
                    row = run_case(side, case, r, n, lat_n, rate)
                    row["ref"] = commit if side.name == "baseline" else "working tree"
                    rows.append(row)
                    report(row)
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        sys.exit(worker_main(sys.argv[2:]))
    print("run through bench/bench_cluster.py --only user (or `make bench`)", file=sys.stderr)
    sys.exit(2)
