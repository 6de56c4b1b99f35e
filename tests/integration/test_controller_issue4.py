"""Issue 4's controller work against a real ZooKeeper: replicated ISRs, failover with ISR
shrink, unclean election on/off, controlled shutdown, preferred leader election (by request and
by the automatic rebalance) and reassignment, including a controller failover in the middle.

Brokers are ZooKeeper sessions that register /brokers/ids/<id> (tests/integration/
test_controller.py's `Cluster`); leaders' ISR changes are written as a broker would, with
coordinator/cluster/isr.py's ZkIsrWriter; the controller talks to a RecordingChannel.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from coordinator.cluster import topics
from coordinator.cluster.isr import ZkIsrWriter
from coordinator.cluster.zk_paths import LeaderIsrState, TopicConfig
from coordinator.controller.admin import (
    controlled_shutdown,
    elect_preferred,
    list_reassignments,
    submit_reassignments,
)
from coordinator.controller.elector import Controller, ControllerElector
from coordinator.controller.reassignment import REASSIGN_PARTITIONS
from coordinator.controller.states import ReplicaState
from protocol.api.controller import LeaderAndIsrRequest, StopReplicaRequest
from protocol.errors import (
    ElectionNotNeededError,
    InvalidReplicaAssignmentError,
    PreferredLeaderNotAvailableError,
    UnknownTopicOrPartitionError,
)
from tests.fixtures.zk import wait_until
from tests.integration.test_controller import (
    WAIT_S,
    Cluster,
    eventually,
    requests,
    start_controller,
)

pytestmark = pytest.mark.integration


@pytest.fixture
async def cluster(zk_chroot: str) -> AsyncIterator[Cluster]:
    c = Cluster(zk_chroot)
    await c.admin.start(10)
    yield c
    await c.close()


def active(cluster: Cluster, broker_id: int) -> Controller:
    controller = cluster.electors[broker_id].active_controller
    assert controller is not None
    return controller


async def state_is(cluster: Cluster, topic: str, p: int, leader: int, isr: list[int]) -> bool:
    found = await cluster.state(topic, p)
    return found is not None and (found[0].leader, found[0].isr) == (leader, isr)


async def rejoin_isr(cluster: Cluster, topic: str, p: int, isr: list[int]) -> None:
    """Do what the partition's leader does when a follower caught up: write the ISR, notify."""
    found = await cluster.state(topic, p)
    assert found is not None
    state, version = found
    writer = ZkIsrWriter(cluster.brokers[state.leader], state.leader, notify_delay_ms=1)
    result = await writer.write_isr(
        topic, p, state.leader_epoch, state.controller_epoch, isr, version
    )
    assert result.written
    await writer.close()


# ----- replicated ISR, failover, unclean election --------------------------------------------


async def test_replicated_isr_failover_and_return(cluster: Cluster) -> None:
    channel = await start_controller(cluster, [4, 1, 2, 3], replicated=True)  # 4: controller
    await topics.create_topic(cluster.admin, "r", 1, 3, {}, [1, 2, 3])
    await eventually(lambda: state_is(cluster, "r", 0, 1, [1, 2, 3]), "ISR = all replicas")
    assert sorted(requests(channel, LeaderAndIsrRequest)) == [1, 2, 3]  # followers learn

    await cluster.kill_broker(3)  # a follower dies: it leaves the ISR, the leader stays
    await eventually(lambda: state_is(cluster, "r", 0, 1, [1, 2]), "3 out of the ISR")
    await cluster.kill_broker(1)  # the leader dies: the next ISR member leads, epoch + 1
    await eventually(lambda: state_is(cluster, "r", 0, 2, [2]), "2 leads")
    found = await cluster.state("r", 0)
    assert found is not None and found[0].leader_epoch == 2
    await cluster.add_broker(3)  # back, but not in the ISR: it does not lead
    await cluster.kill_broker(2)  # the last ISR member dies: offline, ISR kept
    await eventually(lambda: state_is(cluster, "r", 0, -1, [2]), "offline")
    await cluster.add_broker(2)  # the ISR member returns: online again
    await eventually(lambda: state_is(cluster, "r", 0, 2, [2]), "2 leads again")


@pytest.mark.parametrize("unclean", ["off", "on", "on later"])
async def test_unclean_election_follows_the_topic_config(cluster: Cluster, unclean: str) -> None:
    await start_controller(cluster, [3, 1, 2], replicated=True)  # 3 is the controller
    configs = {"unclean.leader.election.enable": "true"} if unclean == "on" else {}
    await topics.create_topic(cluster.admin, "u", 1, 2, configs, [1, 2])
    await eventually(lambda: state_is(cluster, "u", 0, 1, [1, 2]), "created")
    await rejoin_isr(cluster, "u", 0, [1])  # 2 fell behind: the leader shrank the ISR
    await cluster.kill_broker(2)
    await cluster.kill_broker(1)
    await eventually(lambda: state_is(cluster, "u", 0, -1, [1]), "offline")
    if unclean == "on later":  # the config changed in ZooKeeper: read at election time
        config = TopicConfig({"unclean.leader.election.enable": "true"}).encode()
        await cluster.admin.set("/config/topics/u", config)
    await cluster.add_broker(2)  # a replica outside the ISR returns
    if unclean != "off":
        await eventually(lambda: state_is(cluster, "u", 0, 2, [2]), "2 leads (unclean)")
        return
    controller = active(cluster, 3)
    await eventually(lambda: _live(controller, 2), "2 seen")
    await controller.wait_idle(WAIT_S)
    assert await state_is(cluster, "u", 0, -1, [1])  # stays offline
    await cluster.add_broker(1)
    await eventually(lambda: state_is(cluster, "u", 0, 1, [1]), "1 leads again")


async def _live(controller: Controller, broker_id: int) -> bool:
    return broker_id in controller.ctx.live


# ----- controlled shutdown -------------------------------------------------------------------


async def test_controlled_shutdown_moves_leaders_and_reports_rf1(cluster: Cluster) -> None:
    channel = await start_controller(cluster, [1, 2, 3], replicated=True)
    await topics.create_topic(cluster.admin, "cs", 3, 3, {}, [1, 2, 3])
    await topics.create_topic(cluster.admin, "single", 3, 1, {}, [1, 2, 3])
    for p in range(3):
        await eventually(lambda p=p: _has_state(cluster, "cs", p), "cs states")
        await eventually(lambda p=p: _has_state(cluster, "single", p), "single states")
    controller = active(cluster, 1)
    await controller.wait_idle(WAIT_S)
    channel.clear()

    remaining = await controller.call(lambda: controlled_shutdown(controller, 2), WAIT_S)
    assert remaining == [("single", 1)]  # RF=1: nobody else can lead it
    for p in range(3):
        found = await cluster.state("cs", p)
        assert found is not None
        assert found[0].leader != 2 and 2 not in found[0].isr
    # cs-1 was led by 2: it moved to the next replica in the ISR, epoch + 1
    assert await state_is(cluster, "cs", 1, 3, [3, 1])
    # broker 2 stops hosting the moved/left partitions and gets no LeaderAndIsr for them
    stops = requests(channel, StopReplicaRequest)[2]
    assert {(r.topic, r.partition) for r in stops[0].partitions} == {
        ("cs", 0), ("cs", 1), ("cs", 2)
    }  # fmt: skip
    assert not stops[0].delete_partitions
    assert 2 not in requests(channel, LeaderAndIsrRequest)
    # while shutting down, 2 is never elected: 3 dies, cs-2's ISR is [3, 1] -> 1 leads
    await cluster.kill_broker(3)
    await eventually(lambda: state_is(cluster, "cs", 2, 1, [1]), "1 leads cs-2")


async def _has_state(cluster: Cluster, topic: str, p: int) -> bool:
    return await cluster.state(topic, p) is not None


# ----- preferred leader election -------------------------------------------------------------


async def test_preferred_election_by_request(cluster: Cluster) -> None:
    await start_controller(cluster, [1, 2, 3], replicated=True)
    await topics.create_topic(cluster.admin, "pe", 2, 2, {}, [2, 3])  # p0 [2, 3], p1 [3, 2]
    await eventually(lambda: state_is(cluster, "pe", 0, 2, [2, 3]), "created")
    await eventually(lambda: state_is(cluster, "pe", 1, 3, [3, 2]), "created")
    await cluster.kill_broker(2)
    await eventually(lambda: state_is(cluster, "pe", 0, 3, [3]), "3 leads p0")
    await cluster.add_broker(2)
    controller = active(cluster, 1)

    results = await controller.call(lambda: elect_preferred(controller, None), WAIT_S)
    assert results[("pe", 0)][0] == PreferredLeaderNotAvailableError.code  # not in ISR yet
    assert results[("pe", 1)][0] == ElectionNotNeededError.code
    await rejoin_isr(cluster, "pe", 0, [3, 2])  # 2 caught up
    await eventually(lambda: _isr_seen(controller, ("pe", 0), [3, 2]), "ISR change seen")
    results = await controller.call(lambda: elect_preferred(controller, [("pe", 0)]), WAIT_S)
    assert results == {("pe", 0): (0, None)}
    assert await state_is(cluster, "pe", 0, 2, [3, 2])
    results = await controller.call(lambda: elect_preferred(controller, [("pe", 7)]), WAIT_S)
    assert results[("pe", 7)][0] == UnknownTopicOrPartitionError.code


async def _isr_seen(controller: Controller, tp: tuple[str, int], isr: list[int]) -> bool:
    entry = controller.ctx.leadership.get(tp)
    return entry is not None and entry[0].isr == isr


async def test_automatic_rebalance_returns_leadership(cluster: Cluster) -> None:
    await start_controller(
        cluster, [1, 2, 3], replicated=True, auto_leader_rebalance_enable=True,
        leader_imbalance_check_interval_s=0.2, leader_imbalance_per_broker_percentage=10,
    )  # fmt: skip
    await topics.create_topic(cluster.admin, "ar", 1, 2, {}, [2, 3])
    await eventually(lambda: state_is(cluster, "ar", 0, 2, [2, 3]), "created")
    await cluster.kill_broker(2)
    await eventually(lambda: state_is(cluster, "ar", 0, 3, [3]), "3 leads")
    await cluster.add_broker(2)
    await rejoin_isr(cluster, "ar", 0, [3, 2])
    await eventually(lambda: state_is(cluster, "ar", 0, 2, [3, 2]), "2 leads again by itself")


# ----- reassignment --------------------------------------------------------------------------


async def test_reassignment_phases_and_controller_failover(cluster: Cluster) -> None:
    channel = await start_controller(cluster, [1, 2, 3, 4], replicated=True)
    await topics.create_topic(cluster.admin, "mv", 1, 3, {}, [1, 2, 3])  # p0 [1, 2, 3]
    await eventually(lambda: state_is(cluster, "mv", 0, 1, [1, 2, 3]), "created")
    controller = active(cluster, 1)
    await controller.wait_idle(WAIT_S)
    channel.clear()

    bad = await controller.call(
        lambda: submit_reassignments(controller, {("mv", 0): [2, 9], ("zz", 0): [1]}), WAIT_S
    )
    assert bad[("mv", 0)][0] == InvalidReplicaAssignmentError.code
    assert bad[("zz", 0)][0] == UnknownTopicOrPartitionError.code
    ok = await controller.call(
        lambda: submit_reassignments(controller, {("mv", 0): [2, 3, 4]}), WAIT_S
    )
    assert ok == {("mv", 0): (0, None)}
    # EXPAND: RS = target + old, epoch bumped, the new replica 4 hears of it and fetches
    raw, _ = await cluster.admin.get("/brokers/topics/mv")
    assert json.loads(raw)["partitions"]["0"] == [2, 3, 4, 1]
    assert await state_is(cluster, "mv", 0, 1, [1, 2, 3])
    lai = requests(channel, LeaderAndIsrRequest)
    assert [s.replicas for s in lai[4][0].partition_states] == [[2, 3, 4, 1]]
    assert list_reassignments(controller, None) == [(("mv", 0), [2, 3, 4, 1], [4], [1])]
    raw, _ = await cluster.admin.get(REASSIGN_PARTITIONS)
    assert json.loads(raw)["partitions"] == [{"topic": "mv", "partition": 0, "replicas": [2, 3, 4]}]

    # the controller fails over while 4 catches up: the next one resumes from ZooKeeper
    second = await cluster.add_elector(2)
    old = cluster.electors.pop(1)
    await old.stop()
    await wait_until(lambda: second.is_controller, WAIT_S, "2 takes over")
    channel2 = cluster.channel(2)
    await rejoin_isr(cluster, "mv", 0, [1, 2, 3, 4])  # leader 1 adds 4 to the ISR
    # ELECT (1 leaves: 2 leads) then SHRINK: assignment [2, 3, 4], 1 deletes its replica
    await eventually(lambda: state_is(cluster, "mv", 0, 2, [2, 3, 4]), "reassigned")
    raw, _ = await cluster.admin.get("/brokers/topics/mv")
    assert json.loads(raw)["partitions"]["0"] == [2, 3, 4]
    assert await cluster.admin.exists(REASSIGN_PARTITIONS) is None
    stops = requests(channel2, StopReplicaRequest)[1]
    assert stops[-1].delete_partitions and stops[-1].partitions[0].partition == 0
    controller2 = active(cluster, 2)
    assert controller2.ctx.replicas(("mv", 0)) == [2, 3, 4]
    assert controller2.ctx.replica_state(("mv", 0), 4) is ReplicaState.ONLINE
    assert list_reassignments(controller2, None) == []
    found = await cluster.state("mv", 0)
    assert found is not None and found[0] == LeaderIsrState(2, found[0].leader_epoch, 2, [2, 3, 4])


async def test_elector_exposes_controller_only_while_controller(cluster: Cluster) -> None:
    await cluster.add_broker(1)
    elector: ControllerElector = await cluster.add_elector(1)
    await wait_until(lambda: elector.is_controller, WAIT_S, "controller")
    assert elector.active_controller is elector.controller
    cluster.electors.pop(1)
    await elector.stop()
    assert elector.active_controller is None
