"""The share partition's in-flight state machine (broker/share/record_states.py) and its
records between SPSO and SPEO (broker/share/share_partition.py), on a manual clock."""

from __future__ import annotations

import random

import pytest

from broker.share.record_states import TRANSITIONS, A, Event, K, Q, RecordState, X, next_state
from broker.share.share_partition import (
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    NO_DEADLINE,
    NONE,
    Acquired,
    ShareLimits,
    SharePartition,
)

LIMITS = ShareLimits(record_lock_duration_ms=1_000, delivery_count_limit=3, max_record_locks=10)


@pytest.mark.parametrize(
    "state, event, count, after",
    [
        (A, Event.ACQUIRE, 0, Q),
        (Q, Event.ACCEPT, 1, K),
        (Q, Event.RELEASE, 1, A),
        (Q, Event.RELEASE, 3, X),  # at the limit: archived, not available
        (Q, Event.REJECT, 1, X),
        (Q, Event.GAP, 1, X),
        (Q, Event.RENEW, 1, Q),
        (Q, Event.LOCK_EXPIRED, 2, A),
        (Q, Event.LOCK_EXPIRED, 3, X),
        (Q, Event.MEMBER_GONE, 1, A),
        (A, Event.ACCEPT, 1, None),  # acknowledging what one does not hold
        (K, Event.ACQUIRE, 1, None),  # terminal
        (X, Event.RELEASE, 1, None),
        (K, Event.ACCEPT, 1, None),
    ],
)
def test_transitions(state: RecordState, event: Event, count: int, after: RecordState) -> None:
    assert next_state(state, event, count, 3) is after


def test_terminal_states_have_no_way_out() -> None:
    assert not [k for k in TRANSITIONS if k[0] in (K, X)]


def fresh(start: int = 100) -> SharePartition:
    return SharePartition(start)


def test_acquire_new_records_in_ranges_and_move_speo() -> None:
    sp = fresh()
    got = sp.acquire("m1", [(100, 104), (106, 107)], 100, LIMITS, now_ms=0)
    assert got == [Acquired(100, 104, 1), Acquired(106, 107, 1)]
    assert (sp.start_offset, sp.end_offset) == (100, 108)
    assert sp.next_fetch_offset() == 108
    # nothing available is acquired twice
    assert sp.acquire("m2", [(100, 107)], 100, LIMITS, now_ms=1) == []


def test_max_records_and_record_locks_bound_acquisition() -> None:
    sp = fresh()
    assert sp.acquire("m1", [(100, 199)], 4, LIMITS, 0) == [Acquired(100, 103, 1)]
    assert sp.end_offset == 104
    got = sp.acquire("m2", [(104, 199)], 100, LIMITS, 0)  # max_record_locks 10 from SPSO
    assert got == [Acquired(104, 109, 1)] and sp.in_flight() == 10
    assert sp.acquire("m3", [(110, 199)], 100, LIMITS, 0) == []


def test_accept_advances_spso_only_over_a_done_front() -> None:
    sp = fresh()
    sp.acquire("m1", [(100, 109)], 100, LIMITS, 0)
    assert sp.acknowledge("m1", 102, 104, [Event.ACCEPT], LIMITS, 0) == NONE
    assert sp.start_offset == 100  # 100 and 101 still acquired
    assert sp.acknowledge("m1", 100, 101, [Event.ACCEPT, Event.REJECT], LIMITS, 0) == NONE
    assert sp.start_offset == 105
    assert all(o >= 105 for o in sp.records)


def test_release_redelivers_with_the_next_delivery_count() -> None:
    sp = fresh()
    sp.acquire("m1", [(100, 101)], 100, LIMITS, 0)
    assert sp.acknowledge("m1", 100, 100, [Event.RELEASE], LIMITS, 0) == NONE
    assert sp.next_fetch_offset() == 100
    assert sp.acquire("m2", [(100, 101)], 100, LIMITS, 0) == [Acquired(100, 100, 2)]


def test_delivery_count_limit_archives() -> None:
    sp = fresh()
    for delivery in (1, 2, 3):
        assert sp.acquire("m1", [(100, 100)], 100, LIMITS, 0) == [Acquired(100, 100, delivery)]
        assert sp.acknowledge("m1", 100, 100, [Event.RELEASE], LIMITS, 0) == NONE
    assert sp.records == {} and sp.start_offset == 101  # archived, so done
    assert sp.archived_at_limit == 1
    assert sp.acquire("m1", [(100, 100)], 100, LIMITS, 0) == []
    # a reject archives too: `archived` counts both (the console shows it), a gap neither
    sp.acquire("m1", [(101, 102)], 100, LIMITS, 0)
    assert sp.acknowledge("m1", 101, 102, [Event.REJECT, Event.GAP], LIMITS, 0) == NONE
    assert (sp.archived, sp.archived_at_limit) == (2, 1)


def test_lock_expiry_makes_records_available_and_renew_holds_them() -> None:
    sp = fresh()
    sp.acquire("m1", [(100, 101)], 100, LIMITS, now_ms=0)
    assert sp.acknowledge("m1", 101, 101, [Event.RENEW], LIMITS, now_ms=900) == NONE
    assert sp.expire(999, LIMITS) == 0
    assert sp.expire(1_000, LIMITS) == 1  # 100's lock passed; 101 renewed until 1900
    assert sp.records[100].state is A and sp.records[101].state is Q
    assert sp.acknowledge("m1", 100, 100, [Event.ACCEPT], LIMITS, 1_000) == INVALID_RECORD_STATE
    assert sp.acquire("m2", [(100, 101)], 100, LIMITS, 1_000) == [Acquired(100, 100, 2)]
    assert sp.expire(1_900, LIMITS) == 1 and sp.records[101].state is A


def test_a_member_acknowledges_only_its_own_records_all_or_nothing() -> None:
    sp = fresh()
    sp.acquire("m1", [(100, 101)], 100, LIMITS, 0)
    sp.acquire("m2", [(102, 103)], 100, LIMITS, 0)
    assert sp.acknowledge("m1", 101, 102, [Event.ACCEPT], LIMITS, 0) == INVALID_RECORD_STATE
    assert sp.records[101].state is Q  # nothing applied
    assert sp.acknowledge("m1", 100, 101, [1, 1, 1], LIMITS, 0) == INVALID_REQUEST
    assert sp.acknowledge("m1", 100, 101, [9], LIMITS, 0) == INVALID_REQUEST
    assert sp.acknowledge("m1", 90, 90, [Event.ACCEPT], LIMITS, 0) == INVALID_RECORD_STATE


def test_gaps_are_done_and_may_be_acknowledged_as_gaps() -> None:
    sp = fresh()
    sp.acquire("m1", [(100, 100), (103, 103)], 100, LIMITS, 0)  # 101-102: a control batch
    assert sp.acknowledge("m1", 100, 103, [1, 0, 0, 1], LIMITS, 0) == NONE
    assert (sp.start_offset, sp.records) == (104, {})


def test_a_member_leaving_releases_what_it_holds() -> None:
    sp = fresh()
    sp.acquire("m1", [(100, 101)], 100, LIMITS, 0)
    sp.acquire("m2", [(102, 102)], 100, LIMITS, 0)
    assert sp.release_member("m1", LIMITS) == 2
    assert [sp.records[o].state for o in (100, 101, 102)] == [A, A, Q]
    assert sp.next_fetch_offset() == 100


def test_offsets_without_records_at_the_end_are_passed_over_once() -> None:
    sp = fresh()
    # 100-101 data, 102 a transaction marker: SPEO moves past the marker
    assert sp.acquire("m1", [(100, 101)], 100, LIMITS, 0, scanned_to=103) == [Acquired(100, 101, 1)]
    assert sp.end_offset == 103 and sp.next_fetch_offset() == 103
    # only a marker read: nothing acquired, SPSO and SPEO pass it (nothing in flight before)
    sp2 = fresh()
    assert sp2.acquire("m1", [], 100, LIMITS, 0, scanned_to=101) == []
    assert (sp2.start_offset, sp2.end_offset) == (101, 101)
    # cut short by max_records: SPEO stays at the last acquired offset + 1
    sp3 = fresh()
    sp3.acquire("m1", [(100, 109)], 3, LIMITS, 0, scanned_to=110)
    assert sp3.end_offset == 103


def test_can_acquire_at_the_record_locks_bound_only_what_is_available() -> None:
    sp = fresh()
    sp.acquire("m1", [(100, 109)], 100, LIMITS, 0)
    assert not sp.can_acquire(LIMITS)
    sp.acknowledge("m1", 105, 105, [Event.RELEASE], LIMITS, 0)
    assert sp.can_acquire(LIMITS)
    sp.acknowledge("m1", 100, 100, [Event.ACCEPT], LIMITS, 0)
    assert sp.start_offset == 101 and sp.can_acquire(LIMITS)


def test_the_indexes_agree_with_the_records_whatever_happens() -> None:
    """`available` and `deadline_floor` (the indexes that spare a scan of the window) against
    the records themselves, after every step of a long random run of fetches,
    acknowledgements, expiries and departures."""
    rng = random.Random(35)
    limits = ShareLimits(record_lock_duration_ms=50, delivery_count_limit=4, max_record_locks=40)
    sp, now, log_end = SharePartition(0), 0, 0
    for _ in range(3_000):
        now += rng.randrange(0, 20)
        step = rng.randrange(5)
        if step == 0:
            log_end += rng.randrange(0, 8)
            start = sp.next_fetch_offset()
            batches = [(o, o) for o in range(start, log_end)]
            sp.acquire(rng.choice("ab"), batches, rng.randrange(1, 12), limits, now, log_end)
        elif step in (1, 2) and sp.records:
            offset = rng.choice(list(sp.records))
            entry = sp.records[offset]
            member = entry.member_id or "a"
            sp.acknowledge(member, offset, offset, [rng.choice([1, 1, 2, 3, 4])], limits, now)
        elif step == 3:
            sp.expire(now, limits)
        else:
            sp.release_member(rng.choice("ab"), limits)
        assert sp.available == {o for o, e in sp.records.items() if e.state is A}
        held = [e.lock_deadline_ms for e in sp.records.values() if e.state is Q]
        assert sp.deadline_floor <= min(held, default=NO_DEADLINE)
        assert sp.next_fetch_offset() == min(sp.available, default=sp.end_offset)
    # what a lock's end finds: exactly the locks that passed, and the floor exact after it
    sp.expire(now, limits)
    held = [e.lock_deadline_ms for e in sp.records.values() if e.state is Q]
    assert sp.deadline_floor == min(held, default=NO_DEADLINE)


def test_a_fetch_before_the_earliest_lock_looks_at_no_record() -> None:
    sp = SharePartition(100)
    sp.acquire("a", [(100, 109)], 10, LIMITS, now_ms=1_000)
    assert sp.deadline_floor == 2_000
    sp.records.clear()  # were the records looked at, expire would find none of them
    assert sp.expire(1_999, LIMITS) == 0 and sp.deadline_floor == 2_000
    assert sp.expire(2_000, LIMITS) == 0 and sp.deadline_floor == NO_DEADLINE
