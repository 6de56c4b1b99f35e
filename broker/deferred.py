"""A result a handler hands back before it has it, delivered the moment it is known.

An `asyncio.Future` runs its callbacks on a later turn of the event loop (`call_soon`), and a
task awaiting it resumes on the turn after: a long-polling fetch woken by an append answered
two loop iterations after the append. A `Deferred` calls its listeners synchronously inside
`resolve`/`reject`, so the server encodes and writes the answer in the same iteration as the
append that satisfied it (broker/delayed_fetch.py). It is also awaitable (through a future made
on first await) for code that wants to wait the ordinary way.

Listeners run in the order they were added (one added `first` ahead of the others), exactly
once; one added after completion runs at once. A listener's exception is logged, never raised
into whoever completed it (an append must not fail because writing some fetch's answer did).
`cancel()` (the connection went away) runs the canceller and drops the listeners.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
U = TypeVar("U")
Listener = Callable[[Any, BaseException | None], None]
log = logging.getLogger("odradek.broker.deferred")


class Deferred(Generic[T]):
    __slots__ = ("_canceller", "_error", "_finished", "_listeners", "_value")

    def __init__(self, canceller: Callable[[], None] | None = None) -> None:
        self._finished = False
        self._value: T | None = None
        self._error: BaseException | None = None
        self._listeners: list[Listener] = []
        self._canceller = canceller

    def done(self) -> bool:
        return self._finished

    def add_listener(
        self, listener: Callable[[T | None, BaseException | None], None], first: bool = False
    ) -> None:
        """`listener(value, None)` or `listener(None, error)`, now if already complete.
        `first`: ahead of those added before (the server's write of the answer goes before
        listeners that only observe it, such as the request metrics)."""
        if self._finished:
            listener(self._value, self._error)
        elif first:
            self._listeners.insert(0, listener)
        else:
            self._listeners.append(listener)

    def resolve(self, value: T) -> None:
        self._complete(value, None)

    def reject(self, error: BaseException) -> None:
        self._complete(None, error)

    def _complete(self, value: T | None, error: BaseException | None) -> None:
        if self._finished:
            return
        self._finished, self._value, self._error = True, value, error
        self._canceller = None  # often a method of our owner: no cycle left for the GC
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            try:
                listener(value, error)
            except Exception:
                log.exception("a listener of a completed request failed")

    def cancel(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._listeners = []
        canceller, self._canceller = self._canceller, None
        if canceller is not None:
            canceller()

    def map(self, convert: Callable[[T], U]) -> Deferred[U]:
        """A Deferred of `convert(value)`, completed (synchronously) when this one is."""
        out: Deferred[U] = Deferred(self.cancel)

        def relay(value: T | None, error: BaseException | None) -> None:
            if error is not None:
                out.reject(error)
                return
            try:
                converted = convert(value)  # type: ignore[arg-type]
            except Exception as exc:
                out.reject(exc)
                return
            out.resolve(converted)

        self.add_listener(relay)
        return out

    def __await__(self) -> Generator[Any, None, T]:
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def settle(value: T | None, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)  # type: ignore[arg-type]

        self.add_listener(settle)
        try:
            return (yield from future.__await__())
        except asyncio.CancelledError:
            self.cancel()
            raise


def then(result: Any, convert: Callable[[Any], Any]) -> Any:
    """`convert(result)` now, or an awaitable of it when `result` must be waited for (a
    Deferred stays one: the server completes it synchronously)."""
    if isinstance(result, Deferred):
        return result.map(convert)
    if inspect.isawaitable(result):
        return _later(result, convert)
    return convert(result)


async def _later(result: Awaitable[Any], convert: Callable[[Any], Any]) -> Any:
    return convert(await result)
