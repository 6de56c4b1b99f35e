"""Debug mode's slow-step logger (broker/slow_steps.py) on a clock the test moves: a step
"takes" as long as the test says, whatever the machine's speed."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from broker.slow_steps import SlowStepMeter, debug_loop_factory, step_name
from tests.unit.broker.test_loop_lag import FakeClock


def test_a_callback_over_the_threshold_is_logged_by_name(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    meter = SlowStepMeter(0.001, clock)

    def quick() -> None:
        clock.advance(0.0009)

    def blocking_append(records: list[int]) -> None:
        clock.advance(0.0032)
        records.append(1)

    records: list[int] = []
    with caplog.at_level(logging.WARNING, "odradek.broker.loop"):
        meter.timed(quick)()
        meter.timed(blocking_append)(records)
    assert records == [1] and meter.slow_steps == 1
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == (
        "slow loop step: 3.2 ms in tests.unit.broker.test_slow_steps."
        "test_a_callback_over_the_threshold_is_logged_by_name.<locals>.blocking_append"
    )


def test_a_task_step_is_named_by_its_coroutine(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()

    async def holds_the_loop() -> None:
        await asyncio.sleep(0)
        clock.advance(0.005)  # this step "takes" 5 ms by the meter's clock

    async def main() -> None:
        await asyncio.create_task(holds_the_loop(), name="hog")

    with (
        caplog.at_level(logging.WARNING, "odradek.broker.loop"),
        asyncio.Runner(loop_factory=debug_loop_factory(1, clock)) as runner,
    ):
        runner.run(main())
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, lines
    assert lines[0].startswith("slow loop step: 5.0 ms in coroutine ")
    assert lines[0].endswith(".holds_the_loop (task hog)")


def test_protocol_callbacks_are_timed_and_named() -> None:
    clock = FakeClock()
    logged: list[str] = []

    class Meter(SlowStepMeter):
        def report(self, callback: Any, took_s: float) -> None:
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
    finally:
        loop.close()
