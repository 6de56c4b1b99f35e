"""An event loop run by the thread that calls: the sync Consumer's loop (client/sync_consumer.py).

A sync call (`run(coro)`) runs the client's private loop in the *caller's* thread until its
coroutine is done, as Kafka's Java consumer does its network work inside `poll()`: a fetch
response read in the loop is decoded and handed back in the same thread, with no thread hand-off
on the way (a hand-off, a futex wake and the GIL passing between two threads, was ~0.13 ms of
a lone record's end-to-end latency). Between calls, a background thread (the *runner*) takes the
loop over once no caller has run it for `idle_s`, so what runs on its own (heartbeats and
auto-commits of a group member, metadata refreshes, timers) goes on while the user is busy
elsewhere, and hands it back when a caller comes.

Who runs the loop, decided under one condition variable:
- no one: the caller takes it (`owner`), runs its coroutine, and gives it back;
- the runner: the caller asks it to stop (`loop.stop` from `call_soon_threadsafe`, a no-op
  unless the runner runs the loop), waits until it has, then decides again; the runner takes
  no new turn while a caller waits;
- another caller, or the caller's thread already runs an event loop (the sync client used from
  async code): the caller is a *guest*. It hands its coroutine to the loop
  (`run_coroutine_threadsafe`) and waits for the result; an owner that finishes while guests
  wait wakes the runner, which then runs the loop at once.

So exactly one thread runs the loop at any time, and all of the async client's code still runs
on that loop, one piece at a time, as with a dedicated loop thread.

The loop is asyncio's own (a selector loop), not uvloop: each call starts and stops the loop,
and uvloop, in the main thread, makes and closes a socket pair for its signal wake-up at every
start (22 us a call against 6.5 for asyncio's, measured with an empty coroutine). That was a
fifth of a lone record's way from the socket to `poll()`'s return, and the consumer's bulk reads
move no faster on uvloop (2.5-2.7M records/s through `poll()` against 2.7-2.9M on asyncio's
loop, same run): the per-record work is in C either way.

Ctrl-C: while the main thread runs the loop, SIGINT cancels the call's task and the call raises
KeyboardInterrupt (as `asyncio.run` does); one that comes after the call's result is ready is
raised by the next call, so no result is lost (`_run_in_this_thread`).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal's C functions: see _run_in_this_thread
import asyncio
import signal
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from protocol.errors import UsageError

T = TypeVar("T")
IDLE_S = 0.05  # the runner takes the loop over after this long without a caller running it
ASK_AGAIN_S = 0.01  # a caller waiting for the runner to give the loop back asks this often


class CallerLoop:
    """A private event loop run by its callers, and by a runner thread while they are away."""

    def __init__(self, name: str, idle_s: float = IDLE_S) -> None:
        self._name = name
        self._idle_s = idle_s
        self._cv = threading.Condition()
        self._loop: _CallerEventLoop | None = None
        self._runner: threading.Thread | None = None
        self._owner: threading.Thread | None = None  # the thread running the loop now
        self._guests = 0  # callers waiting for a coroutine they handed to the loop
        self._waiting = 0  # callers waiting for the runner to give the loop back
        self._released_at = 0.0  # monotonic time a caller last gave the loop back
        self._interrupts = _Interrupts()  # see _run_in_this_thread
        self.stopped = False
        self._finishing = False  # the runner finishes the tasks left: no more turns

    # ----- the callers' side ------------------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run `coro` to its end on the loop, in this thread when it can; return its result.
        With `timeout_s`, raise TimeoutError after that long (the coroutine goes on)."""
        try:
            if self._interrupts.pending and threading.current_thread() is threading.main_thread():
                self._interrupts.pending = False
                raise KeyboardInterrupt()  # it came as the last call was returning
            loop = self._ensure()
            theirs = running_loop()
            if theirs is loop:
                raise UsageError("a sync client cannot be called from its own event loop")
            me = threading.current_thread()
            with self._cv:
                self._waiting += 1  # the runner takes no new turn while a caller waits
                try:
                    while (
                        theirs is None and self._owner is not None and self._owner is self._runner
                    ):
                        self._ask_runner_to_stop(loop)
                        self._cv.wait(ASK_AGAIN_S)
                finally:
                    self._waiting -= 1
                if self.stopped:
                    raise UsageError(f"{self._name} is closed")
                guest = theirs is not None or self._owner is not None
                if guest:
                    self._guests += 1
                    self._cv.notify_all()  # an idle runner takes the loop if nobody runs it
                else:
                    self._owner = me
        except BaseException:
            coro.close()
            raise
        if guest:
            try:
                return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout_s)
            finally:
                with self._cv:
                    self._guests -= 1
        try:
            return _run_in_this_thread(loop, coro, timeout_s, self._interrupts)
        finally:
            with self._cv:
                self._owner = None
                self._released_at = time.monotonic()
                if self._guests:
                    self._cv.notify_all()  # the runner carries the guests' coroutines on

    def is_current(self) -> bool:
        """Whether the caller's thread runs the loop now (inside a callback of the client)."""
        return self._owner is threading.current_thread()

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the loop, without waiting (by the runner if no caller comes)."""
        self._ensure().call_soon_threadsafe(fn)
        with self._cv:
            self._released_at = min(self._released_at, time.monotonic() - self._idle_s)
            self._cv.notify_all()

    def stop(self) -> None:
        """Stop the runner and close the loop, once no caller runs it."""
        with self._cv:
            if self.stopped:
                return
            self.stopped = True
            self._cv.notify_all()
            loop, runner = self._loop, self._runner
            while self._owner is not None and self._owner is not runner:
                self._cv.wait()  # a caller's call ends first
        if loop is None or runner is None:
            return
        while runner.is_alive():
            self._ask_runner_to_stop(loop)
            runner.join(ASK_AGAIN_S)
        loop.close()

    # ----- the runner's side ------------------------------------------------------------------

    def _ask_runner_to_stop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Make the runner's `run_forever` return. Callers ask again every ASK_AGAIN_S while
        the runner still runs (a wake-up sent just as the runner enters the loop must not be
        the only one); one that comes late does nothing, since only the runner's own turn is
        stopped."""
        loop.call_soon_threadsafe(self._stop_runners_turn, loop)

    def _stop_runners_turn(self, loop: asyncio.AbstractEventLoop) -> None:
        # Not once the runner has left its last turn: it then runs the loop only to finish the
        # tasks left (`finish_tasks`), which a late stop would cut short.
        if threading.current_thread() is self._runner and not self._finishing:
            loop.stop()

    def _ensure(self) -> _CallerEventLoop:
        with self._cv:
            if self.stopped:
                raise UsageError(f"{self._name} is closed")
            if self._loop is None:
                self._loop = _CallerEventLoop()
                self._released_at = time.monotonic()
                self._runner = threading.Thread(target=self._runner_main, name=self._name,
                                                 daemon=True)  # fmt: skip
                self._runner.start()
            return self._loop

    def _runner_main(self) -> None:
        loop = self._loop
        me = threading.current_thread()
        assert loop is not None
        while True:
            with self._cv:
                while not self.stopped:
                    if self._owner is None and not self._waiting:
                        idle = time.monotonic() - self._released_at
                        if self._guests or idle >= self._idle_s:
                            break
                        self._cv.wait(self._idle_s - idle)
                    else:
                        self._cv.wait(self._idle_s)
                if self.stopped:
                    break
                self._owner = me
            try:
                loop.run_forever()  # until a caller (or stop) asks for the loop back
            finally:
                with self._cv:
                    self._owner = None
                    self._cv.notify_all()
        self._finishing = True
        finish_tasks(loop)  # stopped, and no caller runs the loop any more


def _run_in_this_thread(
    loop: _CallerEventLoop,
    coro: Coroutine[Any, Any, T],
    timeout_s: float | None,
    interrupts: _Interrupts,
) -> T:
    """Run `coro` on `loop` in this thread until it is done (`_CallerEventLoop.run_until_done`).
    In the main thread, Ctrl-C (SIGINT) cancels the call's task and raises KeyboardInterrupt
    from here, as `asyncio.run` does (raised inside the loop instead, it would land in whatever
    task ran then). One that comes once the task is done leaves the result alone and is raised
    by the next call (`interrupts.pending`), so a poll's records are never dropped between the
    loop and the caller."""
    task = loop.create_task(coro)
    interrupted = False

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal interrupted
        if task.done():
            interrupts.pending = True
        elif not interrupted:
            interrupted = True
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wake a loop waiting for I/O

    # _signal's functions, not signal's: those wrap handlers in enums at ~2 us a call, and a
    # call takes three of them
    ours = (
        threading.current_thread() is threading.main_thread()
        and _signal.getsignal(_SIGINT) is _default_int_handler
    )
    if ours:
        _signal.signal(_SIGINT, on_sigint)
    try:
        if timeout_s is None:
            loop.run_until_done(task)
            return task.result()
        loop.run_until_complete(asyncio.wait({task}, timeout=timeout_s))
        if not task.done():
            raise TimeoutError(f"no result within {timeout_s} s (still running)")
        return task.result()
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt() from None
        raise
    finally:
        if ours:
            _signal.signal(_SIGINT, _default_int_handler)


_SIGINT = int(signal.SIGINT)
_default_int_handler = signal.default_int_handler


class _CallerEventLoop(asyncio.SelectorEventLoop):
    """asyncio's selector loop, whose `run_until_done(future)` returns at the end of the
    iteration that finished `future` when nothing else is ready then, else one iteration later
    (when `run_until_complete`'s done callback would have stopped it).

    It relies on two internals of asyncio's BaseEventLoop: `_run_once` (one iteration) and
    `_ready` (the callbacks due in the next one). Both have been there since Python 3.4;
    tests/unit/client/test_caller_loop.py checks the behaviour that depends on them.
    """

    _until: asyncio.Future[Any] | None = None
    _ended = False  # `_until` finished in an iteration that left callbacks ready

    def run_until_done(self, future: asyncio.Future[Any]) -> None:
        self._until, self._ended = future, False
        try:
            while not future.done():
                self.run_forever()  # stopped by `_run_once` below, once `future` is done
        finally:
            self._until = None

    def _run_once(self) -> None:
        super()._run_once()  # type: ignore[misc]
        until = self._until
        if until is None or not until.done():
            return
        if self._ended or not self._ready:  # type: ignore[attr-defined]
            self.stop()
        else:
            self._ended = True  # what it left ready runs in one more iteration


class _Interrupts:
    """A Ctrl-C that came after a call's result was ready, for the next call to raise."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending = False


def finish_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is still pending on a stopped `loop` and let it end (a poll interrupted by
    Ctrl-C, a fetch sent meanwhile), so that closing the loop destroys no pending task."""
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
