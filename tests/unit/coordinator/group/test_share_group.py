"""A share group's heartbeat rules and membership (coordinator/group/share_group.py), pure, on
a manual time."""

from __future__ import annotations

import uuid

import pytest

from coordinator.group.share_group import (
    FENCED_MEMBER_EPOCH,
    GROUP_MAX_SIZE_REACHED,
    INVALID_REQUEST,
    UNKNOWN_MEMBER_ID,
    ShareConfig,
    ShareGroup,
    ShareGroupState,
    ShareHeartbeatIn,
    ShareHeartbeatOut,
    expire,
    heartbeat,
)

T = uuid.UUID(int=1)
TOPICS = {"t": (T, 2)}
CONFIG = ShareConfig(session_timeout_ms=1_000, heartbeat_interval_ms=100, max_size=2)


def beat(group: ShareGroup, member: str, epoch: int, topics: tuple[str, ...] | None = None,
         now_ms: int = 0, cluster: dict[str, tuple[uuid.UUID, int]] = TOPICS,
         ) -> ShareHeartbeatOut:  # fmt: skip
    return heartbeat(group, ShareHeartbeatIn("s", member, epoch, None, topics), cluster, CONFIG,
                     now_ms)  # fmt: skip


@pytest.mark.parametrize(
    "member, epoch, topics, code",
    [
        ("", 0, ("t",), INVALID_REQUEST),  # the client makes its member id
        ("m", 0, None, INVALID_REQUEST),  # joining names its topics
        ("m", 0, (), INVALID_REQUEST),
        ("m", 5, None, UNKNOWN_MEMBER_ID),
        ("m", -1, None, UNKNOWN_MEMBER_ID),
    ],
)
def test_refused_heartbeats_change_nothing(
    member: str, epoch: int, topics: tuple[str, ...] | None, code: int
) -> None:
    group = ShareGroup("s")
    assert beat(group, member, epoch, topics).error_code == code
    assert (group.members, group.group_epoch) == ({}, 0)


def test_join_heartbeat_fence_leave_and_the_size_limit() -> None:
    group = ShareGroup("s")
    one = beat(group, "a", 0, ("t",))
    assert (one.error_code, one.member_epoch, one.heartbeat_interval_ms) == (0, 1, 100)
    assert one.assignment == {T: frozenset({0, 1})}  # alone: both partitions
    two = beat(group, "b", 0, ("t",))
    assert two.member_epoch == 2 and two.assignment == {T: frozenset({1})}
    assert beat(group, "c", 0, ("t",)).error_code == GROUP_MAX_SIZE_REACHED
    # a's next heartbeat: the new epoch and its new partitions; then nothing new
    a = beat(group, "a", 1)
    assert (a.member_epoch, a.assignment) == (2, {T: frozenset({0})})
    assert beat(group, "a", 2).assignment is None
    assert beat(group, "a", 1).error_code == FENCED_MEMBER_EPOCH
    # a topic grows: the group epoch moves, the target follows
    grown = beat(group, "a", 2, cluster={"t": (T, 4)})
    assert grown.member_epoch == 3 and grown.assignment == {T: frozenset({0, 2})}
    left = beat(group, "b", -1)
    assert (left.error_code, left.member_epoch) == (0, -1) and list(group.members) == ["a"]
    assert group.state is ShareGroupState.STABLE


def test_silent_members_expire() -> None:
    group = ShareGroup("s")
    beat(group, "a", 0, ("t",), now_ms=0)
    beat(group, "b", 0, ("t",), now_ms=500)
    assert expire(group, TOPICS, 999, 1_000) == []
    assert expire(group, TOPICS, 1_000, 1_000) == ["a"]
    assert expire(group, TOPICS, 1_500, 1_000) == ["b"]
    assert group.state is ShareGroupState.EMPTY and group.target == {}


def test_a_member_loaded_from_the_log_starts_its_session_at_the_first_expiry() -> None:
    group = ShareGroup("s")
    beat(group, "a", 0, ("t",), now_ms=0)
    group.members["a"].session_deadline_ms = 0  # as replay leaves it
    assert expire(group, TOPICS, 5_000, 1_000) == []  # its session starts now
    assert group.members["a"].session_deadline_ms == 6_000
    assert expire(group, TOPICS, 6_000, 1_000) == ["a"]
