"""The share partition's in-flight records as batches (broker/share/share_partition.py,
Kafka's InFlightBatch): records acquired together are one batch, split only where one offset's
state diverges from its neighbours', merged again once they agree; a whole batch expires, is
given back or hits the delivery count limit in one step. Pure, on a manual clock."""

from __future__ import annotations

import itertools
import random

from broker.share.record_states import A, Event, K, Q, RecordState, X
from broker.share.share_partition import (
    INVALID_RECORD_STATE,
    NONE,
    Acquired,
    ShareLimits,
    SharePartition,
    from_state,
    state_batches,
)

LIMITS = ShareLimits(record_lock_duration_ms=1_000, delivery_count_limit=3, max_record_locks=2_000)


def shape(sp: SharePartition) -> list[tuple[int, int, RecordState, int, str | None]]:
    return [(b.first, b.last, b.state, b.delivery_count, b.member_id) for b in sp.batches]


def test_records_acquired_together_are_one_batch_and_accepted_as_one() -> None:
    sp = SharePartition(0)
    # three log batches read at once: one in-flight batch of 500 offsets
    got = sp.acquire("m", [(0, 199), (200, 399), (400, 499)], 500, LIMITS, 0)
    assert got == [Acquired(0, 499, 1)]
    assert shape(sp) == [(0, 499, Q, 1, "m")]
    assert sp.acknowledge("m", 0, 499, [Event.ACCEPT], LIMITS, 0) == NONE
    assert sp.batches == [] and (sp.start_offset, sp.end_offset) == (500, 500)


def test_one_offset_diverging_splits_its_batch_and_agreeing_again_merges_it() -> None:
    sp = SharePartition(0)
    sp.acquire("m", [(0, 9)], 10, LIMITS, 0)
    assert sp.acknowledge("m", 4, 4, [Event.RENEW], LIMITS, 500) == NONE  # lock until 1500
    assert [(b.first, b.last, b.lock_deadline_ms) for b in sp.batches] == [
        (0, 3, 1_000), (4, 4, 1_500), (5, 9, 1_000)]  # fmt: skip
    assert sp.acknowledge("m", 5, 9, [Event.RENEW], LIMITS, 500) == NONE
    assert [(b.first, b.last, b.lock_deadline_ms) for b in sp.batches] == [
        (0, 3, 1_000), (4, 9, 1_500)]  # fmt: skip
    # per-offset types: one batch per run of equal types
    assert sp.acknowledge("m", 0, 3, [2, 2, 3, 3], LIMITS, 600) == NONE  # release, reject
    assert shape(sp) == [(0, 1, A, 1, None), (2, 3, X, 1, None), (4, 9, Q, 1, "m")]
    # the released ones, acquired again, are one batch with count 2
    assert sp.acquire("n", [(0, 9)], 10, LIMITS, 700) == [Acquired(0, 1, 2)]
    assert shape(sp)[0] == (0, 1, Q, 2, "n")


def test_a_refused_acknowledgement_leaves_the_batches_as_they_were() -> None:
    sp = SharePartition(0)
    sp.acquire("m", [(0, 4)], 10, LIMITS, 0)
    sp.acquire("n", [(5, 9)], 10, LIMITS, 0)
    before = shape(sp)
    assert sp.acknowledge("m", 3, 6, [Event.ACCEPT], LIMITS, 0) == INVALID_RECORD_STATE
    assert sp.acknowledge("m", 2, 5, [2, 1, 3, 1], LIMITS, 0) == INVALID_RECORD_STATE  # 5: n's
    assert shape(sp) == before


def test_a_whole_batch_expires_at_once_and_hits_the_limit_at_once() -> None:
    sp = SharePartition(0)
    for delivery in (1, 2, 3):
        now = (delivery - 1) * 1_000
        assert sp.acquire("m", [(0, 299)], 500, LIMITS, now) == [Acquired(0, 299, delivery)]
        assert len(sp.batches) == 1
        assert sp.expire(now + 999, LIMITS) == 0
        assert sp.expire(now + 1_000, LIMITS) == 300
    # the third expiry reached the limit: all 300 archived, and done
    assert (sp.archived_at_limit, sp.archived, sp.batches) == (300, 300, [])
    assert (sp.start_offset, sp.next_fetch_offset()) == (300, 300)


def test_expiry_of_part_of_the_window_leaves_the_rest_and_merges_what_agrees() -> None:
    sp = SharePartition(0)
    sp.acquire("m", [(0, 4)], 10, LIMITS, 0)  # lock until 1000
    sp.acquire("m", [(5, 9)], 10, LIMITS, 500)  # lock until 1500: another batch
    assert sp.acknowledge("m", 2, 2, [Event.RELEASE], LIMITS, 600) == NONE
    assert sp.expire(1_000, LIMITS) == 4
    # 0-4 are all Available with count 1 again: one batch; 5-9 still held
    assert shape(sp) == [(0, 4, A, 1, None), (5, 9, Q, 1, "m")]
    assert sp.deadline_floor == 1_500 and sp.next_fetch_offset() == 0
    assert sp.release_member("m", LIMITS) == 5
    assert shape(sp) == [(0, 9, A, 1, None)]


def test_the_record_locks_limit_cuts_a_batch() -> None:
    limits = ShareLimits(record_lock_duration_ms=1_000, delivery_count_limit=3,
                         max_record_locks=250)  # fmt: skip
    sp = SharePartition(0)
    assert sp.acquire("m", [(0, 499)], 500, limits, 0, scanned_to=500) == [Acquired(0, 249, 1)]
    assert sp.end_offset == 250 and not sp.can_acquire(limits)
    assert sp.acknowledge("m", 0, 99, [Event.ACCEPT], limits, 0) == NONE
    assert sp.acquire("n", [(250, 499)], 500, limits, 0) == [Acquired(250, 349, 1)]
    assert shape(sp) == [(100, 249, Q, 1, "m"), (250, 349, Q, 1, "n")]


def test_gaps_between_batches_are_done_and_persisted_as_archived() -> None:
    sp = SharePartition(0)
    sp.acquire("m", [(0, 3), (6, 9)], 100, LIMITS, 0, scanned_to=12)  # 4-5, 10-11: markers
    assert [(b.first, b.last) for b in sp.batches] == [(0, 3), (6, 9)]
    assert sp.end_offset == 12
    assert state_batches(sp) == ([(0, 3, 0, 1), (4, 5, 4, 0), (6, 9, 0, 1), (10, 11, 4, 0)], 4)
    assert sp.acknowledge("m", 0, 7, [Event.ACCEPT], LIMITS, 0) == INVALID_RECORD_STATE
    assert sp.acknowledge("m", 0, 7, [1, 1, 1, 1, 0, 0, 1, 1], LIMITS, 0) == NONE
    assert (sp.start_offset, shape(sp)) == (8, [(8, 9, Q, 1, "m")])


def test_a_loaded_state_is_batches_as_persisted() -> None:
    sp = from_state(10, [(5, 12, 2, 1), (13, 20, 0, 2), (21, 30, 0, 2), (31, 31, 4, 3),
                         (32, 40, 0, 1)])  # fmt: skip
    assert sp.start_offset == 13 and sp.end_offset == 41
    assert shape(sp) == [(13, 30, A, 2, None), (31, 31, X, 3, None), (32, 40, A, 1, None)]
    assert sp.available_count == 27 and sp.next_fetch_offset() == 13
    assert sp.acquire("m", [(13, 40)], 100, LIMITS, 0) == [Acquired(13, 30, 3),
                                                           Acquired(32, 40, 2)]  # fmt: skip


def test_batches_match_a_per_offset_model_whatever_happens() -> None:
    """Against a plain offset -> (state, count, member, deadline) model of the same steps, with
    acknowledgements of random ranges and per-offset types: the same answers and states,
    batches sorted, disjoint and never two adjacent ones in the same state."""
    rng = random.Random(1935)
    limits = ShareLimits(record_lock_duration_ms=40, delivery_count_limit=3, max_record_locks=60)
    sp, now, log_end = SharePartition(0), 0, 0
    answered = {True: 0, False: 0}
    for _ in range(4_000):
        now += rng.randrange(0, 15)
        step = rng.randrange(6)
        model = dict(sp.records.items())
        if step == 0:
            log_end += rng.randrange(0, 30)
            start = sp.next_fetch_offset()
            cuts = sorted(rng.sample(range(start, log_end + 1), min(3, log_end - start)))
            bounds = [start, *cuts, log_end]
            batches = [(a, b - 1) for a, b in itertools.pairwise(bounds) if b > a]
            member = rng.choice("ab")
            got = sp.acquire(member, batches, rng.randrange(1, 40), limits, now, log_end)
            for a in got:
                for o in range(a.first_offset, a.last_offset + 1):
                    before = model.get(o)
                    assert before is None or before.state is A
                    assert a.delivery_count == (0 if before is None else before.delivery_count) + 1
                    assert sp.records[o].state is Q and sp.records[o].member_id == member
        elif step in (1, 2, 3) and model:
            first = rng.choice(list(model))
            last = first + rng.randrange(0, 8)
            member = model[first].member_id or "a"
            n = last - first + 1
            types = (
                [rng.choice([1, 1, 2, 3, 4, 0])]
                if rng.random() < 0.5
                else [rng.choice([1, 2, 0]) for _ in range(n)]
            )
            allowed = all(
                (model[o].state is Q and model[o].member_id == member) if o in model
                else (t == 0 and sp.start_offset <= o < sp.end_offset)
                for o, t in zip(range(first, last + 1), types * n if len(types) == 1 else types,
                                strict=False)
            )  # fmt: skip
            code = sp.acknowledge(member, first, last, types, limits, now)
            assert (code == NONE) == allowed
            answered[allowed] += 1
            if not allowed:
                assert dict(sp.records.items()) == model
        elif step == 4:
            sp.expire(now, limits)
        else:
            sp.release_member(rng.choice("ab"), limits)
        for b, c in itertools.pairwise(sp.batches):
            assert b.first <= b.last < c.first
            assert b.last + 1 < c.first or not b.same(c)
        if sp.batches:
            assert sp.start_offset <= sp.batches[0].first and sp.batches[-1].last < sp.end_offset
            assert sp.batches[0].state not in (K, X)
        assert sp.available_count == len(sp.available)
        assert sp.next_fetch_offset() == min(sp.available, default=sp.end_offset)
    assert min(answered.values()) > 200  # both kinds of acknowledgement were tried often
