"""A broker's registration: the ephemeral /brokers/ids/<id> znode, kept across session loss.

`register_broker` creates the znode with {"host", "port", "timestamp"}. If the node exists:
- owned by our own session (a retried create whose first answer was lost): done;
- same host and port, another session: our previous incarnation was killed and its session has
  not expired yet. With `holds_port` (the daemon: its listener is bound to that port, so no
  other process listens there and the old incarnation's port refuses, the same proof the
  controller acts on in coordinator/controller/fast_death.py), the stale node is deleted
  (conditionally on its version) and ours created at once: the controller sees a new czxid, a
  bounce, and takes
  the broker back. Without it, wait (polling) until ZooKeeper drops it, bounded by the session
  timeout plus a margin;
- a different host or port: another live broker has this id; fail with BrokerIdInUseError.

The returned `Registration` listens to the session: after LOST (ephemerals gone) it registers
again on the next CONNECTED. `await registration.close()` stops that (the node itself goes when
the session is closed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.topics import ensure_layout
from coordinator.cluster.zk import (
    ZkBadVersion,
    ZkClient,
    ZkConnectionLost,
    ZkNodeExists,
    ZkNoNode,
    ZkState,
)
from coordinator.cluster.zk_paths import BrokerRegistration
from protocol.api.metadata import Endpoint as ListenerEndpoint
from protocol.clock import Clock, SystemClock
from protocol.errors import OdradekError

log = logging.getLogger(__name__)

POLL_MS = 200
WAIT_MARGIN_MS = 5_000

Sleep = Callable[[float], Awaitable[None]]


class BrokerIdInUseError(OdradekError):
    name = "BROKER_ID_IN_USE"
    default_message = "Another live broker is registered with this broker id."


Endpoint = tuple[str, int]


async def _create_once(
    zk: ZkClient,
    broker_id: int,
    host: str,
    port: int,
    clock: Clock,
    kafka: Endpoint | None,
    holds_port: bool = False,
    listeners: tuple[ListenerEndpoint, ...] = (),
) -> bool:
    """One attempt: True when registered (now or already by this session); False when a stale
    registration of ours must expire first. Raises BrokerIdInUseError for another broker."""
    path = paths.broker_path(broker_id)
    k_host, k_port = kafka if kafka is not None else (None, -1)
    data = BrokerRegistration(host, port, clock.time_ms(), k_host, k_port, listeners).encode()
    try:
        await zk.create(path, data, ephemeral=True)
        return True
    except ZkNodeExists:
        pass
    try:
        existing, stat = await zk.get_with_stat(path)
    except ZkNoNode:
        return False  # vanished between the two calls: try again now
    if stat.ephemeral_owner == zk.session_id:
        return True
    other = BrokerRegistration.decode(existing)
    if (other.host, other.port) != (host, port):
        raise BrokerIdInUseError(
            f"broker id {broker_id} is registered by a live broker at {other.host}:{other.port}"
        )
    if holds_port:
        log.info("broker %d: replacing the registration of its previous incarnation", broker_id)
        with contextlib.suppress(ZkNoNode, ZkBadVersion):  # gone or changed: look again
            await zk.delete(path, stat.version)
    return False


async def register_broker(
    zk: ZkClient,
    broker_id: int,
    host: str,
    port: int,
    *,
    kafka: Endpoint | None = None,
    clock: Clock | None = None,
    sleep: Sleep = asyncio.sleep,
    wait_ms: int | None = None,
    holds_port: bool = False,
    listeners: tuple[ListenerEndpoint, ...] = (),
) -> Registration:
    """Register now (waiting for our own stale registration to expire, or replacing it with
    `holds_port`); keep it registered. `kafka` is the advertised Kafka listener, if any;
    `listeners` every advertised listener of both doors (the inter-broker one first)."""
    clock = clock or SystemClock()
    await ensure_layout(zk)
    wait_ms = zk.session_timeout_ms + WAIT_MARGIN_MS if wait_ms is None else wait_ms
    deadline_ms = clock.monotonic_ms() + wait_ms
    while not await _create_once(zk, broker_id, host, port, clock, kafka, holds_port, listeners):
        if holds_port and await _create_once(
            zk, broker_id, host, port, clock, kafka, listeners=listeners
        ):
            break  # the stale node was replaced
        if clock.monotonic_ms() >= deadline_ms:
            raise BrokerIdInUseError(
                f"broker id {broker_id} is still registered by an old session of "
                f"{host}:{port} after {wait_ms} ms"
            )
        await sleep(POLL_MS / 1000)
    log.info("broker %d registered at %s:%d", broker_id, host, port)
    return Registration(zk, broker_id, host, port, clock, sleep, kafka, listeners)


class Registration:
    """Re-registers after the session is lost. Made by register_broker."""

    def __init__(
        self,
        zk: ZkClient,
        broker_id: int,
        host: str,
        port: int,
        clock: Clock,
        sleep: Sleep,
        kafka: Endpoint | None = None,
        listeners: tuple[ListenerEndpoint, ...] = (),
    ) -> None:
        self.zk = zk
        self.kafka = kafka
        self.listeners = listeners
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self._clock = clock
        self._sleep = sleep
        self._lost = False
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        zk.add_state_listener(self._on_state)

    def _on_state(self, state: ZkState) -> None:
        if state == "LOST":
            self._lost = True
        elif state == "CONNECTED" and self._lost and not self._closed:
            self._lost = False
            if self._task is None or self._task.done():
                self._task = asyncio.get_running_loop().create_task(self._reregister())

    async def _reregister(self) -> None:
        try:
            await _create_once(
                self.zk,
                self.broker_id,
                self.host,
                self.port,
                self._clock,
                self.kafka,
                listeners=self.listeners,
            )
            log.info("broker %d registered again after session loss", self.broker_id)
        except (ZkConnectionLost, OdradekError) as exc:
            log.error("broker %d could not register again: %s", self.broker_id, exc)

    async def close(self) -> None:
        self._closed = True
        self.zk.remove_state_listener(self._on_state)
        if self._task is not None:
            self._task.cancel()
