"""What the client knows about the cluster, and its connections to brokers.

`ClusterMetadata` is a pure snapshot built from one MetadataResponse: brokers by node id, each
topic's partitions with leader, leader epoch, replicas and ISR. Lookups are dict reads.

`Cluster` owns the I/O around it:
- bootstrap: the first Metadata request goes to the bootstrap servers ("host:port,host:port"),
  tried in turn; later ones go to any known broker, falling back to the bootstrap list. When
  none answers and a bootstrap address closed the connection before any answer, it is asked
  whether it is a broker's Kafka port (transport/kafka_probe.py): then a UsageError says so and
  names the native listener;
- refresh on demand: `request_update()` coalesces concurrent callers into one refresh, spaced at
  least `retry_backoff_ms` apart; a refresh that fails everywhere is retried with that backoff;
- topics of interest: producers and consumers `add_topics`; a refresh asks for those (or all
  topics when `all_topics`); `wait_for_topic` adds one and refreshes until it has partitions;
- a connection pool keyed by node id: one `BrokerConnection` per broker, reopened on demand
  after it closes (a lost connection is noticed by the next request) and replaced when the
  broker's address changes. A connection is pooled by the task that opens it, so one whose
  callers were cancelled meanwhile is still owned (and closed by `close()`, which also cancels
  the opens under way).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from protocol.api.metadata import BrokerInfo, MetadataRequest, MetadataResponse
from protocol.clock import Clock
from protocol.errors import (
    NetworkError,
    OdradekError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
    UsageError,
    for_code,
)
from transport.connection import BrokerConnection
from transport.kafka_probe import KafkaListener, probe, wrong_door
from transport.sasl import AUTHENTICATION_ERRORS
from transport.security import PLAINTEXT_CONFIG, SecurityConfig

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error_code: int


@dataclass(slots=True)
class ClusterMetadata:
    """One snapshot of the cluster; replaced whole on each refresh."""

    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    partitions: dict[str, list[PartitionInfo]] = field(default_factory=dict)
    topic_errors: dict[str, int] = field(default_factory=dict)
    controller_id: int = -1
    cluster_id: str | None = None
    _available: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def from_response(cls, resp: MetadataResponse) -> ClusterMetadata:
        meta = cls(
            {b.node_id: b for b in resp.brokers}, {}, {}, resp.controller_id, resp.cluster_id
        )
        for topic in resp.topics:
            if topic.error_code != 0:
                meta.topic_errors[topic.name] = topic.error_code
                continue
            parts = [
                PartitionInfo(
                    topic.name,
                    p.partition,
                    p.leader,
                    p.leader_epoch,
                    tuple(p.replicas),
                    tuple(p.isr),
                    tuple(p.offline_replicas),
                    p.error_code,
                )
                for p in topic.partitions
            ]
            parts.sort(key=lambda p: p.partition)
            meta.partitions[topic.name] = parts
        return meta

    def partitions_for(self, topic: str) -> list[PartitionInfo] | None:
        return self.partitions.get(topic)

    def num_partitions(self, topic: str) -> int | None:
        parts = self.partitions.get(topic)
        return len(parts) if parts is not None else None

    def leader_for(self, topic: str, partition: int) -> int:
        """The leader's node id, or -1 when unknown or offline."""
        parts = self.partitions.get(topic)
        if parts is None or not 0 <= partition < len(parts):
            return NO_LEADER
        return parts[partition].leader

    def leader_epoch_for(self, topic: str, partition: int) -> int:
        parts = self.partitions.get(topic)
        if parts is None or not 0 <= partition < len(parts):
            return -1
        return parts[partition].leader_epoch

    def available_partitions(self, topic: str) -> list[int]:
        """Partitions of `topic` whose leader is a known live broker (cached per snapshot)."""
        cached = self._available.get(topic)
        if cached is None:
            cached = self._available[topic] = [
                p.partition
                for p in self.partitions.get(topic, ())
                if p.leader != NO_LEADER and p.leader in self.brokers
            ]
        return cached


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a shared future's exception as seen: its awaiters (if any) handle it."""
    if not future.cancelled():
        future.exception()


def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    """ "h1:9092,h2:9093" (or a list of "h:p") -> [(host, port), ...]; UsageError if malformed."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(f"bootstrap server {item!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise UsageError("no bootstrap servers given")
    return out


class Cluster:
    """Metadata refresh and the per-node connection pool, shared by one client's parts."""

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        client_id: str | None = None,
        request_timeout_ms: int = 30_000,
        connect_timeout_ms: int = 5000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
        max_in_flight: int = 1000,
        security: SecurityConfig = PLAINTEXT_CONFIG,  # TLS and SASL for every connection
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        self.max_in_flight = max_in_flight
        self.metadata = ClusterMetadata()
        self.topics: set[str] = set()
        self.all_topics = False
        self._conns: dict[int, BrokerConnection] = {}
        self._bootstrap_conns: dict[tuple[str, int], BrokerConnection] = {}
        self._connecting: dict[object, asyncio.Future[BrokerConnection]] = {}
        self._refresh: asyncio.Task[ClusterMetadata] | None = None
        self._last_refresh_s = -1e9
        self._updated = asyncio.Event()
        self._closed = False

    # ----- metadata -------------------------------------------------------------------------

    def add_topics(self, topics: Iterable[str]) -> bool:
        """Track more topics; True when any was new (the caller may want a refresh)."""
        before = len(self.topics)
        self.topics.update(topics)
        return len(self.topics) != before

    async def request_update(self) -> ClusterMetadata:
        """Refresh now (or join the refresh under way); at most one per retry_backoff_ms."""
        if self._closed:
            raise NetworkError("the client is closed")
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.ensure_future(self._refresh_with_backoff())
            self._refresh.add_done_callback(_retrieve)
        return await asyncio.shield(self._refresh)

    async def wait_for_topic(self, topic: str, max_block_ms: int, clock: Clock) -> int:
        """Metadata for a topic not yet known, retried until max_block_ms: its partition count."""
        self.add_topics([topic])
        deadline = clock.monotonic_ms() + max_block_ms
        last: OdradekError | None = None
        while clock.monotonic_ms() < deadline:
            try:
                meta = await self.request_update()
            except OdradekError as exc:
                last = exc
                continue
            num = meta.num_partitions(topic)
            if num:
                return num
            code = meta.topic_errors.get(topic)
            last = for_code(code)(f"topic {topic!r}") if code else None
            if last is not None and not last.retriable:
                raise last
        raise last or UnknownTopicOrPartitionError(
            f"topic {topic!r} not in the metadata after {max_block_ms} ms"
        )

    def metadata_is_stale(self) -> bool:
        loop = asyncio.get_running_loop()
        return (loop.time() - self._last_refresh_s) * 1000 > self.metadata_max_age_ms

    async def _refresh_with_backoff(self) -> ClusterMetadata:
        loop = asyncio.get_running_loop()
        wait_s = self._last_refresh_s + self.retry_backoff_ms / 1000 - loop.time()
        if wait_s > 0:
            await asyncio.sleep(wait_s)
        self._last_refresh_s = loop.time()
        resp = await self._fetch_metadata()
        self.metadata = ClusterMetadata.from_response(resp)
        self._last_refresh_s = loop.time()
        self._drop_moved_connections()
        return self.metadata

    async def _fetch_metadata(self) -> MetadataResponse:
        topics = None if self.all_topics else sorted(self.topics)
        request = MetadataRequest(topics)
        last: OdradekError | None = None
        wrong: KafkaListener | None = None  # a bootstrap address that is a Kafka port
        for target in self._metadata_targets():
            conn: BrokerConnection | None = None
            try:
                conn = await self._connect_target(target)
                resp: MetadataResponse = await conn.send(request, self.request_timeout_ms)
                return resp
            except AUTHENTICATION_ERRORS:
                raise  # a refused login is the user's to fix: no other broker will take it
            except (NetworkError, OdradekError) as exc:
                last = exc
                if isinstance(target, tuple) and conn is not None and conn.closed:
                    wrong = wrong or await _kafka_port(conn, target)
        if wrong is not None:  # the user's to fix: one line that says which port to use
            raise UsageError(wrong_door(wrong))
        raise NetworkError(f"no broker answered a metadata request (last error: {last})")

    def _metadata_targets(self) -> list[int | tuple[str, int]]:
        nodes: list[int | tuple[str, int]] = list(self.metadata.brokers)
        random.shuffle(nodes)
        connected = [n for n in nodes if n in self._conns and not self._conns[n].closed]
        rest = [n for n in nodes if n not in connected]
        return [*connected, *rest, *self.bootstrap]

    async def send_to_any(
        self, request: Any, timeout_ms: float | None = None, *, read: bool = False
    ) -> Any:
        """Send to some reachable broker (admin requests any broker accepts).

        A broker that refuses the connection is passed over. `read`: the request only reads
        (Metadata, FindCoordinator), so one that times out or loses its connection is asked
        of the next broker too, as Kafka's admin client does: a paused broker still accepts
        connections (its kernel does) but never answers.
        """
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        last: OdradekError | None = None
        for target in self._metadata_targets():
            try:
                conn = await self._connect_target(target)
            except AUTHENTICATION_ERRORS:
                raise
            except OdradekError as exc:
                last = exc
                continue
            try:
                return await conn.send(request, timeout)
            except (NetworkError, RequestTimedOutError) as exc:
                if not read:
                    raise
                last = exc
        raise NetworkError(
            f"no broker {'answered' if read else 'is reachable'} (last error: {last})"
        )

    # ----- connections ----------------------------------------------------------------------

    async def connection(self, node_id: int) -> BrokerConnection:
        """The open connection to `node_id`, connecting when needed. NetworkError if unknown."""
        conn = self.open_connection(node_id)
        if conn is not None:
            return conn
        return await self._connect_target(node_id)

    def open_connection(self, node_id: int) -> BrokerConnection | None:
        """The connection to `node_id` if one is open now (None: `connection` must open it)."""
        conn = self._conns.get(node_id)
        return conn if conn is not None and not conn.closed else None

    async def _connect_target(self, target: int | tuple[str, int]) -> BrokerConnection:
        pool: dict[Any, BrokerConnection] = (
            self._conns if isinstance(target, int) else self._bootstrap_conns
        )
        conn = pool.get(target)
        if conn is not None and not conn.closed:
            return conn
        pending = self._connecting.get(target)
        if pending is None:
            pending = asyncio.ensure_future(self._open_into(target, pool))
            pending.add_done_callback(_retrieve)
            self._connecting[target] = pending
            pending.add_done_callback(lambda _f: self._connecting.pop(target, None))
        try:
            return await asyncio.shield(pending)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if pending.cancelled() and task is not None and not task.cancelling():
                raise NetworkError("the client is closed") from None  # close() stopped the open
            raise

    async def _open_into(
        self, target: int | tuple[str, int], pool: dict[Any, BrokerConnection]
    ) -> BrokerConnection:
        """Open a connection and put it in its pool, in one task: the connection is pooled
        (and so closed by `close()`) even when every caller waiting for it was cancelled, and
        one opened after `close()` is closed at once. Never a connection nobody owns."""
        conn = await self._open(target)
        if self._closed:
            conn.abort()
            raise NetworkError("the client is closed")
        old = pool.get(target)
        if old is not None and not old.closed:  # not expected (opens are coalesced): keep one
            conn.abort()
            return old
        pool[target] = conn
        return conn

    async def _open(self, target: int | tuple[str, int]) -> BrokerConnection:
        if self._closed:
            raise NetworkError("the client is closed")
        if isinstance(target, int):
            broker = self.metadata.brokers.get(target)
            if broker is None:
                raise NetworkError(f"broker {target} is not in the cluster metadata")
            host, port = broker.host, broker.port
        else:
            host, port = target
        return await self.connect(host, port, self.max_in_flight)

    async def connect(self, host: str, port: int, max_in_flight: int) -> BrokerConnection:
        """A new connection of this client (its id, timeouts and security) to host:port."""
        return await BrokerConnection.connect(
            host, port, client_id=self.client_id, connect_timeout_ms=self.connect_timeout_ms,
            max_in_flight=max_in_flight, security=self.security,
        )  # fmt: skip

    def _drop_moved_connections(self) -> None:
        for node_id, conn in list(self._conns.items()):
            broker = self.metadata.brokers.get(node_id)
            if broker is None or (broker.host, broker.port) != (conn.host, conn.port):
                del self._conns[node_id]
                conn.abort()

    async def close(self) -> None:
        self._closed = True
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        opening = list(self._connecting.values())
        for task in opening:
            task.cancel()
        await asyncio.gather(*opening, return_exceptions=True)
        conns = [*self._conns.values(), *self._bootstrap_conns.values()]
        self._conns.clear()
        self._bootstrap_conns.clear()
        for conn in conns:
            await conn.close()


async def _kafka_port(conn: BrokerConnection, target: tuple[str, int]) -> KafkaListener | None:
    """A bootstrap address that closed the connection before any answer may be a broker's
    Kafka port (transport/kafka_probe.py)."""
    return None if conn.answered else await probe(*target)
