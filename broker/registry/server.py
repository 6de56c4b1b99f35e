"""The registry's HTTP server on a broker, and what the service needs of the broker.

`RegistryServer.start` binds the port (0: any free one) on the broker's loop, publishes this
broker's registry URL at /schema_registry/brokers/<id> in ZooKeeper (persistent, rewritten at
every start: only the writer's, a live broker's, is ever read) and starts the service's
follower task. A write that reaches a broker other than the writer is forwarded to the
writer's published URL (`ZkForwarder`), as Confluent's followers forward to their leader;
the answer (status and body) is passed back as it is.

Why the broker's own loop (the metrics port has a thread): the registry's state is the loop's,
and every answer reads it. Its work per request is a dict lookup or, for a write, a schema
parse and one append: small beside a produce request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from broker.registry.routes import CONTENT_TYPE, FORWARDED, POSITION, Authorize, RegistryRoutes
from broker.replica_manager import ReplicaManager
from broker.security.authorizer import Authorizer
from coordinator.cluster.zk import ZkClient, ZkError, ZkNoNode
from coordinator.runtime.log import ClusterView, TopicCreator
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import TOPIC
from coordinator.schema_registry.service import RegistryService
from protocol.acl import AclOperation, ResourceType
from protocol.clock import Clock
from protocol.principal import ANONYMOUS, KafkaPrincipal

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

    def __init__(self, zk: ZkClient) -> None:
        self.zk = zk
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
        try:
            async with self._session.request(request.method, url + request.path_qs,
                                             data=body, headers=headers) as resp:  # fmt: skip
                out = web.Response(status=resp.status, body=await resp.read(),
                                   content_type=CONTENT_TYPE)  # fmt: skip
                if POSITION in resp.headers:
                    out.headers[POSITION] = resp.headers[POSITION]
                return out
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise RegistryError.forwarding_failed(
                f"forwarding to broker {broker_id}'s registry at {url} failed: {exc!r}"
            ) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


@dataclass(frozen=True, slots=True)
class AnonymousPeer:
    """An HTTP request as the authorizer sees a session: no login yet, so User:ANONYMOUS."""

    peer_host: str
    principal: KafkaPrincipal = ANONYMOUS


def authorize_with(authorizer: Authorizer) -> Authorize:
    """The door's check over the broker's authorizer: DESCRIBE (reads) or ALTER (writes) on
    the topic `_schemas`, logged as the authorizer logs every decision."""

    def authorize(peer_host: str, write: bool) -> bool:
        op = AclOperation.ALTER if write else AclOperation.DESCRIBE
        return authorizer.authorize(AnonymousPeer(peer_host), op, ResourceType.TOPIC, TOPIC,
                                    request="SchemaRegistry")  # fmt: skip

    return authorize


class RegistryServer:
    def __init__(
        self, service: RegistryService, zk: ZkClient, broker_id: int,
        authorize: Authorize | None = None,
    ) -> None:  # fmt: skip
        self.service, self.zk, self.broker_id = service, zk, broker_id
        self.authorize = authorize
        self.forwarder = ZkForwarder(zk)
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._follow: asyncio.Task[None] | None = None

    async def start(self, host: str, port: int, advertised_host: str) -> int:
        """Serve on (host, port); the bound port."""
        self._follow = asyncio.create_task(self.service.follow())
        app = RegistryRoutes(self.service, self.forwarder, self.authorize).app()
        # shutdown waits this long for requests under way (aiohttp's default: a minute)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_S)
        await self._runner.setup()
        sock = socket.create_server((host, port), reuse_port=False)  # OSError: one line
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        url = f"http://{advertised_host}:{self.port}".encode()
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
