"""Synchronous Consumer: the AsyncConsumer on a private loop that the calling thread runs.

Each call runs the consumer's loop in the caller's own thread until it is done (CallerLoop,
client/caller_loop.py): a `poll()` that waits reads, decodes and returns the fetch response in
that thread, with no hand-off from a loop thread. Between calls a background thread runs the
loop once the caller has been away for 50 ms, so a group member's heartbeats, auto-commits and
rebalance callbacks go on while the user processes records (the callbacks run in whichever of
the two threads runs the loop then).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from client.consumer import AsyncConsumer
from client.sync import _SyncClient
from client.types import ConsumerRecord, TopicPartition

T = TypeVar("T")


class Consumer(_SyncClient):
    """Synchronous twin of AsyncConsumer (same arguments)."""

    _name = "odradek-consumer"
    _caller_runs_loop = True

    def __init__(self, bootstrap_servers: str | Iterable[str], **config: Any) -> None:
        super().__init__(lambda: AsyncConsumer(bootstrap_servers, **config))

    def __enter__(self) -> Consumer:
        return self

    def _do(self, fn: Callable[[AsyncConsumer], T]) -> T:
        async def go(c: AsyncConsumer) -> T:
            return fn(c)

        return self._run(go)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        tps = list(partitions)
        self._do(lambda c: c.assign(tps))

    def assignment(self) -> set[TopicPartition]:
        return self._do(lambda c: c.assignment())

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._do(lambda c: c.seek(tp, offset))

    def seek_to_beginning(self, *tps: TopicPartition) -> None:
        self._do(lambda c: c.seek_to_beginning(*tps))

    def seek_to_end(self, *tps: TopicPartition) -> None:
        self._do(lambda c: c.seek_to_end(*tps))

    def position(self, tp: TopicPartition) -> int:
        return self._run(lambda c: c.position(tp))

    def waiting(self) -> dict[TopicPartition, str]:
        """Why assigned partitions give no records (AsyncConsumer.waiting): {} when none."""
        return self._do(lambda c: c.waiting())

    def pause(self, *tps: TopicPartition) -> None:
        self._do(lambda c: c.pause(*tps))

    def resume(self, *tps: TopicPartition) -> None:
        self._do(lambda c: c.resume(*tps))

    def paused(self) -> set[TopicPartition]:
        return self._do(lambda c: c.paused())

    def highwater(self, tp: TopicPartition) -> int:
        return self._do(lambda c: c.highwater(tp))

    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(tps)
        return self._run(lambda c: c.beginning_offsets(wanted))

    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(tps)
        return self._run(lambda c: c.end_offsets(wanted))

    def poll(
        self, timeout_ms: float = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        return self._run(lambda c: c.poll(timeout_ms, max_records))

    # consumer groups: the listener's callbacks run in the thread running the loop (see above)

    def subscribe(
        self, topics: Iterable[str] = (), pattern: str | None = None, listener: Any = None
    ) -> None:
        wanted = [topics] if isinstance(topics, str) else list(topics)
        self._do(lambda c: c.subscribe(wanted, pattern, listener))

    def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        self._run(lambda c: c.commit(offsets))

    def commit_async(
        self, offsets: dict[TopicPartition, int] | None = None, callback: Any = None
    ) -> None:
        self._do(lambda c: c.commit_async(offsets, callback))

    def committed(self, tp: TopicPartition) -> int | None:
        return self._run(lambda c: c.committed(tp))
