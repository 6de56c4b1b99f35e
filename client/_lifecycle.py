"""The life cycle the admin and consumer clients share: `start()` fetches the cluster metadata
from the bootstrap servers once, and `async with` starts the client and closes it on exit.

A subclass sets `_cluster` and `_started = False` in its constructor and defines `close()`;
it may override `_check_open()` to refuse starting after close.

`RetryingClient` adds what the admin calls share: `_send_to(node, request)` and
`_retrying(what, once)`, which runs `once()` again after a metadata refresh while it raises a
retriable error, until `request_timeout_ms`, then raises that error saying how long it tried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self, TypeVar

from client.cluster import Cluster
from protocol.errors import OdradekError

T = TypeVar("T")
RETRY_BACKOFF_S = 0.1


class ClusterClient:
    _cluster: Cluster
    _started: bool

    async def start(self) -> None:
        """Fetch the cluster metadata from the bootstrap servers."""
        self._check_open()
        if not self._started:
            await self._cluster.request_update()  # NetworkError when no bootstrap server answers
            self._started = True

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        raise NotImplementedError

    def _check_open(self) -> None:
        """Raise when the client may not start (the base never does)."""


class RetryingClient(ClusterClient):
    """The admin calls' base: the subclass also sets `request_timeout_ms`."""

    request_timeout_ms: int

    async def _send_to(self, node: int, request: Any) -> Any:
        await self.start()
        conn = await self._cluster.connection(node)
        return await conn.send(request, self.request_timeout_ms)

    async def _retrying(self, what: str, once: Callable[[], Awaitable[T]]) -> T:
        await self.start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_timeout_ms / 1000
        while True:
            try:
                return await once()
            except OdradekError as exc:
                if not exc.retriable:
                    raise
                if loop.time() + RETRY_BACKOFF_S >= deadline:
                    raise type(exc)(
                        f"{what}: still failing after {self.request_timeout_ms} ms: {exc.message}"
                    ) from exc
            await asyncio.sleep(RETRY_BACKOFF_S)
            await self._cluster.request_update()
