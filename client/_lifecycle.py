"""The life cycle the admin and consumer clients share: `start()` fetches the cluster metadata
from the bootstrap servers once, and `async with` starts the client and closes it on exit.

A subclass sets `_cluster` and `_started = False` in its constructor and defines `close()`;
it may override `_check_open()` to refuse starting after close.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

from client.cluster import Cluster


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
