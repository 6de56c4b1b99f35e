"""Asking the local cluster's brokers over the wire who is there and who is the controller.

`probe_addresses([(host, port), ...])` sends one Metadata request to each broker at once (one
asyncio.run, one connection each, every wait bounded by `timeout_ms`) and returns, per address,
the broker ids and the controller id of its answer, or None when it gave none (not listening,
timed out, an error). `security` is how to reach them: a secure cluster's admin settings
(`LocalCluster.probe_security`), else PLAINTEXT. `LocalCluster.wait_ready` and
`controller_id` are built on it.
"""

from __future__ import annotations

import asyncio

from protocol.errors import OdradekError
from transport.security import PLAINTEXT_CONFIG, SecurityConfig

PROBE_TIMEOUT_MS = 2000


async def _probe_one(
    host: str, port: int, timeout_ms: int, security: SecurityConfig | None = None
) -> tuple[set[int], int] | None:
    """(broker ids, controller id) from one broker's Metadata answer, or None if it has none."""
    from protocol.api.metadata import MetadataRequest
    from transport.connection import BrokerConnection

    try:
        conn = await BrokerConnection.connect(
            host, port, client_id="odradek-cluster", connect_timeout_ms=timeout_ms,
            security=security or PLAINTEXT_CONFIG,
        )  # fmt: skip
    except OdradekError:
        return None
    try:
        resp = await conn.send(MetadataRequest(topics=[]), timeout_ms=timeout_ms)
        return {b.node_id for b in resp.brokers}, int(resp.controller_id)
    except OdradekError:
        return None
    finally:
        await conn.close()


async def _probe_all(
    addrs: list[tuple[str, int]], timeout_ms: int, security: SecurityConfig | None
) -> list[tuple[set[int], int] | None]:
    return await asyncio.gather(*(_probe_one(h, p, timeout_ms, security) for h, p in addrs))


def probe_metadata(
    host: str, ports: list[int], timeout_ms: int = PROBE_TIMEOUT_MS,
    security: SecurityConfig | None = None,
) -> list[tuple[set[int], int] | None]:  # fmt: skip
    """Ask each broker for Metadata at once; one (broker ids, controller id) or None per port."""
    return probe_addresses([(host, p) for p in ports], timeout_ms, security)


def probe_addresses(
    addrs: list[tuple[str, int]], timeout_ms: int = PROBE_TIMEOUT_MS,
    security: SecurityConfig | None = None,
) -> list[tuple[set[int], int] | None]:  # fmt: skip
    """probe_metadata for brokers on different hosts: one answer per (host, port). `security`:
    how to reach them (a secure cluster's admin settings, `LocalCluster.probe_security`)."""
    if not addrs:
        return []
    return asyncio.run(_probe_all(addrs, timeout_ms, security))
