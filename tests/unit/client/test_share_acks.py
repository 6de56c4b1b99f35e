"""The share consumer's acknowledgement bookkeeping (client/share_acks.py), pure: implicit and
explicit modes, Kafka's IllegalStateException cases as ShareStateError, gaps, and the batches
acknowledgements are sent as."""

from __future__ import annotations

import pytest

from client.share_acks import (
    ACCEPT,
    EXPLICIT,
    GAP,
    IMPLICIT,
    REJECT,
    RELEASE,
    ShareAcks,
    ShareRecord,
    ShareStateError,
    batches,
)
from protocol.errors import UsageError


def rec(offset: int, partition: int = 0) -> ShareRecord:
    return ShareRecord("t", partition, offset, 0, None, b"v", None, 1)


def test_implicit_mode_accepts_the_last_polls_records_and_refuses_acknowledge() -> None:
    acks = ShareAcks(IMPLICIT)
    acks.delivered([rec(0), rec(1), rec(2)])
    with pytest.raises(ShareStateError, match="implicit"):
        acks.acknowledge(rec(0), "release")
    assert not acks.has_waiting()
    acks.settle()  # the next poll, or a commit
    assert acks.take() == {("t", 0): [(0, 2, (ACCEPT,))]}
    assert acks.take() == {}


def test_explicit_mode_sends_each_records_type_and_refuses_a_poll_with_some_left() -> None:
    acks = ShareAcks(EXPLICIT)
    acks.delivered([rec(0), rec(1), rec(2), rec(5, 1)])
    acks.acknowledge(rec(0), "accept")
    acks.acknowledge(rec(1), "release")
    with pytest.raises(ShareStateError, match="All records must be acknowledged"):
        acks.settle()
    acks.acknowledge(rec(2), "reject")
    acks.acknowledge(rec(5, 1), "accept")
    acks.settle()
    assert acks.take([("t", 0)]) == {("t", 0): [(0, 2, (ACCEPT, RELEASE, REJECT))]}
    assert acks.take() == {("t", 1): [(5, 5, (ACCEPT,))]}


@pytest.mark.parametrize(
    ("record", "kind", "why"),
    [
        (rec(0), "accept", "cannot be acknowledged"),  # twice
        (rec(9), "accept", "cannot be acknowledged"),  # not from the last poll
        (rec(1), "renew", "unknown acknowledgement type"),
    ],
)
def test_kafkas_illegal_states_are_refused(record: ShareRecord, kind: str, why: str) -> None:
    acks = ShareAcks(EXPLICIT)
    acks.delivered([rec(0), rec(1)])
    acks.acknowledge(rec(0), "accept")
    with pytest.raises(ShareStateError, match=why):
        acks.acknowledge(record, kind)


def test_a_record_of_an_earlier_poll_cannot_be_acknowledged_after_the_next() -> None:
    acks = ShareAcks(EXPLICIT)
    acks.delivered([rec(0)])
    acks.acknowledge(rec(0), "accept")
    acks.settle()
    acks.delivered([rec(1)])
    with pytest.raises(ShareStateError):
        acks.acknowledge(rec(0), "release")


def test_gaps_and_forgotten_partitions() -> None:
    acks = ShareAcks(IMPLICIT)
    acks.delivered([rec(0), rec(3)])
    acks.gaps(("t", 0), [1, 2])
    acks.settle()
    assert acks.take() == {("t", 0): [(0, 3, (ACCEPT, GAP, GAP, ACCEPT))]}
    acks.delivered([rec(4)])
    acks.forget([("t", 0)])
    acks.settle()
    assert acks.take() == {}


def test_batches_are_runs_of_consecutive_offsets() -> None:
    assert batches({7: REJECT, 3: ACCEPT, 4: ACCEPT, 5: ACCEPT, 8: REJECT}) == [
        (3, 5, (ACCEPT,)),
        (7, 8, (REJECT,)),
    ]
    assert batches({}) == []


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(UsageError, match=r"share\.acknowledgement\.mode"):
        ShareAcks("automatic")


async def test_the_share_consumer_refuses_misuse_with_one_line() -> None:
    from client.share_consumer import AsyncShareConsumer

    with pytest.raises(UsageError, match="needs a group_id"):
        AsyncShareConsumer("127.0.0.1:1", group_id="")
    consumer = AsyncShareConsumer("127.0.0.1:1", group_id="g")
    with pytest.raises(UsageError, match="at least one topic"):
        consumer.subscribe([])
    with pytest.raises(ShareStateError, match="implicit"):
        consumer.acknowledge(rec(0))
    await consumer.close()
    with pytest.raises(UsageError, match="closed"):
        await consumer.poll(0)
