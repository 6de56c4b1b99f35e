"""Controller election and the controller's decisions against a real ZooKeeper.

Brokers are simulated by ZooKeeper sessions that register /brokers/ids/<id>; the controller
talks to a RecordingChannel, so each test checks exactly which requests it would send.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from coordinator.cluster import topics
from coordinator.cluster import zk_paths as paths
from coordinator.cluster.isr import ISR_CHANGE_NOTIFICATION, ZkIsrWriter
from coordinator.cluster.registration import register_broker
from coordinator.cluster.zk import ZkBadVersion, ZkClient
from coordinator.cluster.zk_paths import LeaderIsrState
from coordinator.controller.channel import ControllerChannel, RecordingChannel
from coordinator.controller.elector import (
    Controller,
    ControllerConfig,
    ControllerElector,
    bump_controller_epoch,
)
from protocol.api.controller import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from protocol.errors import (
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from tests.fixtures.zk import TcpProxy, wait_until

pytestmark = pytest.mark.integration

SESSION_MS = 2000
WAIT_S = 10.0


class Cluster:
    """ZooKeeper sessions standing in for brokers, plus electors with recording channels."""

    def __init__(self, connect: str, session_ms: int = SESSION_MS) -> None:
        self.connect = connect
        self.session_ms = session_ms
        self.brokers: dict[int, ZkClient] = {}
        self.electors: dict[int, ControllerElector] = {}
        self.channels: dict[int, list[RecordingChannel]] = {}
        self.admin = ZkClient(connect, session_ms)

    async def session(self) -> ZkClient:
        zk = ZkClient(self.connect, self.session_ms)
        await zk.start(10)
        return zk

    async def add_broker(self, broker_id: int) -> ZkClient:
        zk = await self.session()
        await register_broker(zk, broker_id, "127.0.0.1", 9000 + broker_id)
        self.brokers[broker_id] = zk
        return zk

    async def kill_broker(self, broker_id: int) -> None:
        await self.brokers.pop(broker_id).stop()

    async def add_elector(
        self, broker_id: int, config: ControllerConfig | None = None
    ) -> ControllerElector:
        zk = self.brokers.get(broker_id) or await self.add_broker(broker_id)

        def factory(controller_id: int, _overflow: Callable[[int], None]) -> ControllerChannel:
            channel = RecordingChannel()
            self.channels.setdefault(controller_id, []).append(channel)
            return channel

        elector = ControllerElector(zk, broker_id, channel_factory=factory, config=config)
        await elector.start()
        self.electors[broker_id] = elector
        return elector

    def channel(self, broker_id: int) -> RecordingChannel:
        return self.channels[broker_id][-1]

    async def close(self) -> None:
        for elector in self.electors.values():
            await elector.stop()
        for zk in self.brokers.values():
            await zk.stop()
        await self.admin.stop()

    async def state(self, topic: str, partition: int) -> tuple[LeaderIsrState, int] | None:
        return await topics.read_partition_state(self.admin, topic, partition)


@pytest.fixture
async def cluster(zk_chroot: str) -> AsyncIterator[Cluster]:
    c = Cluster(zk_chroot)
    await c.admin.start(10)
    yield c
    await c.close()


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll an async check every 50 ms, bounded by WAIT_S."""
    import asyncio

    for _ in range(int(WAIT_S / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def controller_of(cluster: Cluster) -> ControllerElector:
    winners = [e for e in cluster.electors.values() if e.is_controller]
    assert len(winners) == 1, f"{len(winners)} controllers"
    return winners[0]


def requests(channel: RecordingChannel, cls: type) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for broker_id, request in channel.of_type(cls):
        out.setdefault(broker_id, []).append(request)
    return out


# ----- election and failover ----------------------------------------------------------------


async def test_one_controller_among_three_and_failover(cluster: Cluster) -> None:
    for b in (1, 2, 3):
        await cluster.add_elector(b)
    await wait_until(
        lambda: sum(e.is_controller for e in cluster.electors.values()) == 1, WAIT_S, "a controller"
    )
    first = controller_of(cluster)
    assert first.controller_epoch == 1
    data, _ = await cluster.admin.get(paths.CONTROLLER)
    assert json.loads(data)["brokerid"] == first.broker_id
    assert await cluster.admin.get(paths.CONTROLLER_EPOCH) == (b"1", 0)
    others = [e for e in cluster.electors.values() if e is not first]
    await wait_until(lambda: all(e.controller_id == first.broker_id for e in others), WAIT_S)

    # Kill the controller's session: another broker takes over with a higher epoch.
    del cluster.electors[first.broker_id]
    await cluster.kill_broker(first.broker_id)
    await wait_until(lambda: not first.is_controller, WAIT_S, "old controller to stop")
    await wait_until(lambda: any(e.is_controller for e in others), WAIT_S, "a new controller")
    second = controller_of(cluster)
    assert second.broker_id != first.broker_id
    assert second.controller_epoch == 2
    assert await cluster.admin.get(paths.CONTROLLER_EPOCH) == (b"2", 1)
    await first.stop()

    # A graceful stop releases /controller at once; the last elector takes over.
    del cluster.electors[second.broker_id]
    await second.stop()
    last = next(e for e in others if e is not second)
    await wait_until(lambda: last.is_controller, WAIT_S, "the last elector")
    assert last.controller_epoch == 3


async def test_zombie_controller_is_fenced(cluster: Cluster) -> None:
    await cluster.add_broker(1)
    zk = cluster.brokers[1]
    epoch, version = await bump_controller_epoch(zk)
    fenced: list[bool] = []
    channel = RecordingChannel()
    zombie = Controller(zk, 1, epoch, version, channel, on_stopped=lambda: fenced.append(True))
    await zombie.start()
    await wait_until(lambda: zombie.events_processed >= 1, WAIT_S, "startup")
    await bump_controller_epoch(cluster.admin)  # a new controller was elected elsewhere
    await topics.create_topic(cluster.admin, "t", 1, 1, {}, [1])
    await wait_until(lambda: fenced == [True], WAIT_S, "the zombie to be fenced")
    assert not zombie.active
    assert await cluster.state("t", 0) is None  # it wrote nothing
    assert channel.of_type(LeaderAndIsrRequest) == []
    await zombie.stop()


async def test_suspended_controller_stops_acting_and_resumes(zk_chroot: str) -> None:
    server_port = int(zk_chroot.split("/", 1)[0].rsplit(":", 1)[1])
    proxy = TcpProxy(server_port)
    await proxy.start()
    cluster = Cluster(proxy.connect + "/" + zk_chroot.split("/", 1)[1], session_ms=4000)
    try:
        await cluster.admin.start(10)
        elector = await cluster.add_elector(1)
        states: list[str] = []
        cluster.brokers[1].add_state_listener(states.append)
        await wait_until(lambda: elector.is_controller, WAIT_S, "controller")
        proxy.cut()  # the network to ZooKeeper fails
        await wait_until(lambda: not elector.is_controller, WAIT_S, "SUSPENDED to stop it")
        proxy.heal()
        await wait_until(lambda: elector.is_controller, WAIT_S, "controller again")
        assert states == ["SUSPENDED", "CONNECTED"]
        # The session survived, so /controller stayed ours: same epoch, a reloaded controller.
        assert elector.controller_epoch == 1
        assert len(cluster.channels[1]) == 2
    finally:
        proxy.heal()
        await cluster.close()
        await proxy.stop()


# ----- topics -------------------------------------------------------------------------------


async def start_controller(cluster: Cluster, brokers: list[int], **config: Any) -> RecordingChannel:
    for b in brokers:
        await cluster.add_broker(b)
    elector = await cluster.add_elector(brokers[0], ControllerConfig(**config))
    await wait_until(lambda: elector.is_controller, WAIT_S, "controller")
    controller = elector.controller
    assert controller is not None
    await wait_until(lambda: controller.events_processed >= 1, WAIT_S, "startup")
    channel = cluster.channel(brokers[0])
    await wait_until(
        lambda: set(requests(channel, UpdateMetadataRequest)) == set(brokers), WAIT_S, "sync"
    )
    channel.clear()
    return channel


async def all_states(cluster: Cluster, topic: str, n: int) -> list[LeaderIsrState]:
    states = [await cluster.state(topic, p) for p in range(n)]
    return [s[0] for s in states if s is not None]


async def test_topic_creation_writes_kafka_layout(cluster: Cluster) -> None:
    channel = await start_controller(cluster, [1, 2, 3, 4, 5])
    assignment = await topics.create_topic(
        cluster.admin, "topic01", 10, 2, {"retention.ms": "1000"}, [1, 2, 3, 4, 5]
    )
    await eventually(lambda: _n_states(cluster, "topic01", 10), "10 state znodes")

    raw, _ = await cluster.admin.get("/brokers/topics/topic01")
    assert json.loads(raw)["partitions"]["1"] == [2, 3]
    assert assignment[9] == [5, 1]
    raw, _ = await cluster.admin.get("/config/topics/topic01")
    assert json.loads(raw)["config"] == {"retention.ms": "1000"}
    assert await topics.read_topic_config(cluster.admin, "topic01") == {"retention.ms": "1000"}
    for p, state in enumerate(await all_states(cluster, "topic01", 10)):
        assert state == LeaderIsrState(assignment[p][0], 0, 1, [assignment[p][0]])

    # One LeaderAndIsr per broker carrying all its partitions; UpdateMetadata to everyone.
    lai = requests(channel, LeaderAndIsrRequest)
    assert sorted(lai) == [1, 2, 3, 4, 5]
    for broker_id, reqs in lai.items():
        assert len(reqs) == 1
        req = reqs[0]
        assert (req.controller_id, req.controller_epoch) == (1, 1)
        got = sorted(s.partition for s in req.partition_states)
        assert got == sorted(p for p, r in assignment.items() if broker_id in r)
        assert all(s.is_new for s in req.partition_states)
    await wait_until(lambda: len(requests(channel, UpdateMetadataRequest)) == 5, WAIT_S)
    for reqs in requests(channel, UpdateMetadataRequest).values():
        assert len(reqs[0].partition_states) == 10
        assert [b.node_id for b in reqs[0].live_brokers] == [1, 2, 3, 4, 5]


async def _n_states(cluster: Cluster, topic: str, n: int) -> bool:
    return len(await all_states(cluster, topic, n)) == n


async def test_topic_admin_errors(cluster: Cluster) -> None:
    await topics.create_topic(cluster.admin, "a", 1, 1, {}, [1])
    with pytest.raises(TopicAlreadyExistsError):
        await topics.create_topic(cluster.admin, "a", 1, 1, {}, [1])
    with pytest.raises(InvalidTopicError):
        await topics.create_topic(cluster.admin, "..", 1, 1, {}, [1])
    with pytest.raises(InvalidTopicError):
        await topics.create_topic(cluster.admin, "a/b", 1, 1, {}, [1])
    with pytest.raises(InvalidReplicationFactorError, match="larger than the 2 live brokers"):
        await topics.create_topic(cluster.admin, "b", 1, 3, {}, [1, 2])
    with pytest.raises(UnknownTopicOrPartitionError):
        await topics.delete_topic(cluster.admin, "nope")
    with pytest.raises(UnknownTopicOrPartitionError):
        await topics.read_topic_config(cluster.admin, "nope")
    assert await topics.read_topic_config(cluster.admin, "a") == {}
    assert await topics.list_topics(cluster.admin) == ["a"]
    await topics.delete_topic(cluster.admin, "a")
    await topics.delete_topic(cluster.admin, "a")  # idempotent while pending
    assert await topics.list_topics(cluster.admin, include_deleting=False) == []
    with pytest.raises(TopicAlreadyExistsError, match="marked for deletion"):
        await topics.create_topic(cluster.admin, "a", 1, 1, {}, [1])


async def test_topic_deletion(cluster: Cluster) -> None:
    channel = await start_controller(cluster, [1, 2, 3])
    await topics.create_topic(cluster.admin, "gone", 3, 2, {"x": "y"}, [1, 2, 3])
    await eventually(lambda: _n_states(cluster, "gone", 3), "states")
    channel.clear()
    await topics.delete_topic(cluster.admin, "gone")

    async def deleted() -> bool:
        return await cluster.admin.exists(paths.delete_topic_path("gone")) is None

    await eventually(deleted, "the deletion to finish")
    assert await cluster.admin.exists("/brokers/topics/gone") is None
    assert await cluster.admin.exists("/config/topics/gone") is None
    stops = requests(channel, StopReplicaRequest)
    assert sorted(stops) == [1, 2, 3]
    for _broker_id, reqs in stops.items():
        assert len(reqs) == 1 and reqs[0].delete_partitions
        assert len(reqs[0].partitions) == 2  # 3 partitions x rf 2 over 3 brokers
        assert reqs[0].controller_epoch == 1
    updates = requests(channel, UpdateMetadataRequest)
    assert all(r[-1].deleted_topics == ["gone"] for r in updates.values())
    # The topic can be created again.
    await topics.create_topic(cluster.admin, "gone", 1, 1, {}, [1])
    await eventually(lambda: _n_states(cluster, "gone", 1), "the new topic's state")


# ----- broker death and return --------------------------------------------------------------


async def test_broker_death_takes_partitions_offline_and_back(cluster: Cluster) -> None:
    channel = await start_controller(cluster, [1, 2, 3])
    assignment = await topics.create_topic(cluster.admin, "t", 6, 2, {}, [1, 2, 3])
    await eventually(lambda: _n_states(cluster, "t", 6), "states")
    led_by_3 = [p for p, r in assignment.items() if r[0] == 3]
    assert led_by_3 == [2, 5]
    channel.clear()

    await cluster.kill_broker(3)

    async def offline() -> bool:
        states = await all_states(cluster, "t", 6)
        return all(states[p].leader == -1 for p in led_by_3)

    await eventually(offline, "broker 3's partitions to go offline")
    for p in range(6):
        state = (await all_states(cluster, "t", 6))[p]
        if p in led_by_3:
            # Issue 3: the ISR was the leader alone, so nobody else may lead; the ISR is kept.
            assert state == LeaderIsrState(-1, 1, 1, [3])
        else:
            assert state.leader_epoch == 0
    await wait_until(lambda: len(requests(channel, UpdateMetadataRequest)) == 2, WAIT_S)
    lai = requests(channel, LeaderAndIsrRequest)
    # Partitions 2 ([3, 1]) and 5 ([3, 1]): their live replica, broker 1, gets one request.
    assert sorted(lai) == [1]
    assert sorted(s.partition for s in lai[1][0].partition_states) == [2, 5]
    assert all(s.leader == -1 and s.offline_replicas == [3] for s in lai[1][0].partition_states)
    assert sorted(requests(channel, UpdateMetadataRequest)) == [1, 2]
    channel.clear()

    await cluster.add_broker(3)

    async def back() -> bool:
        states = await all_states(cluster, "t", 6)
        return all(states[p].leader == 3 for p in led_by_3)

    await eventually(back, "broker 3 to lead again")
    assert [(await all_states(cluster, "t", 6))[p].leader_epoch for p in led_by_3] == [2, 2]
    await wait_until(lambda: len(requests(channel, UpdateMetadataRequest)) == 3, WAIT_S)
    lai = requests(channel, LeaderAndIsrRequest)
    # Broker 3 gets all 4 of its replicas in one request; broker 1 hears about 2 and 5.
    assert len(lai[3]) == 1
    assert sorted(s.partition for s in lai[3][0].partition_states) == sorted(
        p for p, r in assignment.items() if 3 in r
    )
    assert sorted(s.partition for s in lai[1][0].partition_states) == [2, 5]
    um = requests(channel, UpdateMetadataRequest)
    assert len(um[3][0].partition_states) == 6  # the full state for the returning broker
    assert [b.node_id for b in um[1][0].live_brokers] == [1, 2, 3]


async def test_replicated_failover_moves_leader_within_isr(cluster: Cluster) -> None:
    # With replication on (issue 4), the ISR starts as all live replicas; a dead leader's
    # partitions move to the next ISR member and the ISR shrinks.
    channel = await start_controller(cluster, [1, 2, 3], replicated=True)
    await topics.create_topic(cluster.admin, "r", 3, 3, {}, [1, 2, 3])
    await eventually(lambda: _n_states(cluster, "r", 3), "states")
    assert (await all_states(cluster, "r", 3))[1] == LeaderIsrState(2, 0, 1, [2, 3, 1])
    channel.clear()
    await cluster.kill_broker(2)

    async def moved() -> bool:
        return (await all_states(cluster, "r", 3))[1].leader == 3

    await eventually(moved, "leadership to move")
    states = await all_states(cluster, "r", 3)
    assert states[1] == LeaderIsrState(3, 1, 1, [3, 1])
    assert states[0] == LeaderIsrState(1, 1, 1, [1, 3])  # follower 2 left the ISR
    await wait_until(lambda: len(requests(channel, UpdateMetadataRequest)) == 2, WAIT_S)
    lai = requests(channel, LeaderAndIsrRequest)
    assert sorted(lai) == [1, 3] and all(len(r) == 1 for r in lai.values())
    assert all(len(r[0].partition_states) == 3 for r in lai.values())


async def test_state_write_is_conditional(cluster: Cluster) -> None:
    await start_controller(cluster, [1, 2])
    await topics.create_topic(cluster.admin, "c", 1, 2, {}, [1, 2], assignment={0: [2, 1]})
    await eventually(lambda: _n_states(cluster, "c", 1), "state")
    path = paths.partition_state_path("c", 0)
    state, version = await cluster.state("c", 0) or (None, -1)
    assert state is not None and version == 0
    # Someone else (an ISR change) writes first: a write at the old version is refused...
    await cluster.admin.set(path, LeaderIsrState(2, 5, 1, [2, 1]).encode(), version)
    with pytest.raises(ZkBadVersion):
        await cluster.admin.set(path, LeaderIsrState(2, 6, 1, [2]).encode(), version)
    # ...and the controller, whose cached version is now stale, re-reads and retries.
    await cluster.kill_broker(2)

    async def moved() -> bool:
        current = await cluster.state("c", 0)
        return current is not None and current[0].leader == 1

    await eventually(moved, "the controller to elect broker 1")
    assert await cluster.state("c", 0) == (LeaderIsrState(1, 6, 1, [1]), 2)


async def test_new_controller_carries_on_from_zookeeper(cluster: Cluster) -> None:
    await start_controller(cluster, [1, 2, 3])
    await cluster.add_elector(2)
    await topics.create_topic(cluster.admin, "k", 3, 1, {}, [1, 2, 3])
    await eventually(lambda: _n_states(cluster, "k", 3), "states")
    before = await all_states(cluster, "k", 3)
    del cluster.electors[1]
    await cluster.kill_broker(1)  # the controller and the leader of partition 0 die

    async def taken_over() -> bool:
        return (
            cluster.electors[2].is_controller
            and (await all_states(cluster, "k", 3))[0].leader == -1
        )

    await eventually(taken_over, "broker 2 to take over")
    after = await all_states(cluster, "k", 3)
    assert after[1:] == before[1:]  # loaded, not recreated
    assert after[0] == LeaderIsrState(-1, 1, 2, [1])
    channel = cluster.channel(2)
    await wait_until(lambda: len(requests(channel, LeaderAndIsrRequest)) == 2, WAIT_S)
    lai = requests(channel, LeaderAndIsrRequest)
    assert all(r[0].controller_epoch == 2 and r[0].controller_id == 2 for r in lai.values())


async def test_isr_change_notifications_are_propagated(cluster: Cluster) -> None:
    channel = await start_controller(cluster, [1, 2, 3], replicated=True)
    await topics.create_topic(cluster.admin, "i", 2, 3, {}, [1, 2, 3])
    await eventually(lambda: _n_states(cluster, "i", 2), "states")
    channel.clear()
    # The leader of partition 0 (broker 1) shrinks its ISR and announces it.
    writer = ZkIsrWriter(cluster.brokers[1], 1, notify_delay_ms=0)
    result = await writer.write_isr("i", 0, 0, 1, [1, 2], zk_version=0)
    assert result.written
    await writer.close()
    await wait_until(lambda: len(requests(channel, UpdateMetadataRequest)) == 3, WAIT_S)
    for reqs in requests(channel, UpdateMetadataRequest).values():
        [state] = reqs[0].partition_states
        assert (state.partition, state.isr, state.zk_version) == (0, [1, 2], 1)

    async def consumed() -> bool:
        return await cluster.admin.get_children(ISR_CHANGE_NOTIFICATION) == []

    await eventually(consumed, "the notification to be deleted")


async def test_unclean_election_is_a_topic_choice(cluster: Cluster) -> None:
    await start_controller(cluster, [2, 1])  # broker 2 is the controller
    unclean = {"unclean.leader.election.enable": "true"}
    await topics.create_topic(cluster.admin, "dirty", 1, 2, unclean, [1, 2])
    await topics.create_topic(cluster.admin, "clean", 1, 2, {}, [1, 2])
    await eventually(lambda: _n_states(cluster, "dirty", 1), "dirty state")
    await eventually(lambda: _n_states(cluster, "clean", 1), "clean state")
    await cluster.kill_broker(1)  # leads both; the ISR of each is [1] (followers hold no data)

    async def settled() -> bool:
        dirty = await all_states(cluster, "dirty", 1)
        clean = await all_states(cluster, "clean", 1)
        return dirty[0].leader_epoch == 1 and clean[0].leader_epoch == 1

    await eventually(settled, "both partitions to be re-elected")
    # Availability first: broker 2 leads though it was not in the ISR...
    assert (await all_states(cluster, "dirty", 1))[0] == LeaderIsrState(2, 1, 1, [2])
    # ...consistency first (the default): offline until broker 1 returns.
    assert (await all_states(cluster, "clean", 1))[0] == LeaderIsrState(-1, 1, 1, [1])


async def test_no_stale_judge_can_delete_the_winners_node_at_any_step_of_its_election(
    cluster: Cluster,
) -> None:
    """A broker that judged the previous controller dead read /controller_epoch before the
    election; its delete (fast_death: conditional on that epoch and on version 0, the version
    of every new /controller) is tried after each of the winner's ZooKeeper calls. It must
    never remove the winner's node: the winner creates it and bumps the epoch in one step."""
    from coordinator.cluster.zk import OpCheck, OpDelete, ZkError

    await bump_controller_epoch(cluster.admin)  # the dead controller's epoch, 1
    _, judged_epoch_version = await cluster.admin.get(paths.CONTROLLER_EPOCH)
    deleted: list[str] = []

    async def stale_delete(after: str) -> None:
        try:
            await cluster.admin.transaction(
                [
                    OpCheck(paths.CONTROLLER_EPOCH, judged_epoch_version),
                    OpDelete(paths.CONTROLLER, 0),
                ]
            )
        except ZkError:
            return
        deleted.append(after)

    zk = await cluster.add_broker(1)
    for name in ("create", "get", "get_with_stat", "set", "transaction"):
        call = getattr(zk, name)

        async def then_stale_delete(
            *args: Any, _call: Any = call, _name: str = name, **kw: Any
        ) -> Any:
            result = await _call(*args, **kw)
            await stale_delete(f"{_name}{args[:1]}")
            return result

        setattr(zk, name, then_stale_delete)
    elector = await cluster.add_elector(1)
    await wait_until(lambda: elector.is_controller, WAIT_S, "broker 1 to be controller")
    assert deleted == []
    assert elector.controller_epoch == 2
    data, _ = await cluster.admin.get(paths.CONTROLLER)
    assert json.loads(data)["brokerid"] == 1
