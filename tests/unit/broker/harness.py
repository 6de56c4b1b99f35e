"""An in-process broker for tests: real server on 127.0.0.1:0, real LogManager in a tmp dir,
the controller's part played by the test (LeaderAndIsr / UpdateMetadata sent over the wire),
ZooKeeper replaced by `FakeTopicStore` (topics) and `MemoryBlockSource` (producer ids).
`RawClient` speaks frames byte by byte, for bad input.

`complete_context` builds the context as broker/daemon.py does, every service present: the
real group and transaction coordinators over the broker's ReplicaManager (one partition each
for their internal topics; not started, so no timer runs: a test ticks them), the real
KIP-890 verifier, SASL service and client quotas, and in memory what ZooKeeper keeps (topics,
producer id blocks, quotas: MemoryQuotaStore, SCRAM credentials: `MemoryCredentialStore`).
The broker is never the controller (`NotController`): the test plays it. `running_broker`
takes the services a test sets up itself (an authorizer, a SASL service, ...) as arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.config import BrokerConfig
from broker.context import BrokerContext, ClusterIdentity, ControllerEpoch
from broker.credentials import Changes, Credentials
from broker.doors import KafkaDoor
from broker.log.flusher import GroupCommitFlusher
from broker.log.manager import LogManager
from broker.metadata_cache import MetadataCache
from broker.quota.manager import Quotas
from broker.quota.store import MemoryQuotaStore, QuotaStore
from broker.replica_manager import ReplicaManager
from broker.security.authorizer import Authorizer
from broker.security.sasl import SaslService
from broker.server import BrokerServer
from broker.service_configs import sasl_configs
from broker.share.manager import SharePartitionManager
from broker.share.persister import StatePersister
from broker.share.settings import share_settings
from broker.txn_verifier import TxnVerifier
from coordinator.cluster.placement import assign_replicas
from coordinator.cluster.producer_ids import MemoryBlockSource, ProducerIdManager
from coordinator.cluster.topics import new_partitions
from coordinator.controller.core import Controller
from coordinator.group.service import GroupConfig, GroupCoordinator
from coordinator.runtime.peers import Peers
from coordinator.share.service import ShareCoordinator, ShareCoordinatorConfig
from coordinator.transaction.markers import MarkerWriter
from coordinator.transaction.service import TransactionCoordinator, TxnConfig
from protocol.api.controller import (
    LeaderAndIsrRequest,
    PartitionState,
    UpdateMetadataRequest,
)
from protocol.api.metadata import BrokerInfo
from protocol.clock import Clock, ManualClock
from protocol.codec import decode_response, encode_request
from protocol.errors import OdradekError, TopicAlreadyExistsError, UnknownTopicOrPartitionError
from protocol.scram import ScramCredential
from transport.connection import BrokerConnection

BROKER_ID = 1
IO_TIMEOUT_S = 10.0
# how long FindCoordinator waits for an internal topic it created to be led: the harness's
# controller (the test) leads it, or not at all, so a short wait
CREATE_WAIT_MS = 500


@dataclass
class FakeTopicStore:
    """ZooKeeper's topic znodes (and /config/brokers) in memory. `on_create`/`on_delete`/
    `on_add_partitions` let a test act as controller, `on_config` as every broker's config
    change listener. Partitions are added with coordinator/cluster/topics.py's own checks, to
    `assignments` (filled by create_topic, or by the test for topics it made with `lead`)."""

    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    created: list[tuple[str, int, int]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    config_writes: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    on_create: Any = None
    on_delete: Any = None
    on_add_partitions: Any = None  # async (topic, {partition: replicas}) -> None
    on_config: Any = None  # (topic, overrides) -> None
    # the dynamic broker configs, /config/brokers/<entity> (broker/context.py BrokerConfigStore)
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)

    async def read_topic_config(self, topic: str) -> Mapping[str, str]:
        return dict(self.configs.get(topic, {}))

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        live_broker_ids: list[int],
        assignment: Mapping[int, Sequence[int]] | None = None,
    ) -> None:
        if name in self.configs:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        self.configs[name] = dict(configs)
        self.created.append((name, num_partitions, replication_factor))
        if assignment is not None:
            self.assignments[name] = {p: list(r) for p, r in assignment.items()}
        with contextlib.suppress(OdradekError):  # no live brokers given: no assignment kept
            self.assignments.setdefault(
                name, assign_replicas(live_broker_ids, num_partitions, replication_factor)
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

    async def read_broker_config(self, entity: str) -> dict[str, str]:
        return dict(self.broker_configs.get(entity, {}))

    async def write_broker_config(self, entity: str, config: Mapping[str, str]) -> None:
        self.broker_configs[entity] = dict(config)

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


class MemoryCredentialStore:
    """SCRAM credentials (/config/users) in memory; `writes` records every alteration."""

    def __init__(self) -> None:
        self.users: dict[str, Credentials] = {}
        self.writes: list[tuple[str, Changes]] = []

    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        return self.users.get(user, {}).get(mechanism)

    async def read_user(self, user: str) -> Credentials:
        return dict(self.users.get(user, {}))

    async def read_all_users(self) -> dict[str, Credentials]:
        return {u: dict(c) for u, c in self.users.items() if c}

    async def alter(self, user: str, changes: Changes) -> None:
        self.writes.append((user, dict(changes)))
        creds = self.users.setdefault(user, {})
        for mech, cred in changes.items():
            if cred is None:
                creds.pop(mech, None)
            else:
                creds[mech] = cred


class NotController:
    """The election seat of a broker that never wins it (the test plays the controller)."""

    @property
    def active_controller(self) -> Controller | None:
        return None


async def _peer_connection(host: str, port: int) -> BrokerConnection:
    return await BrokerConnection.connect(host, port, client_id=f"broker-{BROKER_ID}")


def complete_context(
    config: BrokerConfig,
    clock: Clock,
    replicas: ReplicaManager,
    topics: Any,
    *,
    metadata: MetadataCache | None = None,
    authorizer: Authorizer | None = None,
    sasl: SaslService | None = None,
    credentials: MemoryCredentialStore | None = None,
    quota_store: QuotaStore | None = None,
    cluster_id: str | None = None,
) -> BrokerContext:
    """The context as the daemon builds it (see the module's first lines)."""
    metadata = metadata if metadata is not None else MetadataCache()
    credentials = credentials if credentials is not None else MemoryCredentialStore()
    broker_id = config.broker_id
    groups = GroupCoordinator(broker_id, replicas, metadata, topics, clock,
                              GroupConfig(offsets_partitions=1,
                                          topic_create_wait_ms=CREATE_WAIT_MS))  # fmt: skip
    producer_ids = ProducerIdManager(broker_id, MemoryBlockSource())
    peers = Peers(metadata, _peer_connection)
    transactions = TransactionCoordinator(
        broker_id, replicas, metadata, topics, clock, producer_ids.next_producer_id,
        MarkerWriter(metadata, peers),
        TxnConfig(state_partitions=1, topic_create_wait_ms=CREATE_WAIT_MS),
    )  # fmt: skip
    if sasl is None:
        broker_wide, per_listener = sasl_configs(config)
        sasl = SaslService(broker_wide, credentials.lookup, clock.monotonic_ms,
                           listeners=per_listener)  # fmt: skip
    quotas = Quotas(config.quota_window_num, config.quota_window_size_seconds * 1000)
    share_coordinator = ShareCoordinator(
        broker_id, replicas, metadata, topics, clock,
        ShareCoordinatorConfig(state_partitions=1, topic_create_wait_ms=CREATE_WAIT_MS),
    )  # fmt: skip
    return BrokerContext(
        config, clock, replicas, metadata, topics, ControllerEpoch(), groups=groups,
        transactions=transactions, txn_verifier=TxnVerifier(broker_id, transactions, peers),
        producer_ids=producer_ids, elector=NotController(), cluster=ClusterIdentity(cluster_id),
        sasl=sasl, quotas=quotas,
        quota_store=quota_store if quota_store is not None else MemoryQuotaStore(quotas),
        credentials=credentials, broker_configs=topics, static_config=config,
        share=SharePartitionManager(replicas, clock, share_settings(
            lambda: config, groups.configs.overrides)),
        share_coordinator=share_coordinator, authorizer=authorizer,
        share_persister=StatePersister(broker_id, share_coordinator, peers, metadata.topic_id,
                                       clock),
    )  # fmt: skip


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

    def install_authorizer(self, authorizer: Authorizer | None) -> None:
        """Test-only: turn the authorizer on (or off) in a running broker. The harness plays
        the controller anonymously over the wire, so a test that leads topics and then checks
        ACLs installs the authorizer after `lead`; a broker never changes it."""
        self.ctx.authorizer = authorizer

    async def close(self) -> None:
        for conn in self._conns:
            await conn.close()


@contextlib.asynccontextmanager
async def running_broker(
    log_dir: Path,
    clock: Clock | None = None,
    topics: FakeTopicStore | None = None,
    *,
    metadata: MetadataCache | None = None,
    authorizer: Authorizer | None = None,
    sasl: SaslService | None = None,
    credentials: MemoryCredentialStore | None = None,
    quota_store: QuotaStore | None = None,
    cluster_id: str | None = None,
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
    ctx = complete_context(
        config, clock, replicas, topics or FakeTopicStore(), metadata=metadata,
        authorizer=authorizer, sasl=sasl, credentials=credentials, quota_store=quota_store,
        cluster_id=cluster_id,
    )  # fmt: skip
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
        await ctx.groups.shutdown()
        await ctx.transactions.shutdown()
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
