"""The controller's in-memory view: broker diffs and state-machine bookkeeping."""

from __future__ import annotations

import pytest

from coordinator.cluster.zk_paths import BrokerRegistration, LeaderIsrState
from coordinator.controller.context import ControllerContext, LiveBroker, diff_brokers
from coordinator.controller.states import IllegalStateTransition, PartitionState, ReplicaState


def test_diff_brokers() -> None:
    assert diff_brokers({1: 10, 2: 20}, {1: 10, 2: 20}) == ([], [])
    assert diff_brokers({1: 10, 2: 20}, {1: 10}) == ([2], [])
    assert diff_brokers({1: 10}, {1: 10, 3: 30}) == ([], [3])
    # Broker 2 bounced: same id, new registration.
    assert diff_brokers({1: 10, 2: 20}, {1: 10, 2: 25}) == ([2], [2])


def ctx_with_topic() -> ControllerContext:
    ctx = ControllerContext(epoch=3, epoch_zk_version=2)
    for b in (1, 2):
        ctx.live[b] = LiveBroker(b, BrokerRegistration("h", 9000 + b, 0), czxid=b)
    ctx.add_topic("t", {0: [1, 2], 1: [2, 3]}, unclean=False)
    return ctx


def test_topic_partitions_start_new_and_follow_leadership() -> None:
    ctx = ctx_with_topic()
    assert ctx.partition_state(("t", 0)) is PartitionState.NEW
    assert ctx.replica_state(("t", 1), 3) is ReplicaState.NEW
    ctx.set_leadership(("t", 0), LeaderIsrState(1, 0, 3, [1]), 0)
    assert ctx.partition_state(("t", 0)) is PartitionState.ONLINE
    ctx.set_leadership(("t", 0), LeaderIsrState(-1, 1, 3, [1]), 1)
    assert ctx.partition_state(("t", 0)) is PartitionState.OFFLINE
    # A state naming a leader that is not live is Offline too.
    ctx.set_leadership(("t", 1), LeaderIsrState(3, 0, 3, [3]), 0)
    assert ctx.partition_state(("t", 1)) is PartitionState.OFFLINE
    assert ctx.partitions_on(1) == [("t", 0)]


def test_messages() -> None:
    ctx = ctx_with_topic()
    ctx.set_leadership(("t", 1), LeaderIsrState(2, 4, 3, [2]), 7)
    msg = ctx.partition_state_msg(("t", 1), is_new=True)
    assert (msg.leader, msg.leader_epoch, msg.zk_version, msg.isr) == (2, 4, 7, [2])
    assert (msg.replicas, msg.offline_replicas, msg.is_new) == ([2, 3], [3], True)
    assert [b.node_id for b in ctx.broker_infos()] == [1, 2]


def test_illegal_moves_are_refused() -> None:
    ctx = ctx_with_topic()
    with pytest.raises(IllegalStateTransition):
        ctx.move_partition(("t", 0), PartitionState.NON_EXISTENT)  # New -> NonExistent
    with pytest.raises(IllegalStateTransition):
        ctx.move_replica(("t", 0), 1, ReplicaState.DELETION_STARTED)  # New -> DeletionStarted


def test_remove_topic_forgets_everything() -> None:
    ctx = ctx_with_topic()
    ctx.set_leadership(("t", 0), LeaderIsrState(1, 0, 3, [1]), 0)
    ctx.deleting.add("t")
    ctx.remove_topic("t")
    assert ctx.partitions() == []
    assert ctx.leadership == {} and ctx.replica_states == {} and ctx.deleting == set()
