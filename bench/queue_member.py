#!/usr/bin/env python3
"""One work-queue member for `bench/bench_queue.py`, as its own process, through each system's
own Python client (never odradek's code, so it runs under any interpreter that has the client):

    odradek  confluent-kafka >= 2.16's ShareConsumer (KIP-932), .venv-share's python
    redis    redis-py: XREADGROUP, then XACK of the records read, on a stream's consumer group
    nats     nats-py: a JetStream pull consumer shared by the members, msg.ack() per message

    queue_member.py SYSTEM ADDRESS --topic T --group G --name N --mode work|ack|hold|watch
                    [--samples K] [--deadline-s D]
    queue_member.py SYSTEM ADDRESS --topic T --mode load --count N --size B --group G1,G2,...

Modes (each prints JSON lines on stdout, flushed):
- load: make the topic (odradek: 1 partition; a Redis stream; a JetStream stream), write
  --count records of --size bytes, and make each group read it from its start (odradek: the
  group config share.auto.offset.reset=earliest; Redis: XGROUP CREATE at 0; NATS: a durable
  pull consumer per group, which delivers all by default); one line {"loaded": N}.
- work: take records and acknowledge each one (accept), printing {"n": taken so far} after each
  take, until SIGTERM (the driver sends it when the members together took every record) or
  --deadline-s; then one line {"count", "first", "last", "redelivered"}: wall-clock times
  (time.time(), the processes share one machine) of the first and last record taken.
- ack: --samples times, take a record, acknowledge it and wait for the acknowledgement's answer
  (odradek: acknowledge + commit_sync; Redis: XACK; NATS: ack_sync); one line {"rtt_s": [...]}.
- hold (odradek): take one poll's records, print {"held": [offsets], "t": taken}, then hold
  them without acknowledging until SIGKILLed.
- watch (odradek): as work, but print {"t", "offsets", "counts"} for each poll that took records.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from typing import Any

POLL_S = 0.1
BATCH = 100


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Tally:
    """What a work member took: count, first and last time, records seen before; done at
    SIGTERM or the deadline."""

    stop = False

    def __init__(self, deadline_s: float) -> None:
        self.count = self.redelivered = 0
        self.first = self.last = 0.0
        self.deadline = time.monotonic() + deadline_s
        signal.signal(signal.SIGTERM, self.on_term)

    @classmethod
    def on_term(cls, _sig: int, _frame: Any) -> None:
        cls.stop = True

    def took(self, n: int, redelivered: int = 0) -> None:
        now = time.time()
        if n:
            self.first = self.first or now
            self.last = now
            self.count += n
            self.redelivered += redelivered
            emit({"n": self.count})

    def done(self) -> bool:
        return self.stop or time.monotonic() > self.deadline

    def report(self) -> None:
        emit({"count": self.count, "first": self.first, "last": self.last,
              "redelivered": self.redelivered})  # fmt: skip


def load_odradek(a: argparse.Namespace) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": a.address})
    admin.create_topics([NewTopic(a.topic, 1, 1)])[a.topic].result(60)
    producer = Producer({"bootstrap.servers": a.address, "linger.ms": 5, "acks": "all"})
    value = b"x" * a.size
    for _ in range(a.count):
        while True:
            try:
                producer.produce(a.topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0, "records left unsent"
    for group in a.group.split(","):
        entry = ConfigEntry("share.auto.offset.reset", "earliest",
                            incremental_operation=AlterConfigOpType.SET)  # fmt: skip
        res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
        admin.incremental_alter_configs([res])[res].result(60)


def run_odradek(a: argparse.Namespace) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": a.address, "group.id": a.group,
                              "client.id": a.name,
                              "share.acknowledgement.mode": "explicit"})  # fmt: skip
    consumer.subscribe([a.topic])
    tally, rtts = Tally(a.deadline_s), []
    try:
        while True:
            msgs = [m for m in consumer.poll(POLL_S) if m.error() is None]
            if a.mode == "hold" and msgs:
                emit({"held": [m.offset() for m in msgs], "t": time.time()})
                while True:
                    time.sleep(1)
            if a.mode == "watch" and msgs:
                emit({"t": time.time(), "offsets": [m.offset() for m in msgs],
                      "counts": [m.delivery_count() for m in msgs]})  # fmt: skip
            for m in msgs:
                if a.mode == "ack":
                    t0 = time.perf_counter()
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                    consumer.commit_sync()
                    rtts.append(time.perf_counter() - t0)
                else:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            tally.took(len(msgs), sum(1 for m in msgs if m.delivery_count() > 1))
            if a.mode == "ack" and len(rtts) >= a.samples:
                break
            if a.mode in ("work", "watch") and tally.done():
                break
        consumer.commit_sync()
    finally:
        consumer.close()
    emit({"rtt_s": rtts[: a.samples]}) if a.mode == "ack" else tally.report()


def redis_client(address: str) -> Any:
    import redis

    host, port = address.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port))


def load_redis(a: argparse.Namespace) -> None:
    r, value = redis_client(a.address), b"x" * a.size
    for start in range(0, a.count, 1000):
        pipe = r.pipeline(transaction=False)
        for _ in range(start, min(a.count, start + 1000)):
            pipe.xadd(a.topic, {"v": value})
        pipe.execute()
    for group in a.group.split(","):
        r.xgroup_create(a.topic, group, id="0")


def run_redis(a: argparse.Namespace) -> None:
    r = redis_client(a.address)
    tally, rtts = Tally(a.deadline_s), []
    count = 1 if a.mode == "ack" else BATCH
    while True:
        got = r.xreadgroup(a.group, a.name, {a.topic: ">"}, count=count, block=int(POLL_S * 1000))
        ids = [i for _stream, entries in got for i, _fields in entries]
        if ids and a.mode == "ack":
            for i in ids:
                t0 = time.perf_counter()
                r.xack(a.topic, a.group, i)
                rtts.append(time.perf_counter() - t0)
        elif ids:
            r.xack(a.topic, a.group, *ids)  # the ids read, in one call: as a share fetch's acks
        tally.took(len(ids))
        if a.mode == "ack" and len(rtts) >= a.samples:
            break
        if a.mode == "work" and tally.done():
            break
    emit({"rtt_s": rtts[: a.samples]}) if a.mode == "ack" else tally.report()


async def load_nats(a: argparse.Namespace) -> None:
    import nats

    nc = await nats.connect(f"nats://{a.address}")
    js = nc.jetstream()
    await js.add_stream(name=a.topic, subjects=[a.topic])
    value = b"x" * a.size
    for start in range(0, a.count, 1000):
        acks = [await js.publish_async(a.topic, value)
                for _ in range(start, min(a.count, start + 1000))]  # fmt: skip
        await asyncio.gather(*acks)
    for group in a.group.split(","):
        await js.pull_subscribe(a.topic, durable=group, stream=a.topic)
    await nc.close()


async def run_nats(a: argparse.Namespace) -> None:
    import nats
    from nats.errors import TimeoutError as NatsTimeout

    timeouts = (NatsTimeout, asyncio.TimeoutError)

    nc = await nats.connect(f"nats://{a.address}")
    js = nc.jetstream()
    sub = await js.pull_subscribe(a.topic, durable=a.group, stream=a.topic)
    tally, rtts = Tally(a.deadline_s), []
    batch = 1 if a.mode == "ack" else BATCH
    while True:
        try:
            msgs = await sub.fetch(batch, timeout=POLL_S)
        except timeouts:
            msgs = []
        for m in msgs:
            if a.mode == "ack":
                t0 = time.perf_counter()
                await m.ack_sync()
                rtts.append(time.perf_counter() - t0)
            else:
                await m.ack()
        tally.took(len(msgs))
        if a.mode == "ack" and len(rtts) >= a.samples:
            break
        if a.mode == "work" and tally.done():
            break
    await nc.flush()
    await nc.close()
    emit({"rtt_s": rtts[: a.samples]}) if a.mode == "ack" else tally.report()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("system", choices=("odradek", "redis", "nats"))
    p.add_argument("address")
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--name", default="member")
    p.add_argument("--mode", default="work", choices=("load", "work", "ack", "hold", "watch"))
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--samples", type=int, default=500)
    p.add_argument("--deadline-s", type=float, default=300.0)
    a = p.parse_args()
    if a.mode == "load":
        loaders = {"odradek": load_odradek, "redis": load_redis,
                   "nats": lambda a: asyncio.run(load_nats(a))}  # fmt: skip
        loaders[a.system](a)
        emit({"loaded": a.count})
    elif a.system == "odradek":
        run_odradek(a)
    elif a.mode in ("hold", "watch"):
        p.error(f"--mode {a.mode} is measured on odradek only")
    elif a.system == "redis":
        run_redis(a)
    else:
        asyncio.run(run_nats(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
