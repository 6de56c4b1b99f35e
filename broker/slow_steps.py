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
instance). A step that took longer than the threshold is one log line (logger `odradek.broker.loop`)
naming it: a task step by its coroutine's qualified name and the task's name, any other
callback by its module and qualified name:

    slow loop step: 1.4 ms, CPU 1.3 ms in coroutine broker.log.cleaner.manager.LogCleaner.run
        (task Task-9)

Wall time lies on a loaded machine: a step that waited for a CPU (the process descheduled
mid-step) is as long by the wall clock as one that worked. So each step is timed twice, by the
wall clock and by the loop thread's own CPU clock (`time.thread_time`, CLOCK_THREAD_CPUTIME_ID:
the loop runs in one thread), and a step over the threshold is logged by which one passed it:

    slow loop step: 3.2 ms, CPU 3.1 ms in broker.server.Connection.data_received   (WARNING)
    waited loop step: 3.2 ms, CPU 0.1 ms in broker.server.Connection.data_received (INFO)

The first worked that long (a stall to cut); the second only waited (the machine). A cyclic
garbage collection runs inside whatever step allocated when it fell due, so the meter also
times every collection (its own `gc.callbacks` entry, by the wall clock) and a line over the
threshold says how much of the step was collections, "(GC 2.9 ms)", when any ran. The meter
also sums every step's CPU by step name (`StepStats`: count, total and max CPU, max wall; a
task's steps under its coroutine without the task's name), which the broker logs at shutdown,
largest total first (`summary_lines`): where the loop's CPU goes, load or no load.

A logged step also names the requests it handled, by API: broker/server.py adds each request
(with its door) to the meter's `notes` (module-level `NOTES`, None while debug mode is off),
so a slow `data_received` says which requests it handled:

    slow loop step: 38.3 ms, CPU 38.1 ms in broker.server.Connection.data_received
        handling Produce x2, Metadata

The wrapping costs three clock reads, a dict look-up and a Python call per step, which is why
it is debug only. uvloop's internal callbacks (its transports' own bookkeeping) are not seen;
they are short.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import sys
import time
from collections.abc import Callable
from contextvars import Context
from typing import Any, TypeVarTuple, Unpack

import uvloop

log = logging.getLogger("odradek.broker.loop")

# What the running step handled, for its log line (module docstring): the DebugLoop's meter's
# `notes`, or None while debug mode is off, so the server's noting costs one global look-up.
NOTES: list[Any] | None = None


def handled(notes: list[Any]) -> str:
    """' handling Produce x2, Metadata': the requests a step noted, each a (door, request), by
    API (the door's `api_name`, else its `describe`) in the order first seen; '' for none."""
    counts: dict[str, int] = {}
    for door, request in notes:
        name = str((getattr(door, "api_name", None) or door.describe)(request))
        counts[name] = counts.get(name, 0) + 1
    if not counts:
        return ""
    return " handling " + ", ".join(n if c == 1 else f"{n} x{c}" for n, c in counts.items())


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


def _summary_key(callback: Any) -> Any:
    """What the summary sums a step under, cheaply and from a bounded set (never one key per
    object, or the summary would grow with every future): a task step by its coroutine's code,
    a Python function or method by its code, a builtin method by its owner's type and name,
    anything else by its type (partials unwrapped)."""
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        return getattr(coro, "cr_code", None) or type(coro)
    while isinstance(callback, functools.partial):
        callback = callback.func
        owner = getattr(callback, "__self__", None)
    code = getattr(getattr(callback, "__func__", callback), "__code__", None)
    if code is not None:
        return code
    if owner is not None:
        return (type(owner), getattr(callback, "__name__", None))
    return type(callback)


def summary_name(callback: Any) -> str:
    """A step's name in the summary: `step_name` without a task's name (one line per
    coroutine, however many tasks run it)."""
    return step_name(callback).split(" (task ", 1)[0]


class StepStats:
    """Every step under one name: how many, their CPU in total and at most, the longest wall."""

    __slots__ = ("callback", "count", "cpu_s", "gc_s", "max_cpu_s", "max_wall_s")

    def __init__(self, callback: Any) -> None:
        self.callback = callback  # one of them, for the name (resolved when the summary is read)
        self.count = 0
        self.cpu_s = 0.0
        self.gc_s = 0.0  # collections inside its steps
        self.max_cpu_s = 0.0
        self.max_wall_s = 0.0


class SlowStepMeter:
    """Times callbacks by `now` (wall seconds) and `cpu` (the thread's CPU seconds), logs each
    one over `threshold_s` by name and by which clock passed it, and sums every step's CPU by
    name (see the module docstring)."""

    def __init__(
        self,
        threshold_s: float,
        now: Callable[[], float] = time.perf_counter,
        cpu: Callable[[], float] = time.thread_time,
    ) -> None:
        self.threshold_s = threshold_s
        self.now = now
        self.cpu = cpu
        self.slow_steps = 0  # logged: their CPU passed the threshold
        self.waited_steps = 0  # logged: only their wall time did
        self.stats: dict[Any, StepStats] = {}
        self.gc_s = 0.0  # every collection's wall time, summed (`on_gc`)
        self.notes: list[Any] = []  # what the running step handled (NOTES)
        self._gc_started = 0.0

    def on_gc(self, phase: str, _info: dict[str, Any]) -> None:
        """A `gc.callbacks` entry: each collection's time added to `gc_s`."""
        if phase == "start":
            self._gc_started = self.now()
        else:
            self.gc_s += self.now() - self._gc_started

    def timed(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        now, cpu, threshold_s, notes = self.now, self.cpu, self.threshold_s, self.notes

        def step(*args: Any) -> Any:
            if notes:  # noted outside any timed step: not this step's
                notes.clear()
            start, start_cpu, start_gc = now(), cpu(), self.gc_s
            try:
                return callback(*args)
            finally:
                took_cpu = cpu() - start_cpu
                took = now() - start
                gc_s = self.gc_s - start_gc
                self.record(callback, took, took_cpu, gc_s)
                if took > threshold_s or took_cpu > threshold_s:
                    self.report(callback, took, took_cpu, gc_s, handled(notes))
                if notes:
                    notes.clear()

        return step

    def record(self, callback: Any, took_s: float, cpu_s: float, gc_s: float = 0.0) -> None:
        key = _summary_key(callback)
        stats = self.stats.get(key)
        if stats is None:
            stats = self.stats[key] = StepStats(callback)
        stats.count += 1
        stats.cpu_s += cpu_s
        stats.gc_s += gc_s
        if cpu_s > stats.max_cpu_s:
            stats.max_cpu_s = cpu_s
        if took_s > stats.max_wall_s:
            stats.max_wall_s = took_s

    def report(
        self, callback: Any, took_s: float, cpu_s: float, gc_s: float = 0.0, what: str = ""
    ) -> None:
        in_gc = f" (GC {gc_s * 1000:.1f} ms)" if gc_s > 0 else ""
        if cpu_s > self.threshold_s:
            self.slow_steps += 1
            log.warning("slow loop step: %.1f ms, CPU %.1f ms%s in %s%s",
                        took_s * 1000, cpu_s * 1000, in_gc, step_name(callback), what)  # fmt: skip
        else:
            self.waited_steps += 1
            log.info("waited loop step: %.1f ms, CPU %.1f ms%s in %s%s",
                     took_s * 1000, cpu_s * 1000, in_gc, step_name(callback), what)  # fmt: skip

    def summary(self) -> dict[str, StepStats]:
        """Every step's stats by name (steps of one name under different keys merged)."""
        merged: dict[str, StepStats] = {}
        for stats in self.stats.values():
            name = summary_name(stats.callback)
            into = merged.get(name)
            if into is None:
                into = merged[name] = StepStats(stats.callback)
            into.count += stats.count
            into.cpu_s += stats.cpu_s
            into.gc_s += stats.gc_s
            into.max_cpu_s = max(into.max_cpu_s, stats.max_cpu_s)
            into.max_wall_s = max(into.max_wall_s, stats.max_wall_s)
        return merged

    def summary_lines(self, top: int = 40) -> list[str]:
        """The summary as log lines, the largest total CPU first, at most `top` of them."""
        ranked = sorted(self.summary().items(), key=lambda item: -item[1].cpu_s)
        return [f"loop steps of {name}: {s.count} steps, CPU {s.cpu_s * 1000:.1f} ms in "
                f"total, {s.cpu_s / s.count * 1e6:.1f} us mean, max {s.max_cpu_s * 1000:.2f} "
                f"ms; wall max {s.max_wall_s * 1000:.2f} ms; GC {s.gc_s * 1000:.1f} ms"
                for name, s in ranked[:top]]  # fmt: skip

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
    threshold_ms: float,
    now: Callable[[], float] = time.perf_counter,
    cpu: Callable[[], float] = time.thread_time,
) -> Callable[[], asyncio.AbstractEventLoop]:
    """A loop factory for asyncio.Runner: DebugLoops logging steps over `threshold_ms`."""
    global NOTES
    meter = SlowStepMeter(threshold_ms / 1000, now, cpu)
    gc.callbacks.append(meter.on_gc)  # for the process's life, as debug mode is
    NOTES = meter.notes  # the server notes each request's handler from now on

    def new_loop() -> asyncio.AbstractEventLoop:
        loop = DebugLoop()
        loop.meter = meter
        return loop

    return new_loop


def broker_loop_factory(slow_ms: int) -> Callable[[], asyncio.AbstractEventLoop]:
    """The broker's loop factory: uvloop's, or its debug mode when `slow_ms` > 0."""
    return debug_loop_factory(slow_ms) if slow_ms > 0 else uvloop.new_event_loop


def log_summary(loop: asyncio.AbstractEventLoop) -> None:
    """On a DebugLoop, its meter's summary as INFO lines (the broker's shutdown); else nothing."""
    if isinstance(loop, DebugLoop):
        meter = loop.meter
        log.info("loop steps: %d over the threshold by CPU, %d only by wall time; by CPU:",
                 meter.slow_steps, meter.waited_steps)  # fmt: skip
        for line in meter.summary_lines():
            log.info("%s", line)
