"""Fetch sessions (KIP-227) as pure logic: the leader's cache and contexts
(broker/fetch_session.py) and the follower's request builder (broker/fetch_session_handler.py)."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass

import pytest

from broker.fetch_session import MAX_EPOCH, FetchSessionCache, next_epoch
from broker.fetch_session_handler import MIN_SESSION_PARTITIONS, FetchSessionHandler
from protocol.api.fetch import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    NO_SESSION,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
)
from protocol.errors import FetchSessionIdNotFoundError, InvalidFetchSessionEpochError

FOLLOWER = 2


@dataclass
class Read:
    topic: str
    partition: int
    error_code: int = 0
    high_watermark: int = 0
    log_start_offset: int = 0
    size_bytes: int = 0


def fp(partition: int, offset: int = 0) -> FetchPartition:
    return FetchPartition(partition, offset, 1 << 20, 3, 0)


def request(
    parts: dict[int, int],
    session_id: int = NO_SESSION,
    epoch: int = INITIAL_EPOCH,
    forgotten: list[int] | None = None,
) -> FetchRequest:
    topics = [FetchTopic("t", [fp(p, o) for p, o in parts.items()])] if parts else []
    gone = [ForgottenTopic("t", forgotten)] if forgotten else []
    return FetchRequest(FOLLOWER, 500, 1, 10 << 20, topics, session_id, epoch, gone)


def keys(context_parts: object) -> list[int]:
    return [part.partition for _, part in context_parts]  # type: ignore[attr-defined]


def opened(cache: FetchSessionCache, n: int = 3) -> int:
    """A session over partitions 0..n-1, its first (full) answer given; its id."""
    ctx = cache.context(request(dict.fromkeys(range(n), 0)), now_ms=0)
    assert ctx.session is not None and ctx.session_id != NO_SESSION
    ctx.answer([Read("t", p) for p in range(n)])
    return ctx.session_id


def test_an_initial_request_opens_a_session_and_gets_a_full_answer() -> None:
    cache = FetchSessionCache(rng=random.Random(1))
    ctx = cache.context(request({0: 5, 1: 7}), now_ms=0)
    assert ctx.session is not None and ctx.session.epoch == 1 and not ctx.incremental
    assert keys(ctx.parts) == [0, 1]
    reads = [Read("t", 0), Read("t", 1)]
    assert ctx.answer(reads) == reads  # all of them, changed or not
    assert len(cache) == 1


def test_an_incremental_request_reads_the_whole_session_and_answers_only_what_changed() -> None:
    cache = FetchSessionCache()
    sid = opened(cache, 4)
    ctx = cache.context(request({2: 10}, sid, epoch=1), now_ms=1)
    assert ctx.incremental
    assert keys(ctx.parts) == [0, 1, 2, 3]  # the session's partitions, not only the request's
    assert ctx.parts[2][1].fetch_offset == 10  # the request replaced partition 2's position
    reads = [
        Read("t", 0),  # nothing new: left out
        Read("t", 1, high_watermark=4),  # a new high watermark
        Read("t", 2, size_bytes=100),  # records
        Read("t", 3, error_code=6),  # an error
    ]
    assert [r.partition for r in ctx.answer(reads)] == [1, 2, 3]
    ctx = cache.context(request({}, sid, epoch=2), now_ms=2)
    # partition 2 answered with records goes last; 1's new HW was told and is not told again
    assert keys(ctx.parts) == [0, 1, 3, 2]
    again = [Read("t", 0), Read("t", 1, high_watermark=4), Read("t", 3), Read("t", 2)]
    assert ctx.answer(again) == []


def test_a_read_that_was_not_answered_changes_nothing_the_session_remembers() -> None:
    cache = FetchSessionCache()
    sid = opened(cache, 2)
    cache.context(request({}, sid, epoch=1), now_ms=1)  # read, parked, connection lost
    ctx = cache.context(request({}, sid, epoch=2), now_ms=2)
    assert [r.partition for r in ctx.answer([Read("t", 0, high_watermark=9), Read("t", 1)])] == [0]


def test_forgotten_partitions_leave_the_session() -> None:
    cache = FetchSessionCache()
    sid = opened(cache, 3)
    ctx = cache.context(request({}, sid, epoch=1, forgotten=[0, 2]), now_ms=1)
    assert keys(ctx.parts) == [1]
    ctx = cache.context(request({0: 3}, sid, epoch=2), now_ms=2)
    assert keys(ctx.parts) == [1, 0]  # back, at the end, and answered once (never told)
    assert [r.partition for r in ctx.answer([Read("t", 1), Read("t", 0)])] == [0]


def test_an_unknown_id_or_a_wrong_epoch_is_refused_and_leaves_the_session_alone() -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    with pytest.raises(FetchSessionIdNotFoundError):
        cache.context(request({}, sid + 1, epoch=1), now_ms=1)
    with pytest.raises(InvalidFetchSessionEpochError):
        cache.context(request({}, sid, epoch=2), now_ms=1)
    assert cache.context(request({}, sid, epoch=1), now_ms=1).incremental


@pytest.mark.parametrize("epoch", [FINAL_EPOCH, INITIAL_EPOCH])
def test_a_full_request_naming_a_session_closes_it(epoch: int) -> None:
    cache = FetchSessionCache()
    sid = opened(cache)
    ctx = cache.context(request({0: 0}, sid, epoch=epoch), now_ms=1)
    assert cache.get(sid) is None
    assert (ctx.session is None) == (epoch == FINAL_EPOCH)
    with pytest.raises(FetchSessionIdNotFoundError):
        cache.context(request({}, sid, epoch=1), now_ms=1)


def test_a_full_cache_evicts_only_a_session_idle_past_the_eviction_time() -> None:
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000)
    first = opened(cache)
    second = opened(cache)
    cache.context(request({}, first, epoch=1), now_ms=500)  # first used last: second is oldest
    ctx = cache.context(request({0: 0}), now_ms=999)
    assert ctx.session is None and ctx.session_id == NO_SESSION  # no room: answered sessionless
    assert ctx.answer([Read("t", 0)]) == [Read("t", 0)]
    ctx = cache.context(request({0: 0}), now_ms=1000)  # second idle for 1000 ms: evicted
    assert ctx.session is not None
    assert cache.get(second) is None and cache.get(first) is not None and len(cache) == 2


def test_a_topic_whose_name_has_another_id_now_leaves_for_unresolved_under_its_old_id() -> None:
    """Kafka v13+: a session's topic deleted and re-created (a new id under the same name)
    leaves the session's partitions for `unresolved`, kept under the id the client knows."""
    cache = FetchSessionCache()
    sid = opened(cache, 2)
    session = cache.get(sid)
    assert session is not None
    old, new = uuid.uuid4(), uuid.uuid4()
    session.topic_ids["t"] = old
    session.unname({"t": old}.get)  # unchanged: nothing moves
    assert list(session.partitions) == [("t", 0), ("t", 1)] and not session.unresolved
    session.unname({"t": new}.get)
    assert not session.partitions and not session.topic_ids
    assert {i: list(parts) for i, parts in session.unresolved.items()} == {old: [0, 1]}
    assert keys(cache.context(request({}, sid, epoch=1), now_ms=1).parts) == []


def test_epochs_wrap_to_one() -> None:
    assert next_epoch(1) == 2
    assert next_epoch(MAX_EPOCH) == 1


# ----- the follower's side -------------------------------------------------------------------


def response(session_id: int = NO_SESSION, error_code: int = 0) -> FetchResponse:
    return FetchResponse(error_code, [], 0, session_id)


def named(req_topics: list[FetchTopic]) -> list[int]:
    return [p.partition for t in req_topics for p in t.partitions]


def test_the_follower_asks_in_full_then_only_for_what_moved() -> None:
    h = FetchSessionHandler(min_partitions=1)
    wanted = {("t", p): fp(p) for p in range(3)}
    first = h.build(wanted)
    assert (first.session_id, first.epoch, named(first.topics)) == (NO_SESSION, 0, [0, 1, 2])
    assert h.on_response(first, response(session_id=42))
    moved = dict(wanted)
    moved[("t", 1)] = fp(1, offset=5)  # partition 1 appended
    del moved[("t", 2)]  # partition 2 backs off
    second = h.build(moved)
    assert (second.session_id, second.epoch, named(second.topics)) == (42, 1, [1])
    assert second.forgotten == [ForgottenTopic("t", [2])]
    assert h.on_response(second, response(session_id=42))
    third = h.build(moved)
    assert (third.epoch, named(third.topics), third.forgotten) == (2, [], [])


def test_a_leader_without_room_keeps_the_follower_asking_in_full() -> None:
    h = FetchSessionHandler(min_partitions=1)
    wanted = {("t", 0): fp(0)}
    assert h.on_response(h.build(wanted), response(session_id=NO_SESSION))
    again = h.build(wanted)
    assert (again.session_id, again.epoch, named(again.topics)) == (NO_SESSION, 0, [0])


@pytest.mark.parametrize(
    ("error", "next_id"),
    [(FetchSessionIdNotFoundError.code, NO_SESSION), (InvalidFetchSessionEpochError.code, 42)],
)
def test_a_session_error_starts_over_in_full(error: int, next_id: int) -> None:
    h = FetchSessionHandler(min_partitions=1)
    wanted = {("t", 0): fp(0), ("t", 1): fp(1)}
    h.on_response(h.build(wanted), response(session_id=42))
    assert not h.on_response(h.build(wanted), response(error_code=error))
    again = h.build(wanted)
    assert (again.session_id, again.epoch, named(again.topics)) == (next_id, 0, [0, 1])


def test_a_lost_connection_starts_over_in_full_naming_the_old_session() -> None:
    h = FetchSessionHandler(min_partitions=1)
    wanted = {("t", 0): fp(0)}
    h.on_response(h.build(wanted), response(session_id=42))
    h.build(wanted)  # sent; the connection is lost before the answer
    h.reset()
    again = h.build(wanted)
    assert (again.session_id, again.epoch, named(again.topics)) == (42, 0, [0])


def test_a_follower_of_few_partitions_fetches_without_a_session_and_closes_one_it_had() -> None:
    h = FetchSessionHandler()
    few = {("t", p): fp(p) for p in range(MIN_SESSION_PARTITIONS - 1)}
    plain = h.build(few)
    assert (plain.session_id, plain.epoch) == (NO_SESSION, FINAL_EPOCH)
    assert named(plain.topics) == list(range(MIN_SESSION_PARTITIONS - 1))
    assert h.on_response(plain, response())
    many = {("t", p): fp(p) for p in range(MIN_SESSION_PARTITIONS)}
    opening = h.build(many)
    assert opening.epoch == INITIAL_EPOCH
    assert h.on_response(opening, response(session_id=42))
    closing = h.build(few)  # down to few again: the full fetch names the session, closing it
    assert (closing.session_id, closing.epoch) == (42, FINAL_EPOCH)
    assert h.on_response(closing, response())
    assert (h.build(few).session_id, h.build(many).epoch) == (NO_SESSION, INITIAL_EPOCH)
