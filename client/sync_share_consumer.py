"""Synchronous ShareConsumer: the AsyncShareConsumer (client/share_consumer.py) on a private
loop that the calling thread runs during each call, as the Consumer (client/sync_consumer.py);
between calls a background thread runs it, so the member's heartbeats go on while the user
processes records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from client.share_acks import ShareRecord
from client.share_consumer import AckResults, AsyncShareConsumer
from client.sync import _SyncClient


class ShareConsumer(_SyncClient):
    """Synchronous twin of AsyncShareConsumer (same arguments)."""

    _name = "odradek-share-consumer"
    _caller_runs_loop = True

    def __init__(self, bootstrap_servers: str | Iterable[str], **config: Any) -> None:
        super().__init__(lambda: AsyncShareConsumer(bootstrap_servers, **config))

    def __enter__(self) -> ShareConsumer:
        return self

    def _now(self, fn: Callable[[AsyncShareConsumer], Any]) -> Any:
        async def go(c: AsyncShareConsumer) -> Any:
            return fn(c)

        return self._run(go)

    def subscribe(self, topics: Iterable[str]) -> None:
        wanted = [topics] if isinstance(topics, str) else list(topics)
        self._now(lambda c: c.subscribe(wanted))

    def subscription(self) -> set[str]:
        result: set[str] = self._now(lambda c: c.subscription())
        return result

    def assignment(self) -> set[Any]:
        result: set[Any] = self._now(lambda c: c.assignment())
        return result

    def poll(self, timeout_ms: float = 0) -> list[ShareRecord]:
        return self._run(lambda c: c.poll(timeout_ms))

    def acknowledge(self, record: ShareRecord, kind: str = "accept") -> None:
        self._now(lambda c: c.acknowledge(record, kind))

    def commit_sync(self) -> AckResults:
        return self._run(lambda c: c.commit_sync())

    def commit_async(self, callback: Callable[[AckResults], object] | None = None) -> None:
        self._now(lambda c: c.commit_async(callback))
