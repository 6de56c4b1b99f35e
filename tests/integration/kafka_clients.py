"""The three Python Kafka clients behind one small interface, for tests against real brokers.

Each `KafkaClient` creates topics through its own admin API, produces a list of `Rec`s with
given acks and compression (returning each record's (partition, offset) when acknowledged), and
reads a partition by assignment from a start (earliest, latest, an offset, or a timestamp).
Clients run with their default settings except what a test names; confluent-kafka is given
`partitioner=murmur2_random`, the Java client's partitioner (librdkafka's default hashes with
CRC32), so that keyed records land where Kafka's murmur2 puts them for all three.

Security (issue 25): a `Security` (Kafka's settings: protocol, SASL mechanism/user/password, CA,
client certificate and key) given to a client goes into every producer, consumer and admin it
makes, in that client's own names (`confluent()`, `kafka_python()`, `aiokafka()`, `kcat()`,
`native()`). `KCat` drives /usr/bin/kcat the same way. `group_read` consumes in a group and
commits. Run as a script (`python kafka_clients.py roundtrip --client C --bootstrap B --topic T
--group G --count N --security JSON`) it produces N records, reads them in the group, commits,
and prints one JSON line, or `{"error": ...}` with the client's own error; `login` asks for the
cluster's brokers (`{"brokers": n}` or the error). A test runs each client in its own process so
that a refused login cannot leave threads behind in pytest's.

`spawn_member` starts one of them consuming in a group as its own process
(tests/integration/kafka_group_member.py: process, then commit), so that a test can close it
(SIGTERM: LeaveGroup), pause it (SIGSTOP) or kill it (SIGKILL) and read what it processed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
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


@dataclass(frozen=True)
class Security:
    """A client's security settings, Kafka's meaning; each client gets them in its own names."""

    protocol: str = "PLAINTEXT"  # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    mechanism: str | None = None  # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
    username: str | None = None
    password: str | None = None
    cafile: str | None = None  # PEM CA certificate(s) the client trusts
    certfile: str | None = None  # the client's certificate, PEM (mTLS)
    keyfile: str | None = None  # its key, PEM

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Security:
        return cls(**json.loads(text))

    def confluent(self) -> dict[str, str]:
        """librdkafka's properties (Kafka's names; kcat's -X too)."""
        conf = {"security.protocol": self.protocol}
        for key, value in (("sasl.mechanism", self.mechanism), ("sasl.username", self.username),
                           ("sasl.password", self.password), ("ssl.ca.location", self.cafile),
                           ("ssl.certificate.location", self.certfile),
                           ("ssl.key.location", self.keyfile)):  # fmt: skip
            if value is not None:
                conf[key] = value
        return conf

    def kafka_python(self) -> dict[str, Any]:
        """kafka-python's keyword arguments (also the native client's: transport/security.py)."""
        conf: dict[str, Any] = {"security_protocol": self.protocol}
        names = (("sasl_mechanism", self.mechanism), ("sasl_plain_username", self.username),
                 ("sasl_plain_password", self.password), ("ssl_cafile", self.cafile),
                 ("ssl_certfile", self.certfile), ("ssl_keyfile", self.keyfile))  # fmt: skip
        for key, value in names:
            if value is not None:
                conf[key] = value
        return conf

    def aiokafka(self) -> dict[str, Any]:
        """aiokafka's: the SASL names as kafka-python's, TLS as a ready ssl_context."""
        conf = {k: v for k, v in self.kafka_python().items() if not k.startswith("ssl_")}
        if self.protocol in ("SSL", "SASL_SSL"):
            from aiokafka.helpers import create_ssl_context

            conf["ssl_context"] = create_ssl_context(
                cafile=self.cafile, certfile=self.certfile, keyfile=self.keyfile
            )
        return conf

    def native(self) -> dict[str, Any]:
        """odradek's client (client/): kafka-python's names."""
        return self.kafka_python()

    def kcat(self) -> list[str]:
        return [arg for k, v in self.confluent().items() for arg in ("-X", f"{k}={v}")]


PLAINTEXT = Security()


class KafkaClient:
    name = "?"

    def __init__(self, bootstrap: str, security: Security = PLAINTEXT) -> None:
        self.bootstrap = bootstrap
        self.security = security

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

    def group_read(
        self, topic: str, group: str, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[tuple[int, int]]:
        """Join `group` on `topic` (from the earliest), read `count` records, commit them
        synchronously, leave. Returns their (partition, offset)."""
        raise NotImplementedError

    def brokers(self, timeout_s: float = TIMEOUT_S) -> int:
        """How many brokers a Metadata answer lists (the client's error if it cannot log in)."""
        raise NotImplementedError


# ----- kafka-python ----------------------------------------------------------------------------


def kafka_python_subscribe(
    consumer: Any, topics: list[str], wait_s: float = TIMEOUT_S, **subscribe: Any
) -> None:
    """Subscribe a kafka-python KafkaConsumer, then wait until its metadata holds `topics`
    before the first poll() joins the group.

    kafka-python 3.0.12 does not wait for the subscribed topics' metadata before it joins
    (the Java consumer does: KAFKA-3949). A leader that joins first assigns nothing, then
    rejoins by itself when the metadata answer comes (its partitions differ from what it
    assigned). When that JoinGroup/SyncGroup round trip outlives poll()'s timeout, the
    assignment the leader made meanwhile turns need_rejoin() False, so no later poll()
    collects the finished join: the member holds no partitions for good, with no error.
    (When it does collect it, the second generation some 50 ms after the first is still a
    rebalance a test can catch half done.) Metadata asked for while subscribed (topics())
    is what the join's snapshot is made from; the cache from before subscribe() is not.
    """
    consumer.subscribe(topics, **subscribe)
    deadline = time.monotonic() + wait_s
    while not set(topics) <= consumer.topics() and time.monotonic() < deadline:
        time.sleep(0.1)


class KafkaPython(KafkaClient):
    name = "kafka-python"

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, **self.security.kafka_python())
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
            compression_type=None if compression == "none" else compression,
            **self.security.kafka_python(), **config,
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

        c = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                          **self.security.kafka_python())  # fmt: skip
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

    def group_read(
        self, topic: str, group: str, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[tuple[int, int]]:
        from kafka import KafkaConsumer

        c = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=group,
                          enable_auto_commit=False, auto_offset_reset="earliest",
                          **self.security.kafka_python())  # fmt: skip
        try:
            kafka_python_subscribe(c, [topic], wait_s=timeout_s)
            got: list[tuple[int, int]] = []
            deadline = time.monotonic() + timeout_s
            while len(got) < count and time.monotonic() < deadline:
                for records in c.poll(timeout_ms=200).values():
                    got += [(r.partition, r.offset) for r in records]
            c.commit()
            return got
        finally:
            c.close()

    def brokers(self, timeout_s: float = TIMEOUT_S) -> int:
        from kafka.admin import KafkaAdminClient

        # bootstrap_timeout_ms: a refused login makes kafka-python retry its bootstrap until
        # this ends (its default 30 s), so the caller's timeout bounds it too
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                 request_timeout_ms=int(timeout_s * 1000),
                                 bootstrap_timeout_ms=int(timeout_s * 1000),
                                 **self.security.kafka_python())  # fmt: skip
        try:
            return len(admin.describe_cluster()["brokers"])
        finally:
            admin.close()


# ----- confluent-kafka (librdkafka) ----------------------------------------------------------


class Confluent(KafkaClient):
    name = "confluent-kafka"

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap, **self.security.confluent()})
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
            "linger.ms": 5, **self.security.confluent(), **config,
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
            **self.security.confluent(),
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

    def group_read(
        self, topic: str, group: str, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[tuple[int, int]]:
        from confluent_kafka import Consumer, KafkaException

        c = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "enable.partition.eof": False,
            **self.security.confluent(),
        })  # fmt: skip
        try:
            c.subscribe([topic])
            got: list[tuple[int, int]] = []
            deadline = time.monotonic() + timeout_s
            while len(got) < count and time.monotonic() < deadline:
                msg = c.poll(0.2)
                if msg is None:
                    continue
                if msg.error() is not None:
                    raise KafkaException(msg.error())
                got.append((msg.partition(), msg.offset()))
            c.commit(asynchronous=False)
            return got
        finally:
            c.close()

    def brokers(self, timeout_s: float = TIMEOUT_S) -> int:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, **self.security.confluent(),
                             "error_cb": lambda err: LOGGED.append(str(err))})  # fmt: skip
        try:
            return len(admin.list_topics(timeout=timeout_s).brokers)
        except Exception:
            admin.poll(1)  # serves error_cb: librdkafka's reason (SASL, SSL) is told there
            raise


# ----- aiokafka ----------------------------------------------------------------------------------


class AioKafka(KafkaClient):
    name = "aiokafka"

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict[str, str]) -> None:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        async def run() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap,
                                        **self.security.aiokafka())  # fmt: skip
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
                compression_type=None if compression == "none" else compression,
                **self.security.aiokafka(), **config,
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
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                                 **self.security.aiokafka())  # fmt: skip
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

    def group_read(
        self, topic: str, group: str, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[tuple[int, int]]:
        from aiokafka import AIOKafkaConsumer

        async def run() -> list[tuple[int, int]]:
            c = AIOKafkaConsumer(topic, bootstrap_servers=self.bootstrap, group_id=group,
                                 enable_auto_commit=False, auto_offset_reset="earliest",
                                 **self.security.aiokafka())  # fmt: skip
            await c.start()
            try:
                got: list[tuple[int, int]] = []
                deadline = time.monotonic() + timeout_s
                while len(got) < count and time.monotonic() < deadline:
                    for records in (await c.getmany(timeout_ms=200)).values():
                        got += [(r.partition, r.offset) for r in records]
                await c.commit()
                return got
            finally:
                await c.stop()

        return asyncio.run(run())

    def brokers(self, timeout_s: float = TIMEOUT_S) -> int:
        from aiokafka.admin import AIOKafkaAdminClient

        async def run() -> int:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap,
                                        request_timeout_ms=int(timeout_s * 1000),
                                        **self.security.aiokafka())  # fmt: skip
            await admin.start()
            try:
                return len((await admin.describe_cluster())["brokers"])
            finally:
                await admin.close()

        return asyncio.run(run())


# ----- kcat (librdkafka's command line) --------------------------------------------------------

KCAT = "/usr/bin/kcat"


class KCat(KafkaClient):
    """kcat: -P to produce (one record per line, key and value split at `:`), -G to consume
    in a group; kcat commits what it read when it closes its consumer (librdkafka's
    auto-commit, which `-G` leaves on)."""

    name = "kcat"

    def _run(self, args: list[str], input: bytes | None, timeout_s: float) -> bytes:
        cmd = [KCAT, "-b", self.bootstrap, *self.security.kcat(), *args]
        done = subprocess.run(cmd, input=input, capture_output=True, timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"kcat exited {done.returncode}: {done.stderr.decode()[-2000:]}")
        return done.stdout

    def produce(
        self, topic: str, recs: list[Rec], acks: int = 1, compression: str = "none",
        **config: Any,
    ) -> list[tuple[int, int]]:  # fmt: skip
        lines = b"".join((r.key or b"") + b":" + (r.value or b"") + b"\n" for r in recs)
        self._run(["-P", "-t", topic, "-K", ":", "-X", f"acks={ACKS[acks]}",
                   "-X", f"compression.codec={compression}"], lines, TIMEOUT_S)  # fmt: skip
        return []  # kcat does not say where its records went

    def group_read(
        self, topic: str, group: str, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[tuple[int, int]]:
        out = self._run(["-G", group, topic, "-c", str(count), "-f", "%p %o\n",
                         "-X", "auto.offset.reset=earliest"], None, timeout_s)  # fmt: skip
        return [(int(p), int(o)) for p, o in (line.split() for line in out.decode().splitlines())]

    def brokers(self, timeout_s: float = TIMEOUT_S) -> int:
        out = self._run(["-L", "-J", "-m", str(int(timeout_s))], None, timeout_s + 10)
        return len(json.loads(out)["brokers"])


# ----- odradek's own client (client/) ------------------------------------------------------------


class Native(KafkaClient):
    """odradek's client library over the native door (bootstrap: native listeners)."""

    name = "native"

    def produce(
        self, topic: str, recs: list[Rec], acks: int = 1, compression: str = "none",
        **config: Any,
    ) -> list[tuple[int, int]]:  # fmt: skip
        from client import Producer

        with Producer(self.bootstrap, acks=ACKS[acks], max_block_ms=int(TIMEOUT_S * 1000),
                      **self.security.native()) as p:  # fmt: skip
            futures = [p.send(topic, r.value, key=r.key) for r in recs]
            return [(md.partition, md.offset) for md in (f.get(timeout=TIMEOUT_S) for f in futures)]

    def group_read(
        self, topic: str, group: str, count: int, timeout_s: float = TIMEOUT_S
    ) -> list[tuple[int, int]]:
        from client import Consumer

        with Consumer(self.bootstrap, group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest", **self.security.native()) as c:  # fmt: skip
            c.subscribe([topic])
            got: list[tuple[int, int]] = []
            deadline = time.monotonic() + timeout_s
            while len(got) < count and time.monotonic() < deadline:
                for records in c.poll(timeout_ms=200).values():
                    got += [(r.partition, r.offset) for r in records]
            c.commit()
            return got

    def brokers(self, timeout_s: float = TIMEOUT_S) -> int:
        from client import Admin

        with Admin(self.bootstrap, request_timeout_ms=int(timeout_s * 1000),
                   **self.security.native()) as admin:  # fmt: skip
            return len(admin.describe_cluster().brokers)


CLIENTS: dict[str, type[KafkaClient]] = {
    KafkaPython.name: KafkaPython,
    Confluent.name: Confluent,
    AioKafka.name: AioKafka,
}
EVERY_CLIENT: dict[str, type[KafkaClient]] = {**CLIENTS, KCat.name: KCat, Native.name: Native}


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


# ----- as a script: one client's round trip in its own process ------------------------------


def roundtrip(a: argparse.Namespace) -> dict[str, Any]:
    """Produce `count` records (acks=all), read them back in `group`, commit."""
    client = EVERY_CLIENT[a.client](a.bootstrap, Security.from_json(a.security))
    recs = [Rec(f"k{i}".encode(), f"{a.client} {i}".encode()) for i in range(a.count)]
    try:
        produced = client.produce(a.topic, recs, acks=-1)
        read = client.group_read(a.topic, a.group, a.count, timeout_s=a.timeout_s)
    except Exception as exc:  # the client's own error is the answer: the test checks its kind
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"produced": produced, "read": read}


LOGGED: list[str] = []  # what a client reported besides raising: librdkafka's error_cb, logs


class _Keep(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        LOGGED.append(record.getMessage()[:1000])


def login(a: argparse.Namespace) -> dict[str, Any]:
    """Ask for the cluster's brokers: {"brokers": n}, or the client's error with what it
    logged meanwhile (kafka-python and aiokafka log why a login failed and raise a generic
    bootstrap error; librdkafka tells error_cb)."""
    logging.getLogger().addHandler(_Keep(logging.WARNING))
    client = EVERY_CLIENT[a.client](a.bootstrap, Security.from_json(a.security))
    try:
        return {"brokers": client.brokers(timeout_s=a.timeout_s)}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "logged": LOGGED[-20:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rt = sub.add_parser("roundtrip")
    rt.add_argument("--topic", required=True)
    rt.add_argument("--group", required=True)
    rt.add_argument("--count", type=int, default=10)
    li = sub.add_parser("login")
    for p in (rt, li):
        p.add_argument("--client", choices=sorted(EVERY_CLIENT), required=True)
        p.add_argument("--bootstrap", required=True)
        p.add_argument("--timeout-s", type=float, default=TIMEOUT_S)
        p.add_argument("--security", default=PLAINTEXT.to_json(), help="Security as JSON")
    a = parser.parse_args()
    print(json.dumps(roundtrip(a) if a.command == "roundtrip" else login(a)), flush=True)


if __name__ == "__main__":
    main()
