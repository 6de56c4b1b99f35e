"""Debug mode: log every callback or task step that holds the event loop past a threshold.

The broker setting `loop_debug_slow_ms` (0: off) runs the broker on `DebugLoop` instead of a
plain uvloop loop. asyncio's own debug mode (`loop.set_debug(True)` and
`slow_callback_duration`) is not used, for two reasons measured with uvloop 0.23: uvloop does
not time protocol callbacks (`data_received`, `buffer_updated`: where the broker decodes a
request and runs its handler), so most of the broker's work would go unseen; and debug mode
records a traceback at the creation of every handle and task, which slows the whole loop
several times over.

`DebugLoop` is uvloop's loop with the entry points of every step wrapped in `SlowStepMeter.timed`:
`call_soon` (a task's steps and wake-ups: the C Task looks `call_soon` up on the loop, so the
override sees them; future callbacks), `call_soon_threadsafe` (ZooKeeper's callbacks from
kazoo's threads), `call_later`/`call_at` (timers), and the protocols of `create_server` and
`create_connection` (their `data_received`, `buffer_updated`, `connection_made`,
`connection_lost`, `eof_received`, `pause_writing` and `resume_writing`, wrapped on the
instance). A step that took longer than the threshold by the meter's clock is one log line
(logger `odradek.broker.loop`, WARNING) naming it: a task step by its coroutine's qualified
name and the task's name, any other callback by its module and qualified name:

    slow loop step: 3.2 ms in broker.server.Connection.data_received
    slow loop step: 1.4 ms in coroutine broker.log.cleaner.manager.LogCleaner.run (task Task-9)

The wrapping costs two clock reads and a Python call per step, which is why it is debug only.
uvloop's internal callbacks (its transports' own bookkeeping) are not seen; they are short.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import time
from collections.abc import Callable
from contextvars import Context
from typing import Any, TypeVarTuple, Unpack

import uvloop

log = logging.getLogger("odradek.broker.loop")
Ts = TypeVarTuple("Ts")

PROTOCOL_CALLBACKS = ("connection_made", "data_received", "buffer_updated", "eof_received",
                      "connection_lost", "pause_writing", "resume_writing")  # fmt: skip


def step_name(callback: Any) -> str:
    """What a log line calls a callback: a task step by its coroutine, else module.qualname."""
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        qualname = getattr(coro, "__qualname__", type(coro).__qualname__)
        return f"coroutine {_module_of(coro)}.{qualname} (task {owner.get_name()})"
    while isinstance(callback, functools.partial):
        callback = callback.func
    qualname = getattr(callback, "__qualname__", None)
    if qualname is None:
        return repr(callback)
    module = getattr(callback, "__module__", None)
    return f"{module}.{qualname}" if module else qualname


def _module_of(coro: Any) -> str:
    """The module of a coroutine: its frame's while it runs, else the module loaded from its
    code's file (a step that finished the coroutine has no frame left)."""
    frame = getattr(coro, "cr_frame", None)
    if frame is not None:
        return str(frame.f_globals.get("__name__", "?"))
    filename = getattr(getattr(coro, "cr_code", None), "co_filename", "")
    if filename not in _MODULE_BY_FILE:  # once per file, on the slow path only
        for name, module in list(sys.modules.items()):
            if getattr(module, "__file__", None) == filename:
                _MODULE_BY_FILE[filename] = name
                break
    return _MODULE_BY_FILE.get(filename) or filename.rsplit("/", 1)[-1].removesuffix(".py")


_MODULE_BY_FILE: dict[str, str] = {}


class SlowStepMeter:
    """Times callbacks by `now` (seconds) and logs each one over `threshold_s` by name."""

    def __init__(self, threshold_s: float, now: Callable[[], float] = time.perf_counter) -> None:
        self.threshold_s = threshold_s
        self.now = now
        self.slow_steps = 0  # how many were logged

    def timed(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        now, threshold_s = self.now, self.threshold_s

        def step(*args: Any) -> Any:
            start = now()
            try:
                return callback(*args)
            finally:
                took = now() - start
                if took > threshold_s:
                    self.report(callback, took)

        return step

    def report(self, callback: Any, took_s: float) -> None:
        self.slow_steps += 1
        log.warning("slow loop step: %.1f ms in %s", took_s * 1000, step_name(callback))

    def protocol(self, protocol: Any) -> Any:
        """The protocol, its callbacks timed (instance attributes over its methods)."""
        for name in PROTOCOL_CALLBACKS:
            method = getattr(protocol, name, None)
            if method is not None:
                try:
                    setattr(protocol, name, self.timed(method))
                except AttributeError:  # __slots__ without __dict__: left untimed
                    return protocol
        return protocol


class DebugLoop(uvloop.Loop):
    """uvloop's loop, every step timed by `meter` (see the module docstring)."""

    meter = SlowStepMeter(0.001)

    def call_soon(
        self, callback: Callable[[Unpack[Ts]], object], *args: *Ts,
        context: Context | None = None,
    ) -> asyncio.Handle:  # fmt: skip
        return super().call_soon(self.meter.timed(callback), *args, context=context)

    def call_soon_threadsafe(
        self, callback: Callable[[Unpack[Ts]], object], *args: *Ts,
        context: Context | None = None,
    ) -> asyncio.Handle:  # fmt: skip
        return super().call_soon_threadsafe(self.meter.timed(callback), *args, context=context)

    def call_later(
        self, delay: float, callback: Callable[[Unpack[Ts]], object], *args: *Ts,
        context: Context | None = None,
    ) -> asyncio.TimerHandle:  # fmt: skip
        return super().call_later(delay, self.meter.timed(callback), *args, context=context)

    def call_at(
        self, when: float, callback: Callable[[Unpack[Ts]], object], *args: *Ts,
        context: Context | None = None,
    ) -> asyncio.TimerHandle:  # fmt: skip
        return super().call_at(when, self.meter.timed(callback), *args, context=context)

    async def create_server(self, protocol_factory: Any, *args: Any, **kwargs: Any) -> Any:
        meter = self.meter
        return await super().create_server(
            lambda: meter.protocol(protocol_factory()), *args, **kwargs
        )

    async def create_connection(self, protocol_factory: Any, *args: Any, **kwargs: Any) -> Any:
        meter = self.meter
        return await super().create_connection(
            lambda: meter.protocol(protocol_factory()), *args, **kwargs
        )


def debug_loop_factory(
    threshold_ms: float, now: Callable[[], float] = time.perf_counter
) -> Callable[[], asyncio.AbstractEventLoop]:
    """A loop factory for asyncio.Runner: DebugLoops logging steps over `threshold_ms`."""
    meter = SlowStepMeter(threshold_ms / 1000, now)

    def new_loop() -> asyncio.AbstractEventLoop:
        loop = DebugLoop()
        loop.meter = meter
        return loop

    return new_loop


def broker_loop_factory(slow_ms: int) -> Callable[[], asyncio.AbstractEventLoop]:
    """The broker's loop factory: uvloop's, or its debug mode when `slow_ms` > 0."""
    return debug_loop_factory(slow_ms) if slow_ms > 0 else uvloop.new_event_loop
