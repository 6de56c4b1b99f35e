"""Debug mode's slow-step logger (broker/slow_steps.py) on a clock the test moves: a step
"takes" as long as the test says, whatever the machine's speed."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest

from broker.slow_steps import SlowStepMeter, debug_loop_factory, step_name
from tests.unit.broker.test_loop_lag import FakeClock


def test_a_callback_over_the_threshold_is_logged_by_name(caplog: pytest.LogCaptureFixture) -> None:
    clock, cpu = FakeClock(), FakeClock()
    meter = SlowStepMeter(0.001, clock, cpu)

    def quick() -> None:
        clock.advance(0.0009)
        cpu.advance(0.0009)

    def blocking_append(records: list[int]) -> None:
        clock.advance(0.0032)
        cpu.advance(0.0031)
        records.append(1)

    records: list[int] = []
    with caplog.at_level(logging.WARNING, "odradek.broker.loop"):
        meter.timed(quick)()
        meter.timed(blocking_append)(records)
    assert records == [1] and meter.slow_steps == 1
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == (
        "slow loop step: 3.2 ms, CPU 3.1 ms in tests.unit.broker.test_slow_steps."
        "test_a_callback_over_the_threshold_is_logged_by_name.<locals>.blocking_append"
    )


def test_a_step_that_only_waited_is_told_from_one_that_worked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Wall time over the threshold with the thread's CPU under it is a wait (the process was
    descheduled), logged apart and at INFO; CPU over it is a stall, at WARNING."""
    clock, cpu = FakeClock(), FakeClock()
    meter = SlowStepMeter(0.001, clock, cpu)

    def descheduled() -> None:
        clock.advance(0.0080)  # 8 ms by the wall clock,
        cpu.advance(0.0002)  # 0.2 ms of its own CPU

    def worked() -> None:
        clock.advance(0.0025)
        cpu.advance(0.0024)

    with caplog.at_level(logging.INFO, "odradek.broker.loop"):
        meter.timed(descheduled)()
        meter.timed(worked)()
    assert (meter.slow_steps, meter.waited_steps) == (1, 1)
    waited, slow = caplog.records
    assert waited.levelno == logging.INFO and slow.levelno == logging.WARNING
    assert waited.getMessage().startswith("waited loop step: 8.0 ms, CPU 0.2 ms in ")
    assert waited.getMessage().endswith(".descheduled")
    assert slow.getMessage().startswith("slow loop step: 2.5 ms, CPU 2.4 ms in ")


def test_a_collection_inside_a_step_is_named_in_its_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The meter's `gc.callbacks` entry times each collection: a step that ran one says how
    much of it was the collector; one that ran none says nothing of it."""
    clock, cpu = FakeClock(), FakeClock()
    meter = SlowStepMeter(0.001, clock, cpu)

    def allocates_into_a_collection() -> None:
        clock.advance(0.0003)
        meter.on_gc("start", {"generation": 1})
        clock.advance(0.0029)
        meter.on_gc("stop", {"generation": 1})
        cpu.advance(0.0032)

    def works() -> None:
        clock.advance(0.0015)
        cpu.advance(0.0015)

    with caplog.at_level(logging.WARNING, "odradek.broker.loop"):
        meter.timed(allocates_into_a_collection)()
        meter.timed(works)()
    collected, worked = (r.getMessage() for r in caplog.records)
    assert collected.startswith("slow loop step: 3.2 ms, CPU 3.2 ms (GC 2.9 ms) in ")
    assert worked.startswith("slow loop step: 1.5 ms, CPU 1.5 ms in ")
    (stats,) = [s for n, s in meter.summary().items() if n.endswith("into_a_collection")]
    assert stats.gc_s == pytest.approx(0.0029)


def test_the_summary_sums_each_steps_cpu_by_name() -> None:
    """Every step counts in the summary (over the threshold or not), under one name per
    function, coroutine or builtin method however many objects ran it; largest total first."""
    clock, cpu = FakeClock(), FakeClock()
    meter = SlowStepMeter(0.001, clock, cpu)

    class Conn:
        def __init__(self, work_s: float) -> None:
            self.work_s = work_s

        def data_received(self) -> None:
            cpu.advance(self.work_s)
            clock.advance(self.work_s)

    def tick() -> None:
        cpu.advance(0.0001)

    for work_s in (0.0002, 0.0030, 0.0004):  # three connections, one method
        meter.timed(Conn(work_s).data_received)()
    for _ in range(5):
        meter.timed(tick)()
    futures = [asyncio.Future(loop=asyncio.new_event_loop()) for _ in range(3)]
    try:
        for future in futures:  # a builtin method of three objects: one key, not three
            meter.timed(future.cancel)()
    finally:
        for future in futures:
            future.get_loop().close()
    summary = meter.summary()
    assert len(meter.stats) == 3
    conn = summary[f"{__name__}.test_the_summary_sums_each_steps_cpu_by_name.<locals>."
                   "Conn.data_received"]  # fmt: skip
    assert conn.count == 3
    assert conn.cpu_s == pytest.approx(0.0036) and conn.max_cpu_s == pytest.approx(0.0030)
    assert conn.max_wall_s == pytest.approx(0.0030)
    ticks = summary[f"{__name__}.test_the_summary_sums_each_steps_cpu_by_name.<locals>.tick"]
    assert ticks.count == 5 and ticks.cpu_s == pytest.approx(0.0005)
    lines = meter.summary_lines()
    assert lines[0].startswith("loop steps of ") and ".Conn.data_received: 3 steps, " in lines[0]
    assert "CPU 3.6 ms in total, 1200.0 us mean, max 3.00 ms; wall max 3.00 ms" in lines[0]


def test_a_task_step_is_named_by_its_coroutine(caplog: pytest.LogCaptureFixture) -> None:
    clock, cpu = FakeClock(), FakeClock()

    async def holds_the_loop() -> None:
        await asyncio.sleep(0)
        clock.advance(0.005)  # this step "takes" 5 ms by the meter's clocks
        cpu.advance(0.005)

    async def main() -> None:
        await asyncio.create_task(holds_the_loop(), name="hog")

    with (
        caplog.at_level(logging.WARNING, "odradek.broker.loop"),
        asyncio.Runner(loop_factory=debug_loop_factory(1, clock, cpu)) as runner,
    ):
        runner.run(main())
        lines = [r.getMessage() for r in caplog.records]
        meter = runner.get_loop().meter  # type: ignore[attr-defined]
        gc.callbacks.remove(meter.on_gc)
        summary = meter.summary()
    assert len(lines) == 1, lines
    assert lines[0].startswith("slow loop step: 5.0 ms, CPU 5.0 ms in coroutine ")
    assert lines[0].endswith(".holds_the_loop (task hog)")
    (name,) = [n for n in summary if n.endswith(".holds_the_loop")]  # no task name
    assert name.startswith("coroutine ") and summary[name].count == 2  # both its steps
    assert summary[name].max_cpu_s == pytest.approx(0.005)


def test_protocol_callbacks_are_timed_and_named() -> None:
    clock = FakeClock()
    logged: list[str] = []

    class Meter(SlowStepMeter):
        def report(
            self, callback: Any, took_s: float, cpu_s: float, gc_s: float = 0, what: str = ""
        ) -> None:
            logged.append(step_name(callback))

    class Decoder(asyncio.Protocol):
        def data_received(self, data: bytes) -> None:
            clock.advance(0.002)

    protocol = Meter(0.001, clock).protocol(Decoder())
    protocol.connection_made(None)  # type: ignore[arg-type]
    protocol.data_received(b"x")
    assert logged == [f"{__name__}.test_protocol_callbacks_are_timed_and_named.<locals>."
                      "Decoder.data_received"]  # fmt: skip


def test_the_broker_runs_on_uvloop_unless_debug_mode_is_on() -> None:
    import uvloop

    from broker.slow_steps import DebugLoop, broker_loop_factory

    assert broker_loop_factory(0) is uvloop.new_event_loop
    loop = broker_loop_factory(2)()
    try:
        assert isinstance(loop, DebugLoop) and loop.meter.threshold_s == 0.002
        assert loop.meter.on_gc in gc.callbacks  # collections are timed
    finally:
        gc.callbacks.remove(loop.meter.on_gc)
        loop.close()


def test_a_slow_step_names_the_requests_it_handled(caplog: pytest.LogCaptureFixture) -> None:
    """The server notes each request with its door (broker/server.py): a slow `data_received`
    line says which APIs it handled, and a quick step's notes do not carry over to the next."""
    clock, cpu = FakeClock(), FakeClock()
    meter = SlowStepMeter(0.001, clock, cpu)

    class Door:  # MeteredDoor's api_name
        def api_name(self, request: int) -> str:
            return {0: "Produce", 1: "Fetch"}[request]

    produce, fetch = (Door(), 0), (Door(), 1)

    def received(handlers: list[Any], took: float) -> None:
        meter.notes.extend(handlers)
        clock.advance(took)
        cpu.advance(took)

    with caplog.at_level(logging.WARNING, "odradek.broker.loop"):
        meter.timed(received)([fetch], 0.0005)  # quick: not logged
        meter.timed(received)([produce, fetch, produce], 0.0383)
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.endswith("received handling Produce x2, Fetch"), line
    assert meter.notes == []
