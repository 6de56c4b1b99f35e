"""The fast death decision (coordinator/controller/fast_death.py): only a refusal on every port is
proof.

Outcomes are classified from real connection attempts on the loopback (a listening socket, a
closed port) and from the exceptions themselves; the prober and the live-set filter are pure.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from coordinator.cluster.zk_paths import BrokerRegistration
from coordinator.controller.context import LiveBroker
from coordinator.controller.fast_death import (
    DeathProber,
    Outcome,
    classify,
    endpoints,
    is_proof_of_death,
    probe_endpoint,
    without_probed_dead,
)


def _broker(broker_id: int, czxid: int, kafka_port: int = -1) -> LiveBroker:
    kafka_host = "127.0.0.1" if kafka_port > 0 else None
    reg = BrokerRegistration("127.0.0.1", 9000 + broker_id, 0, kafka_host, kafka_port)
    return LiveBroker(broker_id, reg, czxid)


def test_classify_each_error() -> None:
    assert classify(None) is Outcome.ACCEPTED
    assert classify(ConnectionRefusedError(111, "refused")) is Outcome.REFUSED
    assert classify(TimeoutError()) is Outcome.TIMEOUT
    assert classify(OSError(113, "no route to host")) is Outcome.UNREACHABLE
    assert classify(ConnectionResetError(104, "reset")) is Outcome.UNREACHABLE


@pytest.mark.parametrize(
    ("outcomes", "dead"),
    [
        ([Outcome.REFUSED], True),
        ([Outcome.REFUSED, Outcome.REFUSED], True),
        ([], False),  # nothing probed proves nothing
        ([Outcome.TIMEOUT], False),  # paused, partitioned (iptables DROP), dead machine
        ([Outcome.UNREACHABLE], False),
        ([Outcome.ACCEPTED], False),
        ([Outcome.REFUSED, Outcome.ACCEPTED], False),  # one listener closed, the process runs
        ([Outcome.REFUSED, Outcome.TIMEOUT], False),
    ],
)
def test_only_refusal_everywhere_is_proof(outcomes: list[Outcome], dead: bool) -> None:
    assert is_proof_of_death(outcomes) is dead


async def test_real_socket_outcomes() -> None:
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(8)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: the kernel resets a SYN
    try:
        assert await probe_endpoint(*listening.getsockname()) is Outcome.ACCEPTED
        assert await probe_endpoint(*closed.getsockname()) is Outcome.REFUSED
    finally:
        listening.close()
        closed.close()


async def test_a_full_backlog_that_nobody_accepts_is_not_refused() -> None:
    """What a paused (SIGSTOP) broker looks like: it listens, never accepts."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(0)
    try:
        outcomes = [await probe_endpoint(*listening.getsockname(), 0.3) for _ in range(4)]
    finally:
        listening.close()
    assert Outcome.REFUSED not in outcomes
    assert not is_proof_of_death(outcomes)


def test_endpoints_are_every_registered_listener() -> None:
    assert endpoints(_broker(1, 5)) == [("127.0.0.1", 9001)]
    assert endpoints(_broker(2, 5, kafka_port=9092)) == [("127.0.0.1", 9002), ("127.0.0.1", 9092)]


def test_probed_dead_registration_is_not_live_until_it_changes() -> None:
    current = {1: _broker(1, 10), 2: _broker(2, 20), 3: _broker(3, 30)}
    live, kept = without_probed_dead(current, {2: 20})
    assert sorted(live) == [1, 3] and kept == {2: 20}
    # restarted: a new registration (czxid) counts as live, the proof is forgotten
    live, kept = without_probed_dead({**current, 2: _broker(2, 25)}, {2: 20})
    assert sorted(live) == [1, 2, 3] and kept == {}
    # the registration went away (session expired): forgotten as well
    live, kept = without_probed_dead({1: current[1]}, {2: 20})
    assert sorted(live) == [1] and kept == {}


async def test_prober_reports_only_proven_deaths_once_per_probe() -> None:
    live = {1: _broker(1, 10, kafka_port=9101), 2: _broker(2, 20, kafka_port=9102)}
    answers = {9001: Outcome.REFUSED, 9101: Outcome.REFUSED,
               9002: Outcome.REFUSED, 9102: Outcome.TIMEOUT}  # fmt: skip
    release = asyncio.Event()
    calls: list[int] = []

    async def probe(_host: str, port: int) -> Outcome:
        calls.append(port)
        await release.wait()
        return answers[port]

    dead: list[tuple[int, int]] = []
    prober = DeathProber(live.get, lambda b, z: dead.append((b, z)), probe)
    for b in (1, 1, 2, 3):  # a second suspicion while probing is folded; 3 is not live
        prober.suspect(b)
    await asyncio.sleep(0)
    release.set()
    await prober.wait_idle(1.0)
    assert dead == [(1, 10)]
    assert prober.probes == 2 and sorted(calls) == [9001, 9002, 9101, 9102]
