"""Replication's pure decisions: follower lag, ISR shrink/expand, acks=all, truncation."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.delayed_produce import DelayedProduce, ProduceWaiters
from broker.log.epoch import LeaderEpochCache
from broker.replication_decisions import (
    FollowerState,
    check_enough_replicas,
    expanded_isr,
    follower_high_watermark,
    isr_write_verdict,
    may_join_isr,
    not_enough_replicas_message,
    out_of_range_restart,
    out_of_sync_replicas,
    produce_outcome,
    record_fetch,
    shrunk_isr,
    truncation_step,
)
from coordinator.cluster.isr import IsrWriteResult
from protocol.errors import (
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    RequestTimedOutError,
)

LAG_MS = 10_000


def test_fetch_at_leader_leo_counts_as_caught_up() -> None:
    s = FollowerState()
    record_fetch(s, fetch_offset=10, leader_leo=10, now_ms=5_000)
    assert (s.log_end_offset, s.last_caught_up_ms) == (10, 5_000)


def test_fetch_behind_leo_but_at_previous_leo_caught_up_at_previous_fetch() -> None:
    s = FollowerState()
    record_fetch(s, fetch_offset=10, leader_leo=10, now_ms=1_000)
    record_fetch(s, fetch_offset=10, leader_leo=20, now_ms=2_000)  # leader appended meanwhile
    assert s.last_caught_up_ms == 2_000 - 1_000  # still the first fetch's time
    record_fetch(s, fetch_offset=20, leader_leo=30, now_ms=3_000)  # reached LEO seen at 2_000
    assert s.last_caught_up_ms == 2_000


def test_a_slow_follower_under_constant_load_falls_out() -> None:
    s = FollowerState(last_caught_up_ms=0)
    for t in range(1, 30):  # always 5 behind the LEO the previous fetch saw
        record_fetch(s, fetch_offset=t * 10 - 15, leader_leo=t * 10, now_ms=t * 1_000)
    assert out_of_sync_replicas(1, [1, 2], {2: s}, 29_000, LAG_MS) == [2]


def test_out_of_sync_by_lag_time_never_the_leader() -> None:
    followers = {2: FollowerState(last_caught_up_ms=0), 3: FollowerState(last_caught_up_ms=5_000)}
    assert out_of_sync_replicas(1, [1, 2, 3], followers, LAG_MS, LAG_MS) == []
    assert out_of_sync_replicas(1, [1, 2, 3], followers, LAG_MS + 1, LAG_MS) == [2]
    assert out_of_sync_replicas(1, [1, 2, 3], followers, 99_999, LAG_MS) == [2, 3]
    assert out_of_sync_replicas(1, [1, 4], {}, 0, LAG_MS) == [4]  # never fetched, not tracked


def test_join_isr_needs_hw_and_epoch_start() -> None:
    assert may_join_isr(follower_leo=10, high_watermark=10, leader_epoch_start_offset=5)
    assert not may_join_isr(follower_leo=9, high_watermark=10, leader_epoch_start_offset=5)
    assert not may_join_isr(follower_leo=10, high_watermark=8, leader_epoch_start_offset=12)
    assert not may_join_isr(follower_leo=-1, high_watermark=0, leader_epoch_start_offset=0)


def test_isr_edits_and_follower_hw() -> None:
    assert shrunk_isr([1, 2, 3], [2]) == [1, 3]
    assert expanded_isr([3, 1], 2) == [3, 1, 2]
    assert expanded_isr([3, 1], 1) == [3, 1]
    assert follower_high_watermark(leader_hw=10, own_leo=7) == 7
    assert follower_high_watermark(leader_hw=5, own_leo=7) == 5


def test_acks_all_checks() -> None:
    assert check_enough_replicas(isr_size=1, min_insync_replicas=2) == NotEnoughReplicasError.code
    assert check_enough_replicas(isr_size=2, min_insync_replicas=2) == 0
    assert (
        produce_outcome(high_watermark=9, required_offset=10, isr_size=3, min_insync_replicas=2)
        is None
    )
    assert produce_outcome(10, 10, 3, 2) == 0
    assert produce_outcome(12, 10, 1, 2) == NotEnoughReplicasAfterAppendError.code


def test_a_minimum_above_the_replication_factor_is_named_in_the_refusal() -> None:
    assert not_enough_replicas_message("t-0", [3], 2, 2) == (
        "t-0: ISR [3] is below min.insync.replicas 2"
    )
    assert not_enough_replicas_message("t-0", [1, 2, 3], 5, 3) == (
        "t-0: ISR [1, 2, 3] is below min.insync.replicas 5, more than its 3 replica(s): "
        "no write with acks=all can succeed"
    )


def test_isr_write_verdicts() -> None:
    assert isr_write_verdict(IsrWriteResult(True, 3, 1, 5, [1]), 1, 5) == "apply"
    assert isr_write_verdict(IsrWriteResult(False, 4, 2, 6, [2]), 1, 5) == "resign"
    assert isr_write_verdict(IsrWriteResult(False, 4, 1, 6, [1]), 1, 5) == "resign"
    assert isr_write_verdict(IsrWriteResult(False, 4, 1, 5, [1, 3]), 1, 5) == "adopt"


def test_out_of_range_restart() -> None:
    assert out_of_range_restart(fetch_offset=50, leader_log_start=0, leader_leo=40) == (
        "truncate",
        40,
    )
    assert out_of_range_restart(fetch_offset=5, leader_log_start=100, leader_leo=140) == (
        "restart",
        100,
    )


# ----- delayed produce ----------------------------------------------------------------------


async def test_produce_waiters_complete_in_offset_order() -> None:
    q = ProduceWaiters(("t", 0))
    a, b = DelayedProduce(), DelayedProduce()
    q.add(10, a)
    q.add(20, b)
    q.on_high_watermark(15, isr_size=2, min_insync=2)
    assert a.future.done() and a.results == {("t", 0): 0}
    assert not b.future.done() and len(q) == 1
    q.on_high_watermark(20, isr_size=1, min_insync=2)  # the ISR shrank meanwhile
    assert b.results == {("t", 0): NotEnoughReplicasAfterAppendError.code}


async def test_produce_waiters_fail_all_and_timeout() -> None:
    q = ProduceWaiters(("t", 0))
    a = DelayedProduce()
    q.add(10, a)
    q.fail_all(NotLeaderForPartitionError.code)
    assert a.results == {("t", 0): NotLeaderForPartitionError.code}
    b = DelayedProduce()
    q.add(10, b)
    results = await b.wait(timeout_ms=10)
    assert results == {("t", 0): RequestTimedOutError.code}


# ----- truncation (KIP-101 / KIP-279) -------------------------------------------------------


def _cache(directory: Path, name: str, epochs: list[int]) -> LeaderEpochCache:
    """The epoch cache of a log whose offset i holds a batch of epoch epochs[i]."""
    cache = LeaderEpochCache(directory / name)
    for offset, epoch in enumerate(epochs):
        cache.assign(epoch, offset)
    return cache


def _truncate(leader: list[int], follower: list[int]) -> int:
    """Run the follower's loop against the leader; the follower's log end afterwards."""
    with tempfile.TemporaryDirectory() as d:
        lc = _cache(Path(d), "leader", leader)
        lc.assign(max(leader + follower, default=0) + 1, len(leader))  # as become_leader does
        fc = _cache(Path(d), "follower", follower)
        leo = len(follower)
        for _ in range(len(follower) + 2):
            asked = fc.latest_epoch
            if asked is None:
                return min(leo, len(leader))
            answer_epoch, answer_end = lc.end_offset_for(asked, len(leader))
            step = truncation_step(
                leo, answer_epoch, answer_end, fc.end_offset_for(answer_epoch, leo)
            )
            if step.offset < leo:
                leo = step.offset
                fc.truncate_from_end(leo)
            if step.done:
                # then fetching: an offset past the leader's end is cut to it (out of range)
                action, offset = out_of_range_restart(leo, 0, len(leader))
                return offset if leo > len(leader) and action == "truncate" else leo
        raise AssertionError("the truncation loop did not end")


def test_kip101_scenario_1_follower_keeps_what_the_leader_has() -> None:
    # the follower restarted with HW 0 but both have m1, m2 of epoch 0: nothing is cut
    assert _truncate(leader=[0, 0], follower=[0, 0]) == 2


def test_kip101_scenario_2_divergent_tails_are_cut_at_the_epoch_boundary() -> None:
    # old leader wrote m2 at offset 1 (epoch 0, unreplicated); the new leader wrote m3 there
    # in epoch 1: the old leader truncates to 1 and then fetches m3
    assert _truncate(leader=[0, 1], follower=[0, 0]) == 1


def test_kip279_follower_without_the_answered_epoch_walks_back() -> None:
    # the follower led epoch 2 alone; the leader has epoch 1 that the follower never saw
    assert _truncate(leader=[0, 0, 1, 1, 3], follower=[0, 0, 2, 2]) == 2


def test_kip279_answered_epoch_shared_cut_at_the_smaller_end() -> None:
    assert _truncate(leader=[0, 0, 1, 3, 3, 3], follower=[0, 0, 1, 1, 2]) == 3


def test_leader_without_epochs_keeps_the_follower_log() -> None:
    assert truncation_step(5, -1, -1, (-1, -1)).offset == 5


@st.composite
def _divergent_logs(draw: st.DrawFn) -> tuple[list[int], list[int], int]:
    """A common prefix, then tails written by different leaderships (epochs never shared)."""
    prefix_epochs = sorted(draw(st.lists(st.integers(0, 5), max_size=4)))
    prefix = [e for e in prefix_epochs for _ in range(draw(st.integers(1, 3)))]
    top = prefix[-1] if prefix else 0
    new = draw(st.lists(st.integers(top + 1, top + 12), unique=True, max_size=5))
    sides = [draw(st.booleans()) for _ in new]
    leader_new = sorted(e for e, s in zip(new, sides, strict=True) if s)
    follower_new = sorted(e for e, s in zip(new, sides, strict=True) if not s)
    if follower_new and leader_new and max(follower_new) > max(leader_new):
        leader_new, follower_new = follower_new, leader_new  # the leader holds the newest epoch
    continues = draw(st.sampled_from(["leader", "follower", "none"])) if prefix else "none"
    leader = prefix + ([top] * draw(st.integers(1, 2)) if continues == "leader" else [])
    follower = prefix + ([top] * draw(st.integers(1, 2)) if continues == "follower" else [])
    leader += [e for e in leader_new for _ in range(draw(st.integers(1, 3)))]
    follower += [e for e in follower_new for _ in range(draw(st.integers(1, 3)))]
    return leader, follower, len(prefix)


@settings(max_examples=100, deadline=None)
@given(_divergent_logs())
def test_truncation_ends_exactly_at_the_common_prefix(
    case: tuple[list[int], list[int], int],
) -> None:
    leader, follower, common = case
    end = _truncate(leader, follower)
    assert follower[:end] == leader[:end]  # no divergence left
    assert end == common  # and nothing they share is cut
