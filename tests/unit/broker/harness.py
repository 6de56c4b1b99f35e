"""An in-process broker for tests: real server on 127.0.0.1:0, real LogManager in a tmp dir,
the controller's part played by the test (LeaderAndIsr / UpdateMetadata sent over the wire),
ZooKeeper replaced by `FakeTopicStore` (topics) and `MemoryBlockSource` (producer ids).
`RawClient` speaks frames byte by byte, for bad input."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.config import BrokerConfig
from broker.context import BrokerContext
from broker.doors import KafkaDoor
from broker.log.flusher import GroupCommitFlusher
from broker.log.manager import LogManager
from broker.replica_manager import ReplicaManager
from broker.server import BrokerServer
from coordinator.cluster.placement import assign_replicas
from coordinator.cluster.producer_ids import MemoryBlockSource, ProducerIdManager
from coordinator.cluster.topics import new_partitions
from protocol.api.controller import (
    LeaderAndIsrRequest,
    PartitionState,
    UpdateMetadataRequest,
)
from protocol.api.metadata import BrokerInfo
from protocol.clock import Clock, ManualClock
from protocol.codec import decode_response, encode_request
from protocol.errors import OdradekError, TopicAlreadyExistsError, UnknownTopicOrPartitionError
from transport.connection import BrokerConnection

BROKER_ID = 1
IO_TIMEOUT_S = 10.0


@dataclass
class FakeTopicStore:
    """ZooKeeper's topic znodes in memory. `on_create`/`on_delete`/`on_add_partitions` let a
    test act as controller, `on_config` as every broker's config change listener. Partitions
    are added with coordinator/cluster/topics.py's own checks, to `assignments` (filled by
    create_topic, or by the test for topics it made with `lead`)."""

    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    created: list[tuple[str, int, int]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    config_writes: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    on_create: Any = None
    on_delete: Any = None
    on_add_partitions: Any = None  # async (topic, {partition: replicas}) -> None
    on_config: Any = None  # (topic, overrides) -> None

    async def read_topic_config(self, topic: str) -> Mapping[str, str]:
        return dict(self.configs.get(topic, {}))

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        live_broker_ids: list[int],
    ) -> None:
        if name in self.configs:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        self.configs[name] = dict(configs)
        self.created.append((name, num_partitions, replication_factor))
        with contextlib.suppress(OdradekError):  # no live brokers given: no assignment kept
            self.assignments[name] = assign_replicas(
                live_broker_ids, num_partitions, replication_factor
            )
        if self.on_create is not None:
            await self.on_create(name, num_partitions)

    async def delete_topic(self, name: str) -> None:
        if name not in self.configs:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        del self.configs[name]
        self.assignments.pop(name, None)
        self.deleted.append(name)
        if self.on_delete is not None:
            await self.on_delete(name)

    async def write_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        self.configs[topic] = dict(config)
        self.config_writes.append((topic, dict(config)))
        if self.on_config is not None:
            self.on_config(topic, dict(config))

    async def add_partitions(
        self,
        name: str,
        count: int,
        assignments: list[list[int]] | None,
        live_broker_ids: list[int],
        validate_only: bool,
    ) -> dict[int, list[int]]:
        existing = self.assignments.get(name)
        if existing is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        added = new_partitions(existing, count, assignments, live_broker_ids)
        if not validate_only:
            existing.update(added)
            if self.on_add_partitions is not None:
                await self.on_add_partitions(name, added)
        return added


class BrokerHarness:
    def __init__(self, ctx: BrokerContext, server: BrokerServer, log_manager: LogManager) -> None:
        self.ctx = ctx
        self.server = server
        self.log_manager = log_manager
        self.controller_epoch = 1
        self.leader_epochs: dict[tuple[str, int], int] = {}
        self._conns: list[BrokerConnection] = []
        self.kafka_server: BrokerServer | None = None  # the Kafka door, on its own port

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def kafka_port(self) -> int:
        assert self.kafka_server is not None
        return self.kafka_server.port

    def broker_info(self) -> BrokerInfo:
        """This broker as the controller would announce it: both listeners."""
        kafka_port = -1 if self.kafka_server is None else self.kafka_server.port
        return BrokerInfo(BROKER_ID, "127.0.0.1", self.port, None, "127.0.0.1", kafka_port)

    @property
    def topics(self) -> FakeTopicStore:
        assert isinstance(self.ctx.topics, FakeTopicStore)
        return self.ctx.topics

    async def connect(self) -> BrokerConnection:
        conn = await BrokerConnection.connect("127.0.0.1", self.port, client_id="test")
        self._conns.append(conn)
        return conn

    def state(
        self, topic: str, partition: int, leader: int = BROKER_ID, replicas: list[int] | None = None
    ) -> PartitionState:
        epoch = self.leader_epochs.get((topic, partition), 0)
        reps = replicas or [BROKER_ID]
        return PartitionState(
            topic, partition, self.controller_epoch, leader, epoch, [leader], 0, reps, []
        )

    async def lead(self, topic: str, partitions: int = 1, leader: int = BROKER_ID) -> None:
        """Play the controller: make `leader` lead every partition, tell the metadata cache."""
        conn = await self.connect()
        states = [
            self.state(topic, p, leader, sorted({BROKER_ID, leader})) for p in range(partitions)
        ]
        live = [self.broker_info()]
        if leader not in (BROKER_ID, -1):
            live.append(BrokerInfo(leader, "127.0.0.1", 1))
        resp = await conn.send(LeaderAndIsrRequest(0, self.controller_epoch, states, live))
        assert resp.error_code == 0, resp
        assert all(p.error_code == 0 for p in resp.partitions), resp
        meta = await conn.send(UpdateMetadataRequest(0, self.controller_epoch, states, live, []))
        assert meta.error_code == 0

    async def close(self) -> None:
        for conn in self._conns:
            await conn.close()


@contextlib.asynccontextmanager
async def running_broker(
    log_dir: Path,
    clock: Clock | None = None,
    topics: FakeTopicStore | None = None,
    **overrides: Any,
) -> AsyncIterator[BrokerHarness]:
    config = BrokerConfig(broker_id=BROKER_ID, log_dir=log_dir, port=0, **overrides)
    clock = clock or ManualClock()
    log_manager = LogManager(log_dir, config.default_log_config(), clock)
    log_manager.load_all()
    replicas = ReplicaManager(
        BROKER_ID, log_manager, GroupCommitFlusher(), config.default_log_config(),
        config.max_delayed_fetches, config.fetch_max_bytes,
    )  # fmt: skip
    ctx = BrokerContext.create(config, clock, replicas, topics or FakeTopicStore())
    ctx.producer_ids = ProducerIdManager(BROKER_ID, MemoryBlockSource())
    server = BrokerServer(ctx, clock)
    await server.start()
    harness = BrokerHarness(ctx, server, log_manager)
    harness.kafka_server = BrokerServer(ctx, clock, KafkaDoor(), "127.0.0.1", 0)
    await harness.kafka_server.start()
    try:
        yield harness
    finally:
        await harness.close()
        await harness.kafka_server.stop()
        await server.stop()
        log_manager.shutdown()


class RawClient:
    """Frames on a plain stream, for sending what a real client never would."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._corr = itertools.count(1)

    @classmethod
    async def connect(cls, port: int) -> RawClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    def next_corr(self) -> int:
        return next(self._corr)

    def send(self, request: Any, corr: int | None = None) -> int:
        corr = self.next_corr() if corr is None else corr
        self.writer.write(encode_request(request, corr, "raw"))
        return corr

    def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)

    async def read_frame(self) -> bytes:
        async with asyncio.timeout(IO_TIMEOUT_S):
            (length,) = struct.unpack(">i", await self.reader.readexactly(4))
            return await self.reader.readexactly(length)

    async def read_response(self, response_cls: type) -> tuple[int, Any]:
        return decode_response(await self.read_frame(), response_cls)

    async def at_eof(self) -> bool:
        """True when the broker closed the connection (reads whatever is left first)."""
        async with asyncio.timeout(IO_TIMEOUT_S):
            rest = await self.reader.read()
        return rest == b"" and self.reader.at_eof()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()
