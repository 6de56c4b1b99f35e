"""The three Python Kafka clients behind one small interface, for tests against real brokers.

Each `KafkaClient` creates topics through its own admin API, produces a list of `Rec`s with
given acks and compression (returning each record's (partition, offset) when acknowledged), and
reads a partition by assignment from a start (earliest, latest, an offset, or a timestamp).
Clients run with their default settings except what a test names; confluent-kafka is given
`partitioner=murmur2_random`, the Java client's partitioner (librdkafka's default hashes with
CRC32), so that keyed records land where Kafka's murmur2 puts them for all three.

`spawn_member` starts one of them consuming in a group as its own process
(tests/integration/kafka_group_member.py: process, then commit), so that a test can close it
(SIGTERM: LeaveGroup), pause it (SIGSTOP) or kill it (SIGKILL) and read what it processed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACKS = {0: 0, 1: 1, -1: "all"}
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Rec:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    partition: int | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class Got:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp_ms: int


Start = str | int | tuple[str, int]  # "earliest" | "latest" | offset | ("timestamp", ms)


class KafkaClient:
    name = "?"

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
        raise NotImplementedError

    def produce(
        self, topic: str, recs: list[Rec], acks: int = 1, compression: str = "none",
        **config: Any,
    ) -> list[tuple[int, int]]:  # fmt: skip
        raise NotImplementedError

    def consume(
        self, topic: str, partition: int, start: Start, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[Got]:
        raise NotImplementedError


# ----- kafka-python ----------------------------------------------------------------------------


class KafkaPython(KafkaClient):
    name = "kafka-python"

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics([NewTopic(name, partitions, rf, topic_configs=configs)])
        finally:
            admin.close()

    def produce(
        self, topic: str, recs: list[Rec], acks: int = 1, compression: str = "none",
        **config: Any,
    ) -> list[tuple[int, int]]:  # fmt: skip
        from kafka import KafkaProducer

        p = KafkaProducer(
            bootstrap_servers=self.bootstrap, acks=ACKS[acks],
            compression_type=None if compression == "none" else compression, **config,
        )  # fmt: skip
        try:
            futures = [
                p.send(
                    topic,
                    value=r.value,
                    key=r.key,
                    headers=r.headers,
                    partition=r.partition,
                    timestamp_ms=r.timestamp_ms,
                )
                for r in recs
            ]
            p.flush(timeout=TIMEOUT_S)
            out = []
            for f in futures:
                md = f.get(timeout=TIMEOUT_S)
                out.append((md.partition, md.offset))
            return out
        finally:
            p.close(timeout=5)

    def consume(
        self, topic: str, partition: int, start: Start, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[Got]:
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        try:
            tp = TopicPartition(topic, partition)
            c.assign([tp])
            if start == "earliest":
                c.seek_to_beginning(tp)
            elif start == "latest":
                c.seek_to_end(tp)
                c.position(tp)
            elif isinstance(start, tuple):
                found = c.offsets_for_times({tp: start[1]})[tp]
                assert found is not None, f"no offset at or after {start[1]}"
                c.seek(tp, found.offset)
            else:
                c.seek(tp, start)
            got: list[Got] = []
            deadline = time.monotonic() + timeout_s
            while len(got) < count and time.monotonic() < deadline:
                for records in c.poll(timeout_ms=200).values():
                    got += [
                        Got(r.partition, r.offset, r.key, r.value, list(r.headers), r.timestamp)
                        for r in records
                    ]
            return got
        finally:
            c.close()


# ----- confluent-kafka (librdkafka) ----------------------------------------------------------


class Confluent(KafkaClient):
    name = "confluent-kafka"

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics([NewTopic(name, partitions, rf, config=configs)])
        for f in futures.values():
            f.result(timeout=TIMEOUT_S)

    def produce(
        self, topic: str, recs: list[Rec], acks: int = 1, compression: str = "none",
        **config: Any,
    ) -> list[tuple[int, int]]:  # fmt: skip
        from confluent_kafka import KafkaException, Producer

        conf = {
            "bootstrap.servers": self.bootstrap, "acks": str(acks),
            "compression.type": compression, "partitioner": "murmur2_random",
            "linger.ms": 5, **config,
        }  # fmt: skip
        p = Producer(conf)
        results: list[Any] = [None] * len(recs)

        def done(i: int) -> Any:
            return lambda err, msg: results.__setitem__(i, err or (msg.partition(), msg.offset()))

        for i, r in enumerate(recs):
            kwargs: dict[str, Any] = {"value": r.value, "key": r.key, "on_delivery": done(i)}
            if r.headers:
                kwargs["headers"] = r.headers
            if r.partition is not None:
                kwargs["partition"] = r.partition
            if r.timestamp_ms is not None:
                kwargs["timestamp"] = r.timestamp_ms
            p.produce(topic, **kwargs)
            p.poll(0)
        assert p.flush(TIMEOUT_S) == 0, "confluent-kafka did not deliver everything in time"
        for res in results:
            if not isinstance(res, tuple):
                raise KafkaException(res)
        return results

    def consume(
        self, topic: str, partition: int, start: Start, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[Got]:
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, TopicPartition

        c = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": f"assign-{topic}-{partition}",
            "enable.auto.commit": False, "enable.partition.eof": False,
        })  # fmt: skip
        try:
            if start == "earliest":
                offset = OFFSET_BEGINNING
            elif start == "latest":
                offset = OFFSET_END
            elif isinstance(start, tuple):
                (found,) = c.offsets_for_times([TopicPartition(topic, partition, start[1])], 10)
                offset = found.offset
            else:
                offset = int(start)
            c.assign([TopicPartition(topic, partition, offset)])
            got: list[Got] = []
            deadline = time.monotonic() + timeout_s
            while len(got) < count and time.monotonic() < deadline:
                msg = c.poll(0.2)
                if msg is None:
                    continue
                assert msg.error() is None, msg.error()
                got.append(Got(msg.partition(), msg.offset(), msg.key(), msg.value(),
                               list(msg.headers() or []), msg.timestamp()[1]))  # fmt: skip
            return got
        finally:
            c.close()


# ----- aiokafka ----------------------------------------------------------------------------------


class AioKafka(KafkaClient):
    name = "aiokafka"

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        async def run() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            await admin.start()
            try:
                await admin.create_topics([NewTopic(name, partitions, rf, topic_configs=configs)])
            finally:
                await admin.close()

        asyncio.run(run())

    def produce(
        self, topic: str, recs: list[Rec], acks: int = 1, compression: str = "none",
        **config: Any,
    ) -> list[tuple[int, int]]:  # fmt: skip
        from aiokafka import AIOKafkaProducer

        async def run() -> list[tuple[int, int]]:
            p = AIOKafkaProducer(
                bootstrap_servers=self.bootstrap, acks=ACKS[acks],
                compression_type=None if compression == "none" else compression, **config,
            )  # fmt: skip
            await p.start()
            try:
                futures = [
                    await p.send(
                        topic,
                        value=r.value,
                        key=r.key,
                        headers=r.headers or None,
                        partition=r.partition,
                        timestamp_ms=r.timestamp_ms,
                    )
                    for r in recs
                ]
                out = []
                for f in futures:
                    md = await f  # None with acks=0
                    out.append((-1, -1) if md is None else (md.partition, md.offset))
                return out
            finally:
                await p.stop()

        return asyncio.run(run())

    def consume(
        self, topic: str, partition: int, start: Start, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[Got]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def run() -> list[Got]:
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
            await c.start()
            try:
                tp = TopicPartition(topic, partition)
                c.assign([tp])
                if start == "earliest":
                    await c.seek_to_beginning(tp)
                elif start == "latest":
                    await c.seek_to_end(tp)
                    await c.position(tp)
                elif isinstance(start, tuple):
                    found = (await c.offsets_for_times({tp: start[1]}))[tp]
                    assert found is not None
                    c.seek(tp, found.offset)
                else:
                    c.seek(tp, start)
                got: list[Got] = []
                deadline = time.monotonic() + timeout_s
                while len(got) < count and time.monotonic() < deadline:
                    batches = await c.getmany(tp, timeout_ms=200)
                    for records in batches.values():
                        got += [
                            Got(r.partition, r.offset, r.key, r.value, list(r.headers), r.timestamp)
                            for r in records
                        ]
                return got
            finally:
                await c.stop()

        return asyncio.run(run())


CLIENTS: dict[str, type[KafkaClient]] = {
    KafkaPython.name: KafkaPython,
    Confluent.name: Confluent,
    AioKafka.name: AioKafka,
}


# ----- group members as processes ---------------------------------------------------------------

MEMBER_SCRIPT = Path(__file__).with_name("kafka_group_member.py")
CLOSE_TIMEOUT_S = 30.0


@dataclass
class GroupMember:
    """A kafka_group_member.py process: one Kafka client consuming in a group."""

    client: str
    client_id: str
    out: Path
    proc: subprocess.Popen[bytes]

    def processed(self) -> set[tuple[int, int]]:
        """(partition, offset) of every record it processed (wrote before committing)."""
        return processed_by([self])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def pause(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no last commit."""
        self.stop()

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """SIGTERM: the member closes its consumer (LeaveGroup) and exits 0."""
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=timeout_s)
        assert code == 0, f"{self.client_id} exited {code}: {self.err_tail()}"

    def stop(self) -> None:
        """Kill it if it still runs (also when paused); for clean-up."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGCONT)
                os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def err_tail(self, lines: int = 20) -> str:
        err = self.out.with_suffix(".err")
        return (
            "\n".join(err.read_text(errors="replace").splitlines()[-lines:]) if err.exists() else ""
        )


def spawn_member(
    client: str, bootstrap: str, group: str, topic: str, client_id: str, out_dir: Path,
    assignor: str = "range", session_ms: int = 5000, max_poll_ms: int = 30_000,
    log_level: str | None = None, instance_id: str | None = None,
) -> GroupMember:  # fmt: skip
    """Start a `client` ("kafka-python", "confluent-kafka", "aiokafka") group member, static
    when `instance_id` is given (its group.instance.id). Its client's log (WARNING, or
    $KAFKA_MEMBER_LOG_LEVEL, e.g. DEBUG) goes to `<client_id>.err`."""
    log_level = log_level or os.environ.get("KAFKA_MEMBER_LOG_LEVEL", "WARNING")
    out = out_dir / f"{client_id}.out"
    args = [sys.executable, str(MEMBER_SCRIPT), "--client", client, "--bootstrap", bootstrap,
            "--group", group, "--topic", topic, "--client-id", client_id, "--out", str(out),
            "--assignor", assignor, "--session-ms", str(session_ms),
            "--max-poll-ms", str(max_poll_ms), "--log-level", log_level]  # fmt: skip
    if instance_id is not None:
        args += ["--instance-id", instance_id]
    with out.with_suffix(".err").open("ab") as err:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err)  # fmt: skip
    return GroupMember(client, client_id, out, proc)


def processed_by(members: list[GroupMember]) -> set[tuple[int, int]]:
    """The union of what `members` processed, as (partition, offset)."""
    out: set[tuple[int, int]] = set()
    for m in members:
        if not m.out.exists():
            continue
        for line in m.out.read_text(errors="replace").splitlines():
            fields = line.split()
            if len(fields) == 2 and not line.startswith("#"):
                out.add((int(fields[0]), int(fields[1])))
    return out
