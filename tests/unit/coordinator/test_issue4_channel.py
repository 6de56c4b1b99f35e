"""Issue 4's channel and shutdown plumbing without brokers: leaders-first LeaderAndIsr, the
channel flush a resigning controller waits on, the broker's controlled-shutdown retries, and the
daemon's controller settings."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from broker.config import BrokerConfig, load_config
from broker.service_configs import controller_config
from coordinator.cluster.shutdown import ShutdownSettings, request_controlled_shutdown
from coordinator.controller.channel import BrokerChannel, send_leaders_first
from protocol.errors import NotControllerError


class HoldingChannel:
    """Records sends with their gates and keeps the callbacks, so a test decides when brokers
    answer; `delivered()` is what a real channel would have handed over by now."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str, asyncio.Event | None]] = []
        self.callbacks: dict[int, Any] = {}

    def send(self, broker_id: int, request: Any, on_response: Any = None, gate: Any = None) -> None:
        self.sent.append((broker_id, request, gate))
        if on_response is not None:
            self.callbacks[broker_id] = on_response

    def delivered(self) -> list[tuple[int, str]]:
        return [(b, r) for b, r, gate in self.sent if gate is None or gate.is_set()]

    def answer(self, broker_id: int) -> None:
        self.callbacks.pop(broker_id)(broker_id, None)


async def test_followers_hear_only_after_every_new_leader_answered() -> None:
    channel = HoldingChannel()
    send_leaders_first(channel, {1: "a", 2: "b", 3: "c"}, leaders={2, 3})  # type: ignore[arg-type]
    assert [b for b, _, _ in channel.sent] == [2, 3, 1]  # queued in order...
    assert channel.delivered() == [(2, "b"), (3, "c")]  # ...but 1 waits behind the gate
    channel.answer(2)
    assert channel.delivered() == [(2, "b"), (3, "c")]
    channel.answer(3)
    assert channel.delivered() == [(2, "b"), (3, "c"), (1, "a")]


async def test_followers_are_not_held_forever_by_a_silent_leader() -> None:
    channel = HoldingChannel()
    send_leaders_first(channel, {1: "a", 2: "b"}, leaders={2}, wait_s=0.01)  # type: ignore[arg-type]
    assert channel.delivered() == [(2, "b")]
    for _ in range(100):
        if len(channel.delivered()) == 2:
            break
        await asyncio.sleep(0.01)
    assert channel.delivered() == [(2, "b"), (1, "a")]
    channel.answer(2)  # a late answer changes nothing
    assert len(channel.sent) == 2


async def test_without_leaders_among_recipients_everything_goes_at_once() -> None:
    channel = HoldingChannel()
    send_leaders_first(channel, {1: "a", 2: "b"}, leaders={-1})  # type: ignore[arg-type]
    assert channel.delivered() == [(1, "a"), (2, "b")]
    assert channel.callbacks == {}


async def test_a_gated_request_holds_back_later_requests_to_that_broker() -> None:
    delivered: list[str] = []

    class Recording:
        closed = False

        async def send(self, request: Any, timeout_ms: float | None = None) -> Any:
            delivered.append(request)
            return "ok"

        async def close(self) -> None:
            return None

    async def connect(host: str, port: int) -> Any:
        return Recording()

    channel = BrokerChannel(1, connect=connect)
    channel.add_broker(2, "127.0.0.1", 1)
    gate = asyncio.Event()
    channel.send(2, "leader-and-isr", None, gate)
    channel.send(2, "stop-replica")
    assert not await channel.flush(0.05)
    assert delivered == []  # the StopReplica did not overtake
    gate.set()
    assert await channel.flush(1.0)
    assert delivered == ["leader-and-isr", "stop-replica"]
    await channel.close()


class SlowConnection:
    def __init__(self, release: asyncio.Event) -> None:
        self.release = release
        self.closed = False

    async def send(self, request: Any, timeout_ms: float | None = None) -> Any:
        await self.release.wait()
        return "ok"

    async def close(self) -> None:
        self.closed = True


async def test_flush_waits_for_requests_in_flight() -> None:
    release = asyncio.Event()

    async def connect(host: str, port: int) -> Any:
        return SlowConnection(release)

    channel = BrokerChannel(1, connect=connect)
    channel.add_broker(2, "127.0.0.1", 1)
    answers: list[Any] = []
    channel.send(2, "req", lambda b, r: answers.append(r))
    assert not await channel.flush(0.05)  # still in flight
    release.set()
    assert await channel.flush(1.0)
    assert answers == ["ok"]
    await channel.close()


class FakeController:
    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls = 0
        self.channel = self

    async def call(self, fn: Any, timeout_s: float) -> Any:
        fn().close()  # the real work needs a controller: only the plan to call it is checked
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def flush(self, timeout_s: float) -> bool:
        return True


class FakeElector:
    def __init__(self, controller: FakeController) -> None:
        self.active_controller = controller


async def test_controlled_shutdown_retries_until_nothing_is_led() -> None:
    controller = FakeController([NotControllerError("moving"), [("t", 0)], []])
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    settings = ShutdownSettings(max_retries=5, retry_backoff_ms=250)
    ok = await request_controlled_shutdown(None, 3, FakeElector(controller), settings, sleep)  # type: ignore[arg-type]
    assert ok and controller.calls == 3
    assert slept == [0.25, 0.25]


async def test_controlled_shutdown_gives_up_after_max_retries() -> None:
    controller = FakeController([[("t", 0)]] * 3)

    async def sleep(s: float) -> None:
        return None

    settings = ShutdownSettings(max_retries=3, retry_backoff_ms=1)
    ok = await request_controlled_shutdown(None, 3, FakeElector(controller), settings, sleep)  # type: ignore[arg-type]
    assert not ok and controller.calls == 3


def test_daemon_turns_on_replication_and_passes_rebalance_settings(tmp_path: Path) -> None:
    path = tmp_path / "b.toml"
    path.write_text(
        "broker_id = 1\n"
        f'log_dir = "{tmp_path}"\n'
        "auto_leader_rebalance_enable = false\n"
        "leader_imbalance_check_interval_seconds = 30\n"
        "leader_imbalance_per_broker_percentage = 25\n"
        "unclean_leader_election_enable = true\n"
    )
    config = load_config(path)
    cc = controller_config(config)
    assert cc.replicated
    assert not cc.auto_leader_rebalance_enable
    assert cc.leader_imbalance_check_interval_s == 30
    assert cc.leader_imbalance_per_broker_percentage == 25
    assert cc.default_unclean
    defaults = BrokerConfig(1, tmp_path)
    assert defaults.controlled_shutdown_enable and defaults.auto_leader_rebalance_enable
    assert not defaults.unclean_leader_election_enable
