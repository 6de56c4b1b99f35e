"""The broker process: wire the pieces together, run until SIGTERM/SIGINT, shut down cleanly.

`Broker.__init__` builds every service and then the `BrokerContext` in one call, complete
(broker/context.py); `start` only starts them. Start-up order: logs first (LogManager.load_all
recovers every partition directory), then the ZooKeeper session and the cluster id
(/cluster/id, created by the first broker; settled in the context's `ClusterIdentity`), then
the server (so the port is known), then the /brokers/ids registration (from here on the
controller may send requests), then the controller election, then the log's background work
(retention, flush.ms). Shutdown reverses it: stop accepting, leave the election, deregister,
close connections, stop the replicas (writing the high watermark checkpoint), close the logs
(writing the clean-shutdown marker; a log directory that went offline gets neither), close the
ZooKeeper session. The replica manager reports a failed log directory to the controller through
coordinator/controller/log_dirs.py; when every log directory has failed the broker shuts down
(exit status 1), as Kafka's does. Any start-up failure is one log line and exit status 1.
The broker's own log (stderr) and its logger levels are broker/loggers.py's. Just before the
listeners open, the process freezes what start-up left on the heap (broker/gc_pauses.py).

`ZkTopicStore` is the broker's only view of topic znodes (coordinator/cluster/topics.py behind the
`TopicStore` protocol of broker/context.py); ZooKeeper failures become retriable wire errors.
The `ConfigChangeListener` (coordinator/cluster/config_changes.py) starts before the registration,
so a topic config changed while the broker starts reaches its logs.

With a `metrics_port`, both listeners' doors are metered and the Prometheus metrics
(broker/metrics.py) are served from a thread of their own once the listeners are up (a port
that cannot be bound fails the start, as a listener's would); they stop as shutdown begins.
With a `schema_registry_port`, the schema registry (broker/registry/) serves from the broker's
loop once the broker is registered (so other brokers can forward writes to it), and stops then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from broker.config import (
    BrokerConfig,
    Listener,
    listener_setting,
    tls_settings,
)
from broker.context import BrokerContext, ClusterIdentity, ControllerEpoch
from broker.doors import Door, KafkaDoor, NativeDoor
from broker.dynamic_apply import DynamicApplier, cleaner_settings
from broker.gc_pauses import GC_PAUSES, settle_heap
from broker.group_settings import group_config, group_configs
from broker.log.cleaner.manager import LogCleaner
from broker.log.config import LogConfig
from broker.log.flusher import GroupCommitFlusher
from broker.log.manager import LogManager
from broker.loggers import configure_logging, parse_logger_levels
from broker.metadata_cache import MetadataCache
from broker.metrics import BrokerMetrics
from broker.metrics_state import BrokerParts
from broker.quota.manager import Quotas
from broker.registry.server import make_registry, registry_security
from broker.replica_manager import ReplicaManager
from broker.security import authorizer_log
from broker.security.authorizer import AclCache, Authorizer, parse_super_users
from broker.security.sasl import SaslService
from broker.security.tls import ListenerTls, TlsSettings, client_context, listener_tls
from broker.server import BrokerServer
from broker.service_configs import (
    controller_config,
    inter_broker_security,
    replication_settings,
    sasl_configs,
    share_config,
    txn_config,
)
from broker.share.manager import SharePartitionManager
from broker.share.persister import StatePersister
from broker.share.settings import share_settings
from broker.slow_steps import broker_loop_factory, log_summary
from broker.txn_verifier import TxnVerifier
from broker.zk_fence import ZkFenceWatcher, resign_leaderships
from coordinator.cluster import config_changes
from coordinator.cluster import topics as zk_topics
from coordinator.cluster.acls import ZkAclStore
from coordinator.cluster.broker_configs import (
    BrokerConfigFollower,
    ZkBrokerConfigStore,
    read_broker_config,
)
from coordinator.cluster.cluster_id import get_or_create_cluster_id
from coordinator.cluster.group_configs import GroupConfigFollower, ZkGroupConfigStore
from coordinator.cluster.isr import ZkIsrWriter
from coordinator.cluster.producer_ids import ProducerIdManager, ZkBlockSource
from coordinator.cluster.quotas import QuotaFollower, ZkQuotaStore
from coordinator.cluster.registration import Registration, register_broker
from coordinator.cluster.scram_credentials import CredentialCache
from coordinator.cluster.shutdown import ShutdownSettings, request_controlled_shutdown
from coordinator.cluster.zk import ZkClient, ZkConnectionLost, ZkError
from coordinator.controller.channel import BrokerChannel, ControllerChannel
from coordinator.controller.elector import ControllerElector
from coordinator.controller.log_dirs import ZkLogDirNotifier
from coordinator.group.service import GroupCoordinator
from coordinator.runtime.peers import Peers
from coordinator.share.service import ShareCoordinator
from coordinator.transaction.markers import MarkerWriter
from coordinator.transaction.service import TransactionCoordinator
from protocol.api.metadata import KAFKA_DOOR, NATIVE_DOOR, Endpoint
from protocol.clock import Clock, SystemClock
from protocol.errors import (
    OdradekError,
    RequestTimedOutError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from transport.connection import BrokerConnection
from transport.security import PLAINTEXT_CONFIG, uses_sasl, uses_tls

log = logging.getLogger("odradek.broker")
T = TypeVar("T")


class ZkTopicStore:
    """TopicStore over coordinator/cluster/topics.py."""

    def __init__(self, zk: ZkClient) -> None:
        self.zk = zk

    async def read_topic_config(self, topic: str) -> Mapping[str, str]:
        return await _zk_call(lambda: zk_topics.read_topic_config(self.zk, topic))

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        live_broker_ids: list[int],
        assignment: Mapping[int, Sequence[int]] | None = None,
    ) -> None:
        await _zk_call(
            lambda: zk_topics.create_topic(
                self.zk, name, num_partitions, replication_factor, dict(configs),
                live_broker_ids, assignment,
            )
        )  # fmt: skip

    async def delete_topic(self, name: str) -> None:
        await _zk_call(lambda: zk_topics.delete_topic(self.zk, name))

    async def write_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        await _zk_call(lambda: config_changes.write_topic_config(self.zk, topic, config))

    async def add_partitions(
        self,
        name: str,
        count: int,
        assignments: list[list[int]] | None,
        live_broker_ids: list[int],
        validate_only: bool,
    ) -> dict[int, list[int]]:
        return await _zk_call(
            lambda: zk_topics.add_partitions(
                self.zk, name, count, assignments, live_broker_ids, validate_only
            )
        )


async def _zk_call(call: Callable[[], Awaitable[T]]) -> T:
    try:
        return await call()
    except ZkConnectionLost as exc:
        raise RequestTimedOutError(f"ZooKeeper is not reachable: {exc}") from None
    except ZkError as exc:
        raise UnknownServerError(f"ZooKeeper: {exc}") from None


def run_forever(config: BrokerConfig) -> int:
    """Run the broker until SIGTERM/SIGINT; the process exit status."""
    configure_logging(config.broker_id, parse_logger_levels(config.logger_levels))
    # uvloop; with loop_debug_slow_ms, a loop that logs each step over it (broker/slow_steps.py)
    with asyncio.Runner(loop_factory=broker_loop_factory(config.loop_debug_slow_ms)) as runner:
        return runner.run(_main(config))


async def _main(config: BrokerConfig) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    broker = Broker(config)
    GC_PAUSES.install()  # the process's collections, timed (a metric: broker/gc_pauses.py)

    def on_log_dir_failure(_failure: object) -> None:
        if broker.log_manager.offline:  # every log directory failed: stop, as Kafka does
            log.error("broker %d: every log directory is offline; shutting down",
                      config.broker_id)  # fmt: skip
            stop.set()

    broker.log_manager.add_failure_listener(on_log_dir_failure)
    try:
        await broker.start(before_serving=settle_heap)  # start-up's heap frozen
    except (OdradekError, ZkError, OSError) as exc:
        log.error("broker %d could not start: %s", config.broker_id, exc)
        await broker.shutdown()
        return 1
    kafka = "" if broker.kafka_server is None else f", Kafka on port {broker.kafka_server.port}"
    log.info("broker %d up on %s:%d%s", config.broker_id, config.host, broker.port, kafka)
    await stop.wait()
    log.info("broker %d shutting down", config.broker_id)
    await broker.shutdown()
    log_summary(loop)  # debug mode: the loop's CPU by step name (broker/slow_steps.py)
    log.info("broker %d stopped", config.broker_id)
    return 1 if broker.log_manager.offline else 0


def make_cleaner(
    config: BrokerConfig,
    logs: LogManager,
    clock: Clock,
    high_watermark: Callable[[str, int], int | None],
) -> LogCleaner | None:
    """The log cleaner of compacted topics, from the broker's log.cleaner.* settings."""
    if not config.log_cleaner_enable:
        return None
    return LogCleaner(logs, clock, cleaner_settings(config), high_watermark)


class Broker:
    """Owns every long-lived piece; `start` and `shutdown` in the order the module describes."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.clock = SystemClock()
        self.log_manager = LogManager(
            list(config.all_log_dirs), config.default_log_config(), self.clock
        )
        self.flusher = GroupCommitFlusher()
        self.cleaner = make_cleaner(config, self.log_manager, self.clock, self._high_watermark)
        self.zk = ZkClient(config.zookeeper, config.zookeeper_session_timeout_ms)
        self.isr_writer = ZkIsrWriter(self.zk, config.broker_id)
        self.replicas = ReplicaManager(
            config.broker_id,
            self.log_manager,
            self.flusher,
            config.default_log_config(),
            config.max_delayed_fetches,
            config.fetch_max_bytes,
            clock=self.clock,
            connect=self._replica_connection,
            replication=replication_settings(config),
            isr_writer=self.isr_writer,
            log_dir_notifier=ZkLogDirNotifier(self.zk, config.broker_id),
            fetch_session_slots=config.max_incremental_fetch_session_cache_slots,
        )
        metadata, topics = MetadataCache(), ZkTopicStore(self.zk)
        authorizer, self.acls = self._authorizer(config)
        # SCRAM credentials (/config/users), following the config change notifications
        self.credentials = CredentialCache(self.zk)
        self.registry = None  # Confluent's Schema Registry API (broker/registry/), when a port
        if config.schema_registry_port:
            self.registry = make_registry(self.replicas, metadata, topics, self.clock, self.zk,
                                          config.broker_id, authorizer)  # fmt: skip
        broker_wide, per_listener = sasl_configs(config)
        sasl = SaslService(broker_wide, self.credentials.lookup, self.clock.monotonic_ms,
                           listeners=per_listener)  # fmt: skip
        configs = group_configs(config, ZkGroupConfigStore(self.zk))  # KIP-848 group configs
        self.groups = GroupCoordinator(
            config.broker_id, self.replicas, metadata, topics, self.clock, group_config(config),
            configs=configs,
        )  # fmt: skip
        self.group_configs = GroupConfigFollower(self.zk, configs.apply, configs.replace_all)
        producer_ids = ProducerIdManager(config.broker_id, ZkBlockSource(self.zk))
        self.peers = Peers(metadata, self._peer_connection)
        self.transactions = TransactionCoordinator(
            config.broker_id, self.replicas, metadata, topics, self.clock,
            producer_ids.next_producer_id, MarkerWriter(metadata, self.peers), txn_config(config),
        )  # fmt: skip
        self.share_coordinator = ShareCoordinator(
            config.broker_id, self.replicas, metadata, topics, self.clock, share_config(config)
        )
        persister = StatePersister(config.broker_id, self.share_coordinator, self.peers,
                                   metadata.topic_id, self.clock)  # fmt: skip
        # client quotas (/config/users, /config/clients: coordinator/cluster/quotas.py), set by
        # AlterClientQuotas through any broker and followed through the same notifications
        quotas = Quotas(config.quota_window_num, config.quota_window_size_seconds * 1000)
        self.elector = ControllerElector(
            self.zk, config.broker_id, clock=self.clock, config=controller_config(config),
            channel_factory=self._controller_channel,
        )  # fmt: skip
        self.cluster = ClusterIdentity()  # settled by start, before any listener accepts
        self.ctx = BrokerContext(
            config, self.clock, self.replicas, metadata, topics, ControllerEpoch(),
            groups=self.groups, transactions=self.transactions,
            txn_verifier=TxnVerifier(config.broker_id, self.transactions, self.peers),
            producer_ids=producer_ids, elector=self.elector, cluster=self.cluster, sasl=sasl,
            quotas=quotas, quota_store=ZkQuotaStore(self.zk), credentials=self.credentials,
            broker_configs=ZkBrokerConfigStore(self.zk), static_config=config,
            share=SharePartitionManager(self.replicas, self.clock, share_settings(
                lambda: self.ctx.config, configs.overrides), persister=persister),
            share_coordinator=self.share_coordinator, share_persister=persister,
            authorizer=authorizer,
        )  # fmt: skip
        parts = BrokerParts(self.replicas, metadata, self.ctx.controller_epoch)
        parts.groups = self.groups
        parts.share = self.ctx.share.metrics  # KIP-932 (broker/share/metrics.py)
        parts.cleaner = self.cleaner
        parts.elector = self.elector
        parts.quotas, parts.clock = quotas, self.clock
        parts.registry = None if self.registry is None else self.registry.read_metrics
        self.metrics = BrokerMetrics(parts)  # served only with a metrics_port (broker/metrics.py)
        # one server per listener (TLS contexts are loaded by start); `server` is the native
        # inter-broker listener's, `kafka_server` the first Kafka listener's
        self.native_servers = [self._server(n, False) for n in config.native_listener_list()]
        self.kafka_servers = [self._server(n, True) for n in config.kafka_listeners()]
        inter = config.inter_broker_listener().name
        self.server = next(s for s in self.native_servers if s.listener == inter)
        self.port = config.port
        self.kafka_server = self.kafka_servers[0] if self.kafka_servers else None
        parts.servers = {"native": self.server}
        if self.kafka_server is not None:
            parts.servers["kafka"] = self.kafka_server
        for s in self.native_servers + self.kafka_servers:
            if s is not self.server and s is not self.kafka_server:
                parts.servers[f"{s.door.name} {s.listener}"] = s
        self.inter_broker_security = PLAINTEXT_CONFIG  # the broker's own connections (start)
        self.config_changes = config_changes.ConfigChangeListener(
            self.zk, self._apply_topic_config, self._hosted_topics
        )
        self.quotas = QuotaFollower(self.zk, quotas.configure, quotas.replace_all)
        self.quotas.follow(self.config_changes)
        self.group_configs.follow(self.config_changes)
        # dynamic broker configs (/config/brokers/<id>, <default>), applied live
        self.dynamic = DynamicApplier(
            self.ctx,
            lambda entity: read_broker_config(self.zk, entity),
            self._set_log_defaults,
            self.cleaner,
            self._load_tls,
            self.elector.set_default_unclean,
        )
        BrokerConfigFollower(config.broker_id, self.dynamic.reload).follow(self.config_changes)
        self._registration: Registration | None = None
        self._electing = False  # the elector started (start), so shutdown leaves the election
        self._background: asyncio.Task[Any] | None = None
        self._cleaning: asyncio.Task[Any] | None = None
        self._zk_started = False
        # cut from ZooKeeper past the session timeout: lead nothing (broker/zk_fence.py)
        self.fence = ZkFenceWatcher(self.zk, lambda: resign_leaderships(self.replicas), self.clock)

    async def start(self, before_serving: Callable[[], None] | None = None) -> None:
        """Start every piece; `before_serving` runs once all is loaded, before the listeners
        open (the process's `settle_heap`, broker/gc_pauses.py)."""
        self.log_manager.load_all()
        log.info("logs loaded from %s", ", ".join(map(str, self.config.all_log_dirs)))
        await self.zk.start(self.config.zookeeper_connect_timeout_ms / 1000)
        self._zk_started = True
        self.metrics.parts.zk_state = "CONNECTED"
        self.zk.add_state_listener(self.metrics.on_zk_state)
        self.fence.start()
        self.cluster.settle(await get_or_create_cluster_id(self.zk))
        log.info("cluster id %s", self.cluster.id)
        if self.acls is not None:  # every ACL loaded before the first request is served
            await self.acls.start()
        await self.credentials.start(self.config_changes)  # loaded before any login
        await self.quotas.reload()  # every quota set, before the first request is read
        await self.group_configs.reload()  # and every group's configs
        await self.dynamic.reload()  # the dynamic broker configs, before TLS is loaded
        self._load_tls()  # UsageError (one line, exit 1) when a keystore cannot be used
        if before_serving is not None:
            before_serving()
        for server in self.native_servers + self.kafka_servers:
            await server.start()
        self.port = self.server.port
        kafka = None
        if self.kafka_server is not None:
            kafka = self._advertised(self.kafka_server)
        if self.config.metrics_port:
            port = self.metrics.start(self.config.host, self.config.metrics_port)
            log.info("metrics on http://%s:%d/metrics", self.config.host, port)
        self.replicas.start()
        self.groups.start()
        self.transactions.start()
        self.share_coordinator.start()
        await self.config_changes.start()
        # our listener holds the port: a stale registration of it is our dead predecessor's
        host, port = self._advertised(self.server)
        self._registration = await register_broker(
            self.zk, self.config.broker_id, host, port, kafka=kafka, holds_port=True,
            listeners=self._endpoints(),
        )  # fmt: skip
        if self.registry is not None:
            security = registry_security(
                tls_settings(self.config) if self.config.schema_registry_ssl else None,
                self.config.schema_registry_authentication, self.credentials.lookup,
            )  # fmt: skip
            port = await self.registry.start(self.config.host, self.config.schema_registry_port,
                                             host, security)  # fmt: skip
            log.info("schema registry on %s://%s:%d", security.scheme, host, port)
        self._electing = True
        await self.elector.start()
        self._background = asyncio.create_task(
            self.log_manager.run_background(
                check_interval_ms=self.config.log_retention_check_interval_ms
            )
        )
        if self.cleaner is not None:
            self._cleaning = asyncio.create_task(self.cleaner.run())

    async def shutdown(self) -> None:
        if self.config.controlled_shutdown_enable and self._registration is not None:
            settings = ShutdownSettings(
                self.config.controlled_shutdown_max_retries,
                self.config.controlled_shutdown_retry_backoff_ms,
                security=self.inter_broker_security,
            )
            await _quietly(
                request_controlled_shutdown(self.zk, self.config.broker_id, self.elector, settings)
            )
        for server in self.native_servers + self.kafka_servers:
            server.stop_accepting()
        await asyncio.get_running_loop().run_in_executor(None, self.metrics.stop)
        if self.registry is not None:
            await _quietly(self.registry.stop())
        if self._electing:
            await _quietly(self.elector.stop())
        if self._registration is not None:
            await _quietly(self._registration.close())
        for server in self.native_servers + self.kafka_servers:
            await server.stop()
        await _quietly(self.config_changes.stop())
        if self.acls is not None:
            await _quietly(self.acls.stop())
        await _quietly(self.groups.shutdown())
        await _quietly(self.transactions.shutdown())
        await _quietly(self.ctx.share.close())
        await _quietly(self.share_coordinator.shutdown())
        await _quietly(self.replicas.shutdown())
        await _quietly(self.isr_writer.close())
        for task in (self._cleaning, self._background):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self.log_manager.shutdown()
        await _quietly(self.fence.stop())
        if self._zk_started:
            await _quietly(self.zk.stop())

    def _authorizer(self, config: BrokerConfig) -> tuple[Authorizer | None, ZkAclStore | None]:
        """Kafka's ACLs when `authorizer_class_name` names an authorizer: the context's
        authorizer over a cache that ZooKeeper's ACLs fill and follow (its `store`,
        coordinator/cluster/acls.py)."""
        if config.authorizer_log_file:
            authorizer_log.attach_file(
                str(config.log_dir / config.authorizer_log_file), config.authorizer_log_level
            )
        else:
            authorizer_log.log.setLevel(config.authorizer_log_level)
        if not config.authorizer_class_name:
            return None, None
        authorizer = Authorizer(
            AclCache(),
            parse_super_users(config.super_users),
            config.allow_everyone_if_no_acl_found,
        )
        authorizer.store = store = ZkAclStore(self.zk, authorizer.cache)
        return authorizer, store

    def _high_watermark(self, topic: str, partition: int) -> int | None:
        """What the log cleaner may clean below (None: not a partition this broker hosts)."""
        p = self.replicas.partitions.get((topic, partition))
        return None if p is None else p.high_watermark

    async def _peer_connection(self, host: str, port: int) -> BrokerConnection:
        """A connection to another broker's native port (markers, KIP-890 verification)."""
        return await BrokerConnection.connect(
            host, port, client_id=f"broker-{self.config.broker_id}",
            security=self.inter_broker_security,
        )  # fmt: skip

    async def _replica_connection(self, host: str, port: int, broker_id: int) -> BrokerConnection:
        """A follower's connection to its leader, secured as the inter-broker listener says."""
        return await BrokerConnection.connect(
            host, port, client_id=f"replica-fetcher-{broker_id}", max_in_flight=2,
            security=self.inter_broker_security,
        )  # fmt: skip

    def _controller_channel(
        self, broker_id: int, on_overflow: Callable[[int], None]
    ) -> ControllerChannel:
        """The controller's channel to the brokers, over the inter-broker listener's security."""

        async def connect(host: str, port: int) -> BrokerConnection:
            return await BrokerConnection.connect(
                host, port, client_id=f"controller-{broker_id}",
                security=self.inter_broker_security,
            )  # fmt: skip

        return BrokerChannel(broker_id, on_overflow=on_overflow, connect=connect)

    def _server(self, listener: Listener, kafka: bool) -> BrokerServer:
        door = KafkaDoor(self._monotonic_s) if kafka else NativeDoor(self._monotonic_s)
        return BrokerServer(self.ctx, self.clock, self._door(door), listener.host, listener.port,
                            listener.name, listener.security_protocol)  # fmt: skip

    def _load_tls(self) -> None:
        """The TLS of every SSL / SASL_SSL listener (its listener.name.<l>.ssl.* settings over
        the broker's), and of the broker's own connections when the inter-broker listener uses
        TLS (that listener's keystore is the broker's client certificate); again when a
        dynamic config names a listener's keystore or truststore (broker/dynamic_apply.py)."""
        config = self.ctx.config
        loaded: dict[tuple[TlsSettings, str, bool], ListenerTls] = {}
        for server in self.native_servers + self.kafka_servers:
            if uses_tls(server.security_protocol):
                sasl = uses_sasl(server.security_protocol)
                settings = tls_settings(config, server.listener)
                rules = listener_setting(config, server.listener,
                                         "ssl_principal_mapping_rules")  # fmt: skip
                key = (settings, rules, sasl)
                if key not in loaded:  # listeners with the same settings share one context
                    loaded[key] = listener_tls(settings, rules, sasl)
                server.tls = loaded[key]
        inter = config.inter_broker_listener()
        settings = tls_settings(config, inter.name)
        context = client_context(settings) if uses_tls(inter.security_protocol) else None
        self.inter_broker_security = inter_broker_security(
            config, inter.security_protocol, context, inter.name
        )

    def _advertised(self, server: BrokerServer) -> tuple[str, int]:
        native = server in self.native_servers
        listeners = self.config.native_listener_list() if native else self.config.kafka_listeners()
        listener = next(n for n in listeners if n.name == server.listener)
        return self.config.advertised(listener, server.port, native)

    def _endpoints(self) -> tuple[Endpoint, ...]:
        """Every listener as advertised, the inter-broker one first (peers dial it)."""
        out = [self._endpoint(self.server, NATIVE_DOOR)]
        out += [self._endpoint(s, NATIVE_DOOR) for s in self.native_servers if s is not self.server]
        out += [self._endpoint(s, KAFKA_DOOR) for s in self.kafka_servers]
        return tuple(out)

    def _endpoint(self, server: BrokerServer, door: str) -> Endpoint:
        host, port = self._advertised(server)
        return Endpoint(door, server.listener, host, port, server.security_protocol)

    def _monotonic_s(self) -> float:
        """The doors' clock (KIP-368 expiry), the one the SASL service stamps sessions with."""
        return self.clock.monotonic_ms() / 1000

    def _door(self, door: Door) -> Door:
        """The door, metered when metrics are served (else requests pay nothing for them)."""
        return self.metrics.door(door) if self.config.metrics_port else door

    async def _set_log_defaults(self, defaults: LogConfig) -> None:
        """New topic defaults (dynamic broker configs): for logs opened from now on, and every
        open log given them under its topic's overrides."""
        self.log_manager.default_config = defaults
        self.replicas.default_log_config = self.replicas.roles.default_log_config = defaults
        for topic in sorted(self._hosted_topics()):
            with contextlib.suppress(UnknownTopicOrPartitionError):  # deleted since
                overrides = await zk_topics.read_topic_config(self.zk, topic)
                self.replicas.roles.apply_topic_config(topic, overrides)

    def _apply_topic_config(self, topic: str, overrides: Mapping[str, str]) -> None:
        """A topic's changed overrides: to its open logs, and unclean election turned on to the
        controller, if this broker is it (Kafka's TopicConfigHandler)."""
        self.replicas.roles.apply_topic_config(topic, overrides)
        if overrides.get("unclean.leader.election.enable", "").lower() == "true":
            self.elector.unclean_enabled()

    def _hosted_topics(self) -> set[str]:
        return {plog.topic for plog in self.log_manager.logs()}


async def _quietly(step: Awaitable[Any]) -> None:
    """Shutdown goes on whatever one step raises; the failure is logged."""
    try:
        await step
    except Exception as exc:
        log.warning("shutdown step failed: %s", exc)
