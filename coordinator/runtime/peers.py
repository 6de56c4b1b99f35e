"""Connections from this broker to other brokers' native ports, by broker id.

The transaction coordinator writes markers to partition leaders (WriteTxnMarkers), and a
partition leader asks a transaction coordinator to verify a transactional batch (KIP-890's
AddPartitionsToTxn with verify_only): both look the broker up in the cluster's metadata and keep
one connection to it, dropped on any error and made again on the next request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from coordinator.runtime.log import ClusterView
from protocol.errors import BrokerNotAvailableError, OdradekError
from transport.connection import BrokerConnection

Connect = Callable[[str, int], Awaitable[BrokerConnection]]


class Peers:
    def __init__(self, cluster: ClusterView, connect: Connect, timeout_ms: int = 30_000) -> None:
        self.cluster = cluster
        self.connect = connect
        self.timeout_ms = timeout_ms
        self._conns: dict[int, BrokerConnection] = {}

    async def send(self, broker_id: int, request: Any) -> Any:
        """The response; raises OdradekError (BrokerNotAvailable, a network error, a timeout)
        and drops the connection so that the next request makes a new one."""
        try:
            conn = await self._connection(broker_id)
            return await conn.send(request, self.timeout_ms)
        except (OdradekError, OSError) as exc:
            await self.drop(broker_id)
            if isinstance(exc, OdradekError):
                raise
            raise BrokerNotAvailableError(f"broker {broker_id}: {exc}") from None

    async def _connection(self, broker_id: int) -> BrokerConnection:
        conn = self._conns.get(broker_id)
        if conn is not None and not conn.closed:
            return conn
        broker = self.cluster.brokers.get(broker_id)
        if broker is None:
            raise BrokerNotAvailableError(f"broker {broker_id} is not live")
        conn = self._conns[broker_id] = await self.connect(broker.host, broker.port)
        return conn

    async def drop(self, broker_id: int) -> None:
        conn = self._conns.pop(broker_id, None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        for broker_id in list(self._conns):
            await self.drop(broker_id)
