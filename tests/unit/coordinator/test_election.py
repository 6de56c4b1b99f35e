"""Leader election decisions (pure)."""

from __future__ import annotations

from coordinator.controller.election import (
    NO_LEADER,
    after_brokers_died,
    choose_leader,
    elect,
    initial_isr,
    reconcile_at_failover,
    reelect_if_leaderless,
    remove_from_isr,
)


def test_first_live_isr_member_in_assignment_order() -> None:
    # ISR order does not matter: assignment order does (preferred leader first).
    assert choose_leader([1, 2, 3], isr=[3, 2], live={2, 3}) == 2
    assert choose_leader([1, 2, 3], isr=[1, 2, 3], live={1, 2, 3}) == 1


def test_live_replica_outside_isr_is_not_chosen_cleanly() -> None:
    assert choose_leader([1, 2, 3], isr=[1], live={2, 3}) is None
    assert choose_leader([1, 2, 3], isr=[1], live={2, 3}, unclean=True) == 2


def test_elect_removes_dead_from_isr() -> None:
    e = elect([1, 2, 3], [1, 2, 3], live={2, 3})
    assert (e.leader, e.isr, e.unclean, e.offline) == (2, [2, 3], False, False)


def test_elect_offline_keeps_isr() -> None:
    e = elect([1, 2], [1], live={2})
    assert e.offline
    assert (e.leader, e.isr) == (-1, [1])


def test_elect_unclean_isr_is_new_leader_only() -> None:
    e = elect([1, 2, 3], [1], live={3}, unclean=True)
    assert (e.leader, e.isr, e.unclean) == (3, [3], True)


def test_elect_unclean_prefers_clean_choice() -> None:
    e = elect([1, 2, 3], [2], live={1, 2}, unclean=True)
    assert (e.leader, e.isr, e.unclean) == (2, [2], False)


def test_elect_returning_isr_member_leads_again() -> None:
    # Offline partition, ISR kept [1]; broker 1 returns.
    assert (elect([1, 2], [1], live={1, 2}).leader) == 1


def test_nobody_live() -> None:
    assert elect([1, 2], [1, 2], live=set(), unclean=True).offline


def test_initial_isr() -> None:
    assert initial_isr([1, 2, 3], {1, 2, 3}, 1, replicated=False) == [1]
    assert initial_isr([1, 2, 3], {1, 3}, 1, replicated=True) == [1, 3]
    assert initial_isr([1, 2], set(), -1, replicated=True) == []


def test_remove_from_isr() -> None:
    assert remove_from_isr(1, [1, 2, 3], 2) == (1, [1, 3])
    assert remove_from_isr(1, [1, 2], 1) == (-1, [2])
    # The last member stays in the ISR so it can lead again when it returns.
    assert remove_from_isr(1, [1], 1) == (-1, [1])


def test_reelect_if_leaderless() -> None:
    assert reelect_if_leaderless(1, [1], [1, 2], live={1, 2}) is None
    assert reelect_if_leaderless(-1, [1], [1, 2], live={1, 2}) == (1, [1])
    assert reelect_if_leaderless(-1, [1], [1, 2], live={2}) == (-1, [1])
    assert reelect_if_leaderless(-1, [1], [1, 2], live={2}, unclean=True) == (2, [2])


def test_after_brokers_died() -> None:
    assert after_brokers_died(1, [1, 2], [1, 2, 3], dead=[3], live={1, 2}) is None
    assert after_brokers_died(1, [1, 2, 3], [1, 2, 3], dead=[2], live={1, 3}) == (1, [1, 3])
    assert after_brokers_died(1, [1, 2, 3], [1, 2, 3], dead=[1], live={2, 3}) == (2, [2, 3])
    assert after_brokers_died(1, [1], [1, 2], dead=[1], live={2}) == (-1, [1])
    assert after_brokers_died(1, [1, 2], [1, 2], dead=[1, 2], live=set()) == (-1, [1, 2])


def test_failover_removes_followers_that_died_while_no_controller_watched() -> None:
    # Broker 2 (the old controller) died; the new controller finds it still in live ISRs.
    assert reconcile_at_failover(1, [1, 2, 3], [1, 2, 3], live={1, 3}) == (1, [1, 3])
    # A leader that died is replaced from the live ISR, as on any broker death.
    assert reconcile_at_failover(2, [2, 3, 1], [2, 3, 1], live={1, 3}) == (3, [3, 1])


def test_failover_leaves_consistent_states_alone() -> None:
    assert reconcile_at_failover(1, [1, 3], [1, 2, 3], live={1, 3}) is None
    # Offline with its last ISR member dead: stays offline, the ISR keeps who may lead again.
    assert reconcile_at_failover(NO_LEADER, [2], [1, 2], live={1}) == (NO_LEADER, [2])
