"""A broker's side of controlled shutdown: ask the controller to move our leaderships away.

How it works: on SIGTERM the daemon calls `request_controlled_shutdown` before it stops
anything. Each attempt finds the controller (/controller, then its /brokers/ids registration)
and sends it ControlledShutdown(broker_id); when we are the controller ourselves, the request
runs on our own Controller directly (the network path would go through our own server), and
we wait until its requests to the other brokers are answered before resigning. The
answer lists the partitions we still lead; an empty list ends it. Otherwise (partitions with no
other ISR member, no controller, a time-out) it retries after `retry_backoff_ms`, at most
`max_retries` attempts within `total_timeout_ms`, and then the broker stops anyway: its
partitions fail over as on a crash.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import ZkClient, ZkError
from coordinator.cluster.zk_paths import BrokerRegistration, ControllerInfo, ZkDataError
from coordinator.controller.admin import controlled_shutdown
from coordinator.controller.elector import ControllerElector
from protocol.api.controller import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.errors import OdradekError, for_code
from transport.connection import BrokerConnection
from transport.security import PLAINTEXT_CONFIG, SecurityConfig

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
FLUSH_MAX_S = 2.0  # a request to a broker that just died is not waited for longer


@dataclass(frozen=True, slots=True)
class ShutdownSettings:
    max_retries: int = 3
    retry_backoff_ms: int = 200
    request_timeout_ms: int = 2_000
    total_timeout_ms: int = 6_000  # below `cluster kill`'s 10 s before it sends SIGKILL
    security: SecurityConfig = PLAINTEXT_CONFIG  # the inter-broker listener's TLS/SASL


async def request_controlled_shutdown(
    zk: ZkClient,
    broker_id: int,
    elector: ControllerElector | None,
    settings: ShutdownSettings,
    sleep: Sleep = asyncio.sleep,
) -> bool:
    """True once the controller answers that we lead nothing; False after the last retry or
    `total_timeout_ms`."""
    try:
        async with asyncio.timeout(settings.total_timeout_ms / 1000):
            return await _attempts(zk, broker_id, elector, settings, sleep)
    except TimeoutError:
        log.warning("controlled shutdown: no answer within %d ms", settings.total_timeout_ms)
        return False


async def _attempts(
    zk: ZkClient,
    broker_id: int,
    elector: ControllerElector | None,
    settings: ShutdownSettings,
    sleep: Sleep,
) -> bool:
    for attempt in range(1, settings.max_retries + 1):
        try:
            remaining = await _attempt(zk, broker_id, elector, settings)
        except (OdradekError, ZkError, ZkDataError, TimeoutError) as exc:
            log.warning("controlled shutdown attempt %d failed: %s", attempt, exc)
        else:
            if not remaining:
                log.info("controlled shutdown: no partitions led by broker %d", broker_id)
                return True
            log.info(
                "controlled shutdown attempt %d: still leading %d partitions (%s)",
                attempt, len(remaining), ", ".join(remaining[:5]),
            )  # fmt: skip
        if attempt < settings.max_retries:
            await sleep(settings.retry_backoff_ms / 1000)
    return False


async def _attempt(
    zk: ZkClient, broker_id: int, elector: ControllerElector | None, settings: ShutdownSettings
) -> list[str]:
    """One request; the partitions ("topic-p") we still lead."""
    local = elector.active_controller if elector is not None else None
    timeout_s = settings.request_timeout_ms / 1000
    if local is not None:
        tps = await local.call(lambda: controlled_shutdown(local, broker_id), timeout_s)
        # We resign next: let the LeaderAndIsr requests reach the new leaders first, or a
        # follower keeps fetching from us until the next controller tells it otherwise.
        if not await local.channel.flush(min(timeout_s, FLUSH_MAX_S)):
            log.warning("controlled shutdown: some controller requests were not delivered")
        return [f"{t}-{p}" for t, p in tps]
    data, _ = await zk.get(paths.CONTROLLER)
    controller_id = ControllerInfo.decode(data).broker_id
    reg_data, _ = await zk.get(paths.broker_path(controller_id))
    reg = BrokerRegistration.decode(reg_data)
    conn = await BrokerConnection.connect(
        reg.host, reg.port, client_id=f"broker-{broker_id}", security=settings.security
    )
    try:
        resp: ControlledShutdownResponse = await conn.send(
            ControlledShutdownRequest(broker_id), settings.request_timeout_ms
        )
    finally:
        await conn.close()
    if resp.error_code != 0:
        raise for_code(resp.error_code)(f"controller {controller_id} answered")
    return [f"{r.topic}-{r.partition}" for r in resp.remaining_partitions]
