"""The three Python Kafka clients behind one small interface, for tests against real brokers.

Each `KafkaClient` creates topics through its own admin API, produces a list of `Rec`s with
given acks and compression (returning each record's (partition, offset) when acknowledged), and
reads a partition by assignment from a start (earliest, latest, an offset, or a timestamp).
Clients run with their default settings except what a test names; confluent-kafka is given
`partitioner=murmur2_random`, the Java client's partitioner (librdkafka's default hashes with
CRC32), so that keyed records land where Kafka's murmur2 puts them for all three.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
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
