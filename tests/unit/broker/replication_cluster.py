"""Several real brokers in one event loop, for replication tests; the test plays the controller.

Each `Node` is a real BrokerServer on 127.0.0.1:0 with its own log dir and ReplicaManager
(followers fetch over real sockets), on a complete context as the harness builds it.
ZooKeeper's partition state znodes are a `FakeStateStore` shared by the nodes: leaders write
ISR changes to it conditionally on its version, as coordinator/cluster/isr.py does against
ZooKeeper. `Cluster.elect` writes a new state (leader epoch
+ 1) and sends LeaderAndIsr + UpdateMetadata to the live replicas, as the controller would.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.config import BrokerConfig
from broker.log.flusher import GroupCommitFlusher
from broker.log.log import Log
from broker.log.manager import LogManager
from broker.partition import Partition
from broker.replica_fetcher import FetcherSettings
from broker.replica_manager import ReplicaManager, ReplicationSettings
from broker.server import BrokerServer
from coordinator.cluster.isr import IsrWriteResult
from protocol.api.controller import LeaderAndIsrRequest, PartitionState, UpdateMetadataRequest
from protocol.api.metadata import BrokerInfo
from protocol.clock import ManualClock
from tests.unit.broker.harness import FakeTopicStore, complete_context
from transport.connection import BrokerConnection

WAIT_S = 10.0
LAG_MS = 10_000


@dataclass
class ZnodeState:
    leader: int
    leader_epoch: int
    isr: list[int]
    replicas: list[int]
    version: int = 0


@dataclass
class FakeStateStore:
    """Partition state znodes in memory; `writes` records every leader ISR write."""

    states: dict[tuple[str, int], ZnodeState] = field(default_factory=dict)
    writes: list[tuple[str, int, list[int], bool]] = field(default_factory=list)


class FakeIsrWriter:
    def __init__(self, store: FakeStateStore, broker_id: int) -> None:
        self.store = store
        self.broker_id = broker_id

    async def write_isr(
        self,
        topic: str,
        partition: int,
        leader_epoch: int,
        controller_epoch: int,
        isr: list[int],
        zk_version: int,
    ) -> IsrWriteResult:
        await asyncio.sleep(0)  # a round trip, as ZooKeeper's would be
        z = self.store.states[(topic, partition)]
        ok = z.version == zk_version
        self.store.writes.append((topic, partition, list(isr), ok))
        if not ok:
            return IsrWriteResult(False, z.version, z.leader, z.leader_epoch, list(z.isr))
        z.isr = list(isr)
        z.leader = self.broker_id
        z.version += 1
        return IsrWriteResult(True, z.version, self.broker_id, leader_epoch, list(isr))


class Node:
    def __init__(
        self, broker_id: int, log_dir: Path, clock: ManualClock, store: FakeStateStore, **kw: Any
    ) -> None:
        config = BrokerConfig(broker_id=broker_id, log_dir=log_dir, port=0)
        self.broker_id = broker_id
        self.log_manager = LogManager(log_dir, config.default_log_config(), clock)
        self.log_manager.load_all()
        fetcher = FetcherSettings(wait_max_ms=kw.pop("wait_max_ms", 200), backoff_ms=50)
        self.replicas = ReplicaManager(
            broker_id, self.log_manager, GroupCommitFlusher(), config.default_log_config(),
            config.max_delayed_fetches, config.fetch_max_bytes, clock=clock,
            replication=ReplicationSettings(LAG_MS, fetcher),
            isr_writer=FakeIsrWriter(store, broker_id),
        )  # fmt: skip
        self.topics = FakeTopicStore()
        self.ctx = complete_context(config, clock, self.replicas, self.topics)
        self.server = BrokerServer(self.ctx, clock)
        self.conn: BrokerConnection | None = None

    async def start(self) -> None:
        await self.server.start()
        self.conn = await BrokerConnection.connect("127.0.0.1", self.port, client_id="test")

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def info(self) -> BrokerInfo:
        return BrokerInfo(self.broker_id, "127.0.0.1", self.port)

    def partition(self, topic: str, index: int = 0) -> Partition:
        return self.replicas.partitions[(topic, index)]

    def log(self, topic: str, index: int = 0) -> Log:
        return self.partition(topic, index).log

    async def send(self, request: Any) -> Any:
        assert self.conn is not None
        return await self.conn.send(request, timeout_ms=WAIT_S * 1000)

    async def stop(self) -> None:
        """Stop as a crash would for the data (logs closed without a flush beyond the OS)."""
        if self.conn is not None:
            await self.conn.close()
        await self.replicas.shutdown()
        await self.server.stop()
        await self.ctx.groups.shutdown()
        await self.ctx.transactions.shutdown()
        self.log_manager.shutdown()


class Cluster:
    def __init__(self, root: Path, clock: ManualClock) -> None:
        self.root = root
        self.clock = clock
        self.store = FakeStateStore()
        self.nodes: dict[int, Node] = {}
        self.controller_epoch = 1
        self.topic_configs: dict[str, dict[str, str]] = {}

    async def start_node(self, broker_id: int, **kw: Any) -> Node:
        node = Node(broker_id, self.root / f"b{broker_id}", self.clock, self.store, **kw)
        node.topics.configs.update(self.topic_configs)
        await node.start()
        self.nodes[broker_id] = node
        return node

    async def stop_node(self, broker_id: int) -> None:
        await self.nodes.pop(broker_id).stop()

    def configure(self, topic: str, configs: dict[str, str]) -> None:
        self.topic_configs[topic] = dict(configs)
        for node in self.nodes.values():
            node.topics.configs[topic] = dict(configs)

    async def elect(
        self, topic: str, leader: int, replicas: list[int], isr: list[int], partition: int = 0
    ) -> int:
        """Write a new leadership (epoch + 1) and tell the live replicas; the new epoch."""
        key = (topic, partition)
        old = self.store.states.get(key)
        epoch = 0 if old is None else old.leader_epoch + 1
        version = 0 if old is None else old.version + 1
        self.store.states[key] = ZnodeState(leader, epoch, list(isr), list(replicas), version)
        await self._tell(topic, partition, replicas)
        return epoch

    async def resend(self, topic: str, broker_id: int, partition: int = 0) -> None:
        """Send the current state (same epoch) to one broker, as to a broker that returned."""
        await self._tell(topic, partition, [broker_id])

    async def _tell(self, topic: str, partition: int, brokers: list[int]) -> None:
        z = self.store.states[(topic, partition)]
        state = PartitionState(
            topic, partition, self.controller_epoch, z.leader, z.leader_epoch, list(z.isr),
            z.version, list(z.replicas), [],
        )  # fmt: skip
        live = [n.info for n in self.nodes.values()]
        for broker_id in brokers:
            node = self.nodes.get(broker_id)
            if node is None:
                continue
            resp = await node.send(LeaderAndIsrRequest(0, self.controller_epoch, [state], live))
            assert resp.error_code == 0 and all(p.error_code == 0 for p in resp.partitions), resp
        for node in self.nodes.values():
            await node.send(UpdateMetadataRequest(0, self.controller_epoch, [state], live, []))

    async def close(self) -> None:
        for broker_id in list(self.nodes):
            await self.stop_node(broker_id)


@contextlib.asynccontextmanager
async def cluster(root: Path, size: int, **kw: Any) -> AsyncIterator[Cluster]:
    c = Cluster(root, ManualClock())
    try:
        for broker_id in range(1, size + 1):
            await c.start_node(broker_id, **kw)
        yield c
    finally:
        await c.close()


async def eventually(check: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    """Wait (bounded) until `check()` holds."""
    async with asyncio.timeout(timeout_s):
        while not check():
            await asyncio.sleep(0.005)


def log_bytes(log: Log) -> bytes:
    """The log's batches, end to end, as stored (to compare replicas byte for byte)."""
    out = bytearray()
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        r = log.read(offset, 1 << 30)
        assert r.slice is not None
        out += os.pread(r.slice.fd, r.slice.length, r.slice.position)
        offset = r.next_offset
    return bytes(out)
