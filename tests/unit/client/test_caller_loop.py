"""CallerLoop (client/caller_loop.py): who runs the sync Consumer's loop, and when."""

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from client.caller_loop import CallerLoop
from protocol.errors import UsageError


@pytest.fixture
def loop() -> Iterator[CallerLoop]:
    caller_loop = CallerLoop("test-loop", idle_s=0.02)
    yield caller_loop
    caller_loop.stop()


async def _thread_after(delay_s: float = 0.0) -> threading.Thread:
    await asyncio.sleep(delay_s)
    return threading.current_thread()


def _in_thread(fn: object) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(fn()))  # type: ignore[operator]
    thread.start()
    return thread, out


def test_a_call_runs_in_the_callers_own_thread(loop: CallerLoop) -> None:
    assert loop.run(_thread_after()) is threading.current_thread()
    assert loop.run(_thread_after(0.01)) is threading.current_thread()


def test_the_runner_runs_the_loop_while_callers_are_away_and_gives_it_back(
    loop: CallerLoop,
) -> None:
    fired = threading.Event()
    ran_in: list[threading.Thread] = []

    async def arm() -> None:
        def fire() -> None:
            ran_in.append(threading.current_thread())
            fired.set()

        asyncio.get_running_loop().call_later(0.05, fire)

    loop.run(arm())
    assert fired.wait(5), "a timer set during a call never fired while the caller was away"
    assert ran_in[0] is not threading.current_thread()  # the runner thread ran it
    time.sleep(0.05)  # the runner owns the loop now; a call takes it back
    assert loop.run(_thread_after()) is threading.current_thread()


def test_a_caller_running_its_own_event_loop_is_a_guest(loop: CallerLoop) -> None:
    async def from_async_code() -> threading.Thread:
        return loop.run(_thread_after(0.01))

    ran_in = asyncio.run(from_async_code())
    assert ran_in is not threading.current_thread()


def test_a_second_thread_calls_while_the_first_runs_the_loop(loop: CallerLoop) -> None:
    first, first_out = _in_thread(lambda: (loop.run(_thread_after(0.3)), time.monotonic()))
    time.sleep(0.1)  # the first thread owns the loop now
    second_ran_in = loop.run(_thread_after())
    second_done = time.monotonic()
    first.join(5)
    first_thread, first_done = first_out[0]  # type: ignore[misc]
    assert first_thread is first  # the owner ran its own coroutine
    assert second_ran_in is first  # the guest's coroutine ran on the owner's turn
    assert second_done < first_done


def test_a_guest_left_behind_by_a_finishing_owner_is_carried_on(loop: CallerLoop) -> None:
    owner, _ = _in_thread(lambda: loop.run(_thread_after(0.1)))
    time.sleep(0.05)
    ran_in = loop.run(_thread_after(0.3))  # outlives the owner's call
    owner.join(5)
    assert ran_in is not owner and ran_in is not threading.current_thread()


def test_a_call_from_inside_the_loop_is_refused(loop: CallerLoop) -> None:
    async def reenter() -> None:
        loop.run(_thread_after())

    with pytest.raises(UsageError, match="its own event loop"):
        loop.run(reenter())


def test_a_call_ends_in_the_loop_iteration_that_finished_its_coroutine() -> None:
    """No iteration more than needed (run_until_complete takes one more, for its callback).
    The runner must not take the loop meanwhile (its iterations would count): a long idle_s."""
    loop = CallerLoop("test-loop", idle_s=3600)
    event_loop = loop._ensure()
    selects = 0
    select = event_loop._selector.select  # type: ignore[attr-defined]

    def counting(timeout: float | None = None) -> object:
        nonlocal selects
        selects += 1
        return select(timeout)

    event_loop._selector.select = counting  # type: ignore[attr-defined]

    async def three_steps() -> int:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return 7

    try:
        assert loop.run(three_steps()) == 7
        assert selects == 3
    finally:
        loop.stop()


def test_what_a_call_left_ready_runs_before_it_returns(loop: CallerLoop) -> None:
    """A task made by the call has taken its first step (a fetch made in `poll()` has
    written its request), and a callback it scheduled has run, when the call returns."""
    seen: list[str] = []
    left: list[asyncio.Task[None]] = []

    async def leave_work() -> None:
        async def first_step() -> None:
            seen.append("task")
            await asyncio.sleep(3600)

        running = asyncio.get_running_loop()
        left.append(running.create_task(first_step()))
        running.call_soon(seen.append, "callback")

    loop.run(leave_work())
    assert seen == ["task", "callback"]
    assert not left[0].done()  # stop() cancels it


def test_a_timeout_raises_while_the_coroutine_goes_on(loop: CallerLoop) -> None:
    done = threading.Event()

    async def slow() -> None:
        await asyncio.sleep(0.1)
        done.set()

    with pytest.raises(TimeoutError):
        loop.run(slow(), timeout_s=0.01)
    assert done.wait(5)  # finished by the runner


def test_stop_ends_the_runner_and_refuses_later_calls() -> None:
    caller_loop = CallerLoop("test-loop", idle_s=0.01)
    assert caller_loop.run(_thread_after()) is threading.current_thread()
    time.sleep(0.05)  # the runner has taken the loop
    runner = caller_loop._runner
    caller_loop.stop()
    assert runner is not None and not runner.is_alive()
    coro = _thread_after()
    with pytest.raises(UsageError, match="closed"):
        caller_loop.run(coro)
    assert coro.cr_frame is None  # closed, not left un-awaited


def test_stop_cancels_what_is_left_pending() -> None:
    """A call cut short (Ctrl-C in the caller's thread) leaves tasks on the loop; stop cancels
    and finishes them before closing it, so no task is destroyed pending."""
    caller_loop = CallerLoop("test-loop", idle_s=0.01)
    cancelled = threading.Event()

    async def leave_a_task() -> None:
        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        asyncio.get_running_loop().create_task(forever())

    caller_loop.run(leave_a_task())
    caller_loop.stop()
    assert cancelled.is_set()


def test_ctrl_c_in_the_main_thread_cancels_only_the_call(loop: CallerLoop) -> None:
    """SIGINT while the main thread runs the loop cancels that call's task and raises
    KeyboardInterrupt from run(); other tasks on the loop are left alone."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Spark may set one
    hit = threading.Event()

    async def background() -> None:
        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except BaseException:
                hit.set()
                raise

        asyncio.get_running_loop().create_task(forever())

    try:
        loop.run(background())
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            loop.run(asyncio.sleep(10))
        timer.join()
        assert time.monotonic() - started < 5
        assert not hit.is_set()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
        assert loop.run(_thread_after()) is threading.current_thread()  # still usable
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_after_the_result_is_ready_is_raised_by_the_next_call(loop: CallerLoop) -> None:
    """The result of a call that finished as Ctrl-C came is returned (a poll's records are
    not dropped); the interrupt is raised by the next call instead."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    async def done_then_interrupted() -> str:
        task = asyncio.current_task()
        assert task is not None
        task.add_done_callback(lambda _task: os.kill(os.getpid(), signal.SIGINT))
        return "result"

    try:
        assert loop.run(done_then_interrupted()) == "result"
        coro = _thread_after()
        with pytest.raises(KeyboardInterrupt):
            loop.run(coro)
        assert coro.cr_frame is None  # closed, never run
        assert loop.run(_thread_after()) is threading.current_thread()
    finally:
        signal.signal(signal.SIGINT, previous)
