"""broker/zk_fence.py: when a broker cut from ZooKeeper fences itself, and how it rejoins.

The decision (`ZkFence`) on a manual clock; the watcher against a fake ZooKeeper client and a
fake sleep, with real Partition objects resigned through `resign_leaderships`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from broker.zk_fence import FenceState, ZkFence, ZkFenceWatcher
from protocol.clock import ManualClock

T = 6000
G = T // 5  # the default guard


def test_connected_broker_is_not_fenced() -> None:
    fence = ZkFence(T, heard_at_ms=0)
    assert fence.on_state("CONNECTED", 0) == "none"
    assert fence.on_tick(10 * T) == "none"
    assert not fence.fenced


def test_suspended_fences_before_the_server_may_expire_the_session() -> None:
    """The server expires the session T after it last heard us; kazoo notices a silent
    connection only about 2T/3 after its last answer. Fencing counts from the last answer."""
    fence = ZkFence(T, heard_at_ms=1000)
    assert fence.on_state("SUSPENDED", 1000 + 2 * T // 3) == "none"
    assert fence.on_tick(1000 + T - G - 1) == "none"
    assert not fence.fenced
    assert fence.on_tick(1000 + T - G) == "resign"
    assert fence.fenced and 1000 + T - G < 1000 + T
    assert fence.on_tick(1000 + T + 100) == "resign"  # leaderships given meanwhile are undone


def test_probe_answers_move_the_deadline_forward_only() -> None:
    fence = ZkFence(T, heard_at_ms=0)
    fence.on_heard(2000)
    fence.on_heard(1000)  # an older probe answered late
    assert fence.fence_at_ms == 2000 + T - G
    fence.on_state("SUSPENDED", 2500)
    assert fence.on_tick(2000 + T - G - 1) == "none"
    assert fence.on_tick(2000 + T - G) == "resign"


def test_a_short_blip_does_not_fence() -> None:
    fence = ZkFence(T, heard_at_ms=0)
    fence.on_state("SUSPENDED", 0)
    assert fence.on_state("CONNECTED", T - G - 1) == "none"
    assert fence.state is FenceState.IN_SESSION
    assert fence.on_tick(5 * T) == "none"


def test_reconnecting_counts_as_heard() -> None:
    fence = ZkFence(T, heard_at_ms=0)
    fence.on_state("SUSPENDED", 0)
    fence.on_state("CONNECTED", 1000)
    fence.on_state("SUSPENDED", 2000)
    assert fence.on_tick(1000 + T - G - 1) == "none"
    assert fence.on_tick(1000 + T - G) == "resign"


def test_a_suspension_noticed_past_the_deadline_fences_at_the_next_tick() -> None:
    fence = ZkFence(T, heard_at_ms=0)
    fence.on_state("SUSPENDED", T)  # e.g. the process was paused
    assert fence.on_tick(T) == "resign"


def test_the_guard_can_be_chosen() -> None:
    fence = ZkFence(T, heard_at_ms=0, guard_ms=100)
    fence.on_state("SUSPENDED", 10)
    assert fence.on_tick(T - 101) == "none"
    assert fence.on_tick(T - 100) == "resign"


@pytest.mark.parametrize("before", [[], ["SUSPENDED"]])
def test_lost_fences_at_once_and_a_new_session_rejoins(before: list[str]) -> None:
    fence = ZkFence(T, heard_at_ms=0)
    for state in before:
        fence.on_state(state, 0)  # type: ignore[arg-type]
    assert fence.on_state("LOST", 10) == "resign"
    assert fence.fenced
    assert fence.on_state("CONNECTED", 20) == "rejoin"
    assert not fence.fenced
    assert fence.on_tick(10 * T) == "none"


def test_fenced_then_lost_when_reconnecting_rejoins_without_bounce() -> None:
    """The usual heal: kazoo reaches the server, hears the session expired (LOST), then opens a
    new one (CONNECTED)."""
    fence = ZkFence(T, heard_at_ms=0)
    fence.on_state("SUSPENDED", 0)
    assert fence.on_tick(T) == "resign"
    assert fence.on_state("LOST", 2 * T) == "none"  # already resigned
    assert fence.on_state("CONNECTED", 2 * T + 5) == "rejoin"
    assert fence.state is FenceState.IN_SESSION


def test_old_session_survived_bounces_until_lost() -> None:
    """ZooKeeper was down longer than our timeout: it never expired us, but we resigned, so we
    close the session ourselves and rejoin as a new incarnation."""
    fence = ZkFence(T, heard_at_ms=0, bounce_retry_ms=1000)
    fence.on_state("SUSPENDED", 0)
    fence.on_tick(T)
    assert fence.on_state("CONNECTED", 2 * T) == "bounce"
    assert fence.fenced
    assert fence.on_tick(2 * T + 999) == "resign"
    assert fence.on_tick(2 * T + 1000) == "bounce"  # the bounce failed: again
    assert fence.on_state("LOST", 2 * T + 1100) == "none"
    assert fence.on_tick(2 * T + 5000) == "resign"  # lost: no more bounces
    assert fence.on_state("CONNECTED", 2 * T + 5100) == "rejoin"


def test_suspended_while_fenced_stops_bouncing() -> None:
    fence = ZkFence(T, heard_at_ms=0, bounce_retry_ms=1000)
    fence.on_state("LOST", 0)
    fence.on_state("CONNECTED", 1)
    fence.on_state("SUSPENDED", 2)
    assert fence.state is FenceState.SUSPENDED
    assert fence.on_tick(2 + T) == "resign"
    assert fence.on_state("CONNECTED", 3 + T) == "bounce"
    assert fence.on_state("SUSPENDED", 4 + T) == "none"
    assert fence.on_tick(10 * T) == "resign"


# ----- the watcher ------------------------------------------------------------------------------


class FakeZk:
    def __init__(self) -> None:
        self.session_timeout_ms = T
        self.listeners: list[Callable[[Any], None]] = []
        self.expired = 0
        self.connected = True
        self.probes = 0

    def add_state_listener(self, cb: Callable[[Any], None]) -> None:
        self.listeners.append(cb)

    def remove_state_listener(self, cb: Callable[[Any], None]) -> None:
        self.listeners.remove(cb)

    def emit(self, state: str) -> None:
        self.connected = state == "CONNECTED"
        for cb in list(self.listeners):
            cb(state)

    async def exists(self, _path: str) -> int:
        self.probes += 1
        return 0

    async def expire_session(self) -> None:
        self.expired += 1
        self.emit("LOST")


async def test_watcher_resigns_after_the_timeout_and_bounces_a_surviving_session() -> None:
    zk = FakeZk()
    clock = ManualClock()
    resigned: list[int] = []
    ticks = asyncio.Event()

    async def sleep(_s: float) -> None:
        ticks.set()
        await asyncio.sleep(0)

    watcher = ZkFenceWatcher(zk, lambda: resigned.append(1) or 1, clock, sleep=sleep)  # type: ignore[arg-type]
    watcher.start()
    clock.advance(1000)
    await asyncio.sleep(0.01)
    assert zk.probes > 0, "the probe runs while connected"
    zk.emit("SUSPENDED")  # from here no probe is answered
    clock.advance(T - G - 1)  # one millisecond before the last answer + T - guard
    await asyncio.sleep(0.01)
    assert not resigned and not watcher.fenced
    clock.advance(1)
    await asyncio.sleep(0.01)
    assert watcher.fenced and resigned
    zk.emit("CONNECTED")  # the old session: bounce it
    await asyncio.sleep(0.01)
    assert zk.expired == 1
    zk.emit("CONNECTED")  # the new session
    assert not watcher.fenced
    await watcher.stop()
    assert zk.listeners == []
