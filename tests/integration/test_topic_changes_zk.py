"""Changing a topic after its creation, against a real ZooKeeper: partitions added to
/brokers/topics/<t> (coordinator/cluster/topics.py) reach the controller through its data watch and
start as a new topic's partitions do; a config written with its change notification
(coordinator/cluster/config_changes.py) reaches every broker's listener.

Brokers are ZooKeeper sessions with a registration; the controller talks to a
RecordingChannel, so the tests see exactly which requests it would send.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from coordinator.cluster import topics
from coordinator.cluster import zk_paths as paths
from coordinator.cluster.config_changes import (
    MAX_CHANGES_KEPT,
    ConfigChangeListener,
    write_topic_config,
)
from coordinator.cluster.registration import register_broker
from coordinator.cluster.zk import ZkClient
from coordinator.controller.channel import ControllerChannel, RecordingChannel
from coordinator.controller.elector import ControllerElector
from protocol.api.controller import LeaderAndIsrRequest, UpdateMetadataRequest
from protocol.errors import InvalidTopicError, UnknownTopicOrPartitionError

pytestmark = pytest.mark.integration

SESSION_MS = 2000
WAIT_S = 10.0


async def eventually(check: Callable[[], Awaitable[bool] | bool], what: str) -> None:
    for _ in range(int(WAIT_S / 0.05)):
        result = check()
        if await result if asyncio.iscoroutine(result) else result:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Brokers:
    """Sessions registered as brokers 1..n; broker 1 runs the controller election."""

    def __init__(self, connect: str) -> None:
        self.connect = connect
        self.sessions: list[ZkClient] = []
        self.channel = RecordingChannel()
        self.elector: ControllerElector | None = None

    async def session(self) -> ZkClient:
        zk = ZkClient(self.connect, SESSION_MS)
        await zk.start(10)
        self.sessions.append(zk)
        return zk

    async def start(self, n: int) -> ZkClient:
        first = None
        for broker_id in range(1, n + 1):
            zk = await self.session()
            await register_broker(zk, broker_id, "127.0.0.1", 9000 + broker_id)
            first = first or zk

        def factory(_id: int, _overflow: Callable[[int], None]) -> ControllerChannel:
            return self.channel

        assert first is not None
        self.elector = ControllerElector(first, 1, channel_factory=factory)
        await self.elector.start()
        await eventually(lambda: self.elector is not None and self.elector.is_controller, "ctl")
        return first

    def sent(self, cls: type) -> list[tuple[int, Any]]:
        return self.channel.of_type(cls)

    async def close(self) -> None:
        if self.elector is not None:
            await self.elector.stop()
        for zk in self.sessions:
            await zk.stop()


@pytest.fixture
async def brokers(zk_chroot: str) -> AsyncIterator[Brokers]:
    b = Brokers(zk_chroot)
    yield b
    await b.close()


async def test_added_partitions_are_elected_and_announced(brokers: Brokers) -> None:
    zk = await brokers.start(3)
    await topics.create_topic(zk, "t", 2, 2, {}, [1, 2, 3])
    await eventually(lambda: _stated(zk, "t", 2), "the topic's first two partitions")
    before = len(brokers.sent(LeaderAndIsrRequest))

    added = await topics.add_partitions(zk, "t", 5, None, [1, 2, 3])
    assert added == {2: [3, 1], 3: [1, 2], 4: [2, 3]}
    assert await topics.read_assignment(zk, "t") == {
        0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 2], 4: [2, 3],
    }  # fmt: skip
    await eventually(lambda: _stated(zk, "t", 5), "state znodes of the added partitions")
    for p, replicas in added.items():
        state = await topics.read_partition_state(zk, "t", p)
        assert state is not None and state[0].leader == replicas[0]

    # one LeaderAndIsr per replica broker with just the new partitions, marked new
    await eventually(lambda: len(brokers.sent(LeaderAndIsrRequest)) >= before + 3, "LeaderAndIsr")
    new_lai = brokers.sent(LeaderAndIsrRequest)[before:]
    for broker_id, req in new_lai:
        assert all(s.is_new and s.partition >= 2 for s in req.partition_states)
        got = sorted(s.partition for s in req.partition_states)
        assert got == sorted(p for p, r in added.items() if broker_id in r)
    await eventually(
        lambda: any(
            sorted(s.partition for s in r.partition_states) == [2, 3, 4]
            for _, r in brokers.sent(UpdateMetadataRequest)
        ),
        "UpdateMetadata with the added partitions",
    )


async def test_validate_only_and_refusals_write_nothing(brokers: Brokers) -> None:
    zk = await brokers.start(2)
    await topics.create_topic(zk, "v", 1, 2, {}, [1, 2])
    assert await topics.add_partitions(zk, "v", 3, [[2, 1], [1, 2]], [1, 2], True) == {
        1: [2, 1], 2: [1, 2],
    }  # fmt: skip
    assert await topics.read_assignment(zk, "v") == {0: [1, 2]}
    with pytest.raises(UnknownTopicOrPartitionError):
        await topics.add_partitions(zk, "nope", 3, None, [1, 2])
    await topics.delete_topic(zk, "v")
    with pytest.raises((InvalidTopicError, UnknownTopicOrPartitionError)):
        await topics.add_partitions(zk, "v", 3, None, [1, 2])


async def test_a_config_change_reaches_every_listener(brokers: Brokers) -> None:
    zk = await brokers.start(1)
    await topics.create_topic(zk, "c", 1, 1, {"retention.ms": "1000"}, [1])
    seen: dict[int, list[tuple[str, dict[str, str]]]] = {1: [], 2: []}
    listeners = []
    for n in (1, 2):
        session = await brokers.session()

        def apply(topic: str, overrides: Any, n: int = n) -> None:
            seen[n].append((topic, dict(overrides)))

        listener = ConfigChangeListener(session, apply, lambda: set())
        await listener.start()
        listeners.append(listener)
    try:
        await write_topic_config(zk, "c", {"retention.ms": "5", "flush.ms": "10"})
        want = ("c", {"retention.ms": "5", "flush.ms": "10"})
        await eventually(lambda: all(want in s for s in seen.values()), "both listeners")
        assert await topics.read_topic_config(zk, "c") == want[1]
        (child,) = await zk.get_children(paths.CONFIG_CHANGES)
        data, _ = await zk.get(f"{paths.CONFIG_CHANGES}/{child}")
        assert data == b'{"entity_path":"topics/c","version":2}'
        with pytest.raises(UnknownTopicOrPartitionError):
            await write_topic_config(zk, "nope", {})
    finally:
        for listener in listeners:
            await listener.stop()


async def test_writers_keep_a_bounded_number_of_notifications(brokers: Brokers) -> None:
    zk = await brokers.start(1)
    await topics.create_topic(zk, "p", 1, 1, {}, [1])
    for i in range(MAX_CHANGES_KEPT + 5):
        await write_topic_config(zk, "p", {"retention.ms": str(1000 + i)})
    children = await zk.get_children(paths.CONFIG_CHANGES)
    assert len(children) == MAX_CHANGES_KEPT
    # a listener starting now applies the topic's latest config once, whatever was purged
    applied: list[tuple[str, dict[str, str]]] = []
    listener = ConfigChangeListener(zk, lambda t, o: applied.append((t, dict(o))), set)
    await listener.start()
    try:
        await eventually(lambda: bool(applied), "the listener's first pass")
        assert applied == [("p", {"retention.ms": str(1000 + MAX_CHANGES_KEPT + 4)})]
    finally:
        await listener.stop()


async def _stated(zk: ZkClient, topic: str, n: int) -> bool:
    states = [await topics.read_partition_state(zk, topic, p) for p in range(n)]
    return all(s is not None for s in states)
