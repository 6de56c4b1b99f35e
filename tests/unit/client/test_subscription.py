"""Subscription state: assignment, positions, resets, pausing."""

import pytest

from client.subscription import SubscriptionState
from client.types import TopicPartition
from protocol.errors import UsageError

A = TopicPartition("a", 0)
B = TopicPartition("a", 1)


def test_new_partitions_need_a_position_and_are_not_fetchable() -> None:
    s = SubscriptionState("earliest")
    s.assign([A, B])
    assert s.needs_position() == [A, B]
    assert s.fetchable() == []
    assert s.reset_strategy(A) == "earliest"


def test_seek_makes_fetchable_and_advance_moves_position() -> None:
    s = SubscriptionState()
    s.assign([A])
    s.seek(A, 10)
    assert s.fetchable() == [A] and s.position(A) == 10
    s.advance(A, 15)
    assert s.position(A) == 15


def test_reassign_keeps_state_of_kept_partitions() -> None:
    s = SubscriptionState()
    s.assign([A, B])
    s.seek(A, 7)
    s.pause([A])
    s.assign([A])
    assert s.assignment() == {A}
    assert s.position(A) == 7 and s.is_paused(A)
    with pytest.raises(UsageError):
        s.position(B)


def test_pause_resume() -> None:
    s = SubscriptionState()
    s.assign([A, B])
    s.seek(A, 0)
    s.seek(B, 0)
    s.pause([B])
    assert s.fetchable() == [A] and s.paused() == {B}
    s.resume([B])
    assert s.fetchable() == [A, B]


def test_request_reset_clears_position() -> None:
    s = SubscriptionState("latest")
    s.assign([A])
    s.seek(A, 5)
    s.request_reset(A, "earliest")
    assert s.position(A) is None and s.reset_strategy(A) == "earliest"
    s.seek(A, 0)
    assert s.reset_strategy(A) == "latest"


def test_misuse() -> None:
    with pytest.raises(UsageError):
        SubscriptionState("sometimes")
    s = SubscriptionState()
    with pytest.raises(UsageError):
        s.assign([("a", -1)])  # type: ignore[list-item]
    s.assign([A])
    with pytest.raises(UsageError):
        s.seek(A, -1)
    with pytest.raises(UsageError):
        s.seek(B, 0)
