"""Issue 4's controller decisions as pure functions: controlled shutdown, preferred leader
election, leader imbalance, reassignment phases (no ZooKeeper, no brokers)."""

from __future__ import annotations

import pytest

from coordinator.cluster.zk_paths import ZkDataError
from coordinator.controller.election import (
    after_brokers_died,
    controlled_shutdown_move,
    initial_isr,
    preferred_leader_move,
    preferred_leader_verdict,
    reelect_if_leaderless,
)
from coordinator.controller.preferred import imbalance_ratios, partitions_to_rebalance
from coordinator.controller.reassignment import (
    Phase,
    decode_reassignments,
    elect_in_target,
    encode_reassignments,
    expanded_assignment,
    next_phase,
    removed_replicas,
    shrunk_state,
    validate_target,
)
from coordinator.controller.states import (
    PartitionState,
    ReplicaState,
    can_transition,
)

# ----- replicated ISR and failover --------------------------------------------------------------


def test_replicated_partitions_start_with_every_live_replica_in_the_isr() -> None:
    assert initial_isr([1, 2, 3], {1, 2, 3}, 1, replicated=True) == [1, 2, 3]
    assert initial_isr([1, 2, 3], {1, 3}, 1, replicated=True) == [1, 3]
    assert initial_isr([1, 2, 3], {1, 2, 3}, 1, replicated=False) == [1]


def test_dead_leader_replaced_from_isr_and_dead_follower_leaves_isr() -> None:
    assert after_brokers_died(1, [1, 2, 3], [1, 2, 3], [1], {2, 3}) == (2, [2, 3])
    assert after_brokers_died(1, [1, 2, 3], [1, 2, 3], [3], {1, 2}) == (1, [1, 2])
    assert after_brokers_died(1, [1, 2], [1, 2, 3], [3], {1, 2}) is None  # 3 was not in the ISR


def test_last_isr_member_dying_leaves_partition_offline_unless_unclean() -> None:
    assert after_brokers_died(1, [1], [1, 2], [1], {2}) == (-1, [1])
    assert after_brokers_died(1, [1], [1, 2], [1], {2}, unclean=True) == (2, [2])
    # the ISR member returns: it leads again
    assert reelect_if_leaderless(-1, [1], [1, 2], {1, 2}) == (1, [1])
    # a non-ISR replica returning does not revive it cleanly
    assert reelect_if_leaderless(-1, [1], [1, 2], {2}) == (-1, [1])


# ----- controlled shutdown ------------------------------------------------------------------------


def test_controlled_shutdown_moves_leadership_to_next_isr_member() -> None:
    assert controlled_shutdown_move(1, [1, 2, 3], [1, 2, 3], 1, {2, 3}) == (2, [2, 3])
    # assignment order wins, not ISR order
    assert controlled_shutdown_move(1, [3, 1, 2], [1, 2, 3], 1, {2, 3}) == (2, [3, 2])


def test_controlled_shutdown_skips_members_that_are_not_eligible() -> None:
    # 2 is shutting down too (not eligible): 3 takes over
    assert controlled_shutdown_move(1, [1, 2, 3], [1, 2, 3], 1, {3}) == (3, [2, 3])


def test_controlled_shutdown_keeps_partitions_nobody_else_can_lead() -> None:
    assert controlled_shutdown_move(1, [1], [1], 1, {2, 3}) is None  # RF=1
    assert controlled_shutdown_move(1, [1], [1, 2], 1, {2}) is None  # 2 is out of the ISR


def test_controlled_shutdown_of_a_follower_removes_it_from_the_isr() -> None:
    assert controlled_shutdown_move(2, [2, 1, 3], [1, 2, 3], 1, {2, 3}) == (2, [2, 3])
    assert controlled_shutdown_move(2, [2, 3], [1, 2, 3], 1, {2, 3}) is None  # not in ISR


# ----- preferred leader election --------------------------------------------------------------


def test_preferred_leader_moves_back_when_alive_and_in_isr() -> None:
    assert preferred_leader_move(2, [2, 3, 1], [1, 2, 3], {1, 2, 3}) == (1, [2, 3, 1])
    assert preferred_leader_verdict(2, [2, 3, 1], [1, 2, 3], {1, 2, 3}) == "move"


@pytest.mark.parametrize(
    ("leader", "isr", "eligible", "verdict"),
    [
        (1, [1, 2], {1, 2}, "not_needed"),
        (2, [2, 3], {1, 2, 3}, "not_available"),  # back, but not caught up yet
        (2, [2, 1], {2, 3}, "not_available"),  # dead or shutting down
    ],
)
def test_preferred_leader_verdicts(
    leader: int, isr: list[int], eligible: set[int], verdict: str
) -> None:
    assert preferred_leader_verdict(leader, isr, [1, 2, 3], eligible) == verdict
    assert preferred_leader_move(leader, isr, [1, 2, 3], eligible) is None


def test_imbalance_ratio_per_preferred_broker() -> None:
    replicas = {("t", 0): [1, 2], ("t", 1): [2, 1], ("t", 2): [1, 2], ("t", 3): [2, 1]}
    leaders = {("t", 0): 2, ("t", 1): 2, ("t", 2): 1, ("t", 3): 2}
    assert imbalance_ratios(replicas, leaders) == {1: 0.5, 2: 0.0}
    assert partitions_to_rebalance(replicas, leaders, 10) == [("t", 0)]
    assert partitions_to_rebalance(replicas, leaders, 50) == []  # not above the threshold
    assert partitions_to_rebalance(replicas, leaders, 49) == [("t", 0)]


# ----- reassignment ---------------------------------------------------------------------------


def test_reassignment_znode_round_trip_and_bad_data() -> None:
    targets = {("a", 1): [2, 3, 4], ("a", 0): [4]}
    assert decode_reassignments(encode_reassignments(targets)) == targets
    with pytest.raises(ZkDataError):
        decode_reassignments(b'{"partitions":[{"topic":"a"}]}')


def test_target_validation() -> None:
    assert validate_target([2, 3, 4], {1, 2, 3, 4}) is None
    assert "empty" in (validate_target([], {1}) or "")
    assert "twice" in (validate_target([2, 2], {2}) or "")
    assert "[9]" in (validate_target([2, 9], {2}) or "")


def test_reassignment_walks_through_every_phase() -> None:
    """1,2,3 -> 2,3,4 led by 1: expand, wait for 4, move leadership off 1, drop 1."""
    target = [2, 3, 4]
    live = {1, 2, 3, 4}
    assigned, leader, isr = [1, 2, 3], 1, [1, 2, 3]
    assert next_phase(assigned, target, leader, isr, live) is Phase.EXPAND
    assigned = expanded_assignment(assigned, target)
    assert assigned == [2, 3, 4, 1]
    assert next_phase(assigned, target, leader, isr, live) is Phase.WAIT
    isr = [*isr, 4]  # the leader added the new replica once it caught up
    assert next_phase(assigned, target, leader, isr, live) is Phase.ELECT
    leader, isr = elect_in_target(target, isr, live) or (-1, [])
    assert (leader, isr) == (2, [1, 2, 3, 4])
    assert next_phase(assigned, target, leader, isr, live) is Phase.SHRINK
    assert removed_replicas(assigned, target) == [1]
    leader, isr = shrunk_state(leader, isr, target)
    assigned = list(target)
    assert (leader, isr) == (2, [2, 3, 4])
    assert next_phase(assigned, target, leader, isr, live) is Phase.DONE


def test_reassignment_keeps_a_leader_in_the_target_and_waits_for_a_dead_one() -> None:
    # leader 2 is in the target: no election, straight to shrinking
    assert next_phase([2, 3, 1], [2, 3], 2, [2, 3, 1], {1, 2, 3}) is Phase.SHRINK
    # the only target replica in the ISR is dead: wait
    assert next_phase([4, 1], [4], 1, [1, 4], {1}) is Phase.WAIT
    # reordering only (same replicas): written as the final assignment
    assert next_phase([1, 2], [2, 1], 1, [1, 2], {1, 2}) is Phase.SHRINK


# ----- state tables the reassignment and shutdown rely on ------------------------------------


def test_state_tables_allow_the_issue4_moves() -> None:
    R = ReplicaState
    # a new replica joins; an old one is deleted
    for a, b in [
        (R.NON_EXISTENT, R.NEW),
        (R.NEW, R.ONLINE),
        (R.ONLINE, R.OFFLINE),
        (R.OFFLINE, R.DELETION_STARTED),
        (R.DELETION_STARTED, R.DELETION_SUCCESSFUL),
        (R.DELETION_SUCCESSFUL, R.NON_EXISTENT),
    ]:
        assert can_transition(a, b), (a, b)
    # leadership moves (controlled shutdown, preferred election) keep a partition Online
    assert can_transition(PartitionState.ONLINE, PartitionState.ONLINE)
    assert not can_transition(R.ONLINE, R.DELETION_STARTED)
