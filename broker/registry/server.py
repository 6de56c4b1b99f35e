"""The registry's HTTP server on a broker, and what the service needs of the broker.

`RegistryServer.start` binds the port (0: any free one) on the broker's loop, publishes this
broker's registry URL at /schema_registry/brokers/<id> in ZooKeeper (persistent, rewritten at
every start: only the writer's, a live broker's, is ever read) and starts the service's
follower task. A write that reaches a broker other than the writer is forwarded to the
writer's published URL (`ZkForwarder`), as Confluent's followers forward to their leader;
the answer (status, body and the writer's headers: its position and, for a forwarded
write, the records it appended, which routes.py applies here at once) is passed back. The
request's Authorization header goes with it: the writer checks the login and the ACLs again.

Security (`RegistrySecurity`, from the broker's settings): with `schema_registry_ssl` the
port speaks HTTPS with the broker's keystore (its ssl_keystore_* settings, as its listeners),
and the forwarder trusts the broker's truststore (the other brokers' certificates); with
`schema_registry_authentication = "http_basic"` every request logs in with a SCRAM user of
the cluster (auth.py).

Why the broker's own loop (the metrics port has a thread): the registry's state is the loop's,
and every answer reads it. Its work per request is a dict lookup or, for a write, a schema
parse and one append: small beside a produce request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from broker.registry import metrics
from broker.registry.auth import BasicAuth, Lookup
from broker.registry.routes import (
    CONTENT_TYPE,
    ENVELOPE,
    FORWARDED,
    POSITION,
    Authorize,
    Login,
    RegistryRoutes,
)
from broker.replica_manager import ReplicaManager
from broker.security.authorizer import Authorizer
from broker.security.tls import TlsSettings, client_context, server_context
from coordinator.cluster.zk import ZkClient, ZkError, ZkNoNode
from coordinator.runtime.log import ClusterView, TopicCreator
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import TOPIC
from coordinator.schema_registry.service import RegistryService
from protocol.acl import AclOperation, ResourceType
from protocol.clock import Clock
from protocol.principal import KafkaPrincipal

log = logging.getLogger("odradek.schema_registry")

URLS = "/schema_registry/brokers"
FORWARD_TIMEOUT_S = 30.0
SHUTDOWN_S = 2.0


class ReplicaLog:
    """The replica manager as the service's `RegistryLog`: its coordinator methods and the
    high watermark of a hosted partition."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self.replicas = replicas
        self.led_partitions = replicas.led_partitions
        self.log_range = replicas.log_range
        self.read_records = replicas.read_records
        self.append_replicated = replicas.append_replicated

    def high_watermark(self, topic: str, partition: int) -> int | None:
        p = self.replicas.partitions.get((topic, partition))
        return None if p is None else p.high_watermark


class ZkForwarder:
    """Forwards a request to another broker's registry, found by its URL in ZooKeeper."""

    def __init__(self, zk: ZkClient, tls: ssl.SSLContext | None = None) -> None:
        self.zk, self.tls = zk, tls
        self._session: aiohttp.ClientSession | None = None

    async def forward(self, broker_id: int, request: web.Request, body: bytes) -> web.Response:
        try:
            url = (await self.zk.get(f"{URLS}/{broker_id}"))[0].decode()
        except (ZkNoNode, ZkError) as exc:
            raise RegistryError.forwarding_failed(
                f"the registry of broker {broker_id} (the _schemas writer) is not known: {exc}"
            ) from None
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=FORWARD_TIMEOUT_S)
            )
        headers = {"Content-Type": CONTENT_TYPE, FORWARDED: "1"}
        if "Authorization" in request.headers:  # the writer checks the login again
            headers["Authorization"] = request.headers["Authorization"]
        tls: ssl.SSLContext | bool = self.tls if self.tls is not None else True
        try:
            async with self._session.request(request.method, url + request.path_qs, data=body,
                                             headers=headers, ssl=tls) as resp:  # fmt: skip
                out = web.Response(status=resp.status, body=await resp.read(),
                                   content_type=CONTENT_TYPE)  # fmt: skip
                for name in (POSITION, ENVELOPE):
                    if name in resp.headers:
                        out.headers[name] = resp.headers[name]
                return out
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise RegistryError.forwarding_failed(
                f"forwarding to broker {broker_id}'s registry at {url} failed: {exc!r}"
            ) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


@dataclass(frozen=True, slots=True)
class HttpPeer:
    """An HTTP request as the authorizer sees a session: its principal and address."""

    principal: KafkaPrincipal
    peer_host: str


@dataclass(frozen=True, slots=True)
class RegistrySecurity:
    """How the registry's port is secured: its server TLS context (None: plain HTTP), the
    context its forwarder trusts peers with, and the login (None: everyone is anonymous)."""

    server_tls: ssl.SSLContext | None = None
    client_tls: ssl.SSLContext | None = None
    login: Login | None = None

    @property
    def scheme(self) -> str:
        return "http" if self.server_tls is None else "https"


def authorize_with(authorizer: Authorizer) -> Authorize:
    """The door's check over the broker's authorizer: DESCRIBE (reads) or ALTER (writes) on
    the topic `_schemas`, logged as the authorizer logs every decision."""

    def authorize(principal: KafkaPrincipal, peer_host: str, write: bool) -> bool:
        op = AclOperation.ALTER if write else AclOperation.DESCRIBE
        return authorizer.authorize(HttpPeer(principal, peer_host), op, ResourceType.TOPIC,
                                    TOPIC, request="SchemaRegistry")  # fmt: skip

    return authorize


class RegistryServer:
    def __init__(
        self, service: RegistryService, zk: ZkClient, broker_id: int,
        authorize: Authorize | None = None,
    ) -> None:  # fmt: skip
        self.service, self.zk, self.broker_id = service, zk, broker_id
        self.authorize = authorize
        self.security = RegistrySecurity()
        self.forwarder = ZkForwarder(zk)
        self.metrics = metrics.RegistryMetrics()
        # BrokerParts.registry: the metrics, read on the loop at scrape time (metrics.py)
        self.read_metrics = metrics.reader(self.metrics, lambda: self.service.state)
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._follow: asyncio.Task[None] | None = None

    async def start(
        self, host: str, port: int, advertised_host: str,
        security: RegistrySecurity | None = None,
    ) -> int:  # fmt: skip
        """Serve on (host, port), secured as `security` says; the bound port."""
        self.security = security or RegistrySecurity()
        self.forwarder.tls = self.security.client_tls
        self._follow = asyncio.create_task(self.service.follow())
        app = RegistryRoutes(self.service, self.forwarder, self.authorize,
                             self.security.login, self.metrics).app()  # fmt: skip
        # shutdown waits this long for requests under way (aiohttp's default: a minute)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_S)
        await self._runner.setup()
        sock = socket.create_server((host, port), reuse_port=False)  # OSError: one line
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock, ssl_context=self.security.server_tls).start()
        url = f"{self.security.scheme}://{advertised_host}:{self.port}".encode()
        path = f"{URLS}/{self.broker_id}"
        try:
            await self.zk.create(path, url, makepath=True)
        except ZkError:
            await self.zk.set(path, url)
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._follow is not None:
            self._follow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follow
        await self.forwarder.close()


def make_registry(
    replicas: ReplicaManager,
    cluster: ClusterView,
    topics: TopicCreator,
    clock: Clock,
    zk: ZkClient,
    broker_id: int,
    authorizer: Authorizer | None,
) -> RegistryServer:
    """The registry of one broker, over its replica manager, metadata cache and topic store,
    checked by its authorizer when it has one."""
    service = RegistryService(ReplicaLog(replicas), cluster, topics, clock)
    authorize = None if authorizer is None else authorize_with(authorizer)
    return RegistryServer(service, zk, broker_id, authorize)


def registry_security(
    tls: TlsSettings | None, authentication: str, lookup: Lookup
) -> RegistrySecurity:
    """The registry's security from the broker's settings: `tls`, the broker's ssl_* settings
    when `schema_registry_ssl` is on (UsageError when its keystore cannot be used), and
    `schema_registry_authentication`."""
    login = BasicAuth(lookup) if authentication == "http_basic" else None
    if tls is None:
        return RegistrySecurity(login=login)
    return RegistrySecurity(server_context(tls), client_context(tls), login)
