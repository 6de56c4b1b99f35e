"""The pure parts of the native consumer on KIP-848's protocol (client/group/consumer_protocol.py):
the reconciliation step, what a heartbeat's error code makes the member do, the settings that
the consumer protocol refuses, the request a member sends (epochs: join, leave, static), and a
commit refused STALE_MEMBER_EPOCH retried at the epoch the next heartbeat answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest

from client.consumer import AsyncConsumer
from client.group.consumer_group import ConsumerGroup
from client.group.consumer_protocol import (
    Action,
    ConsumerProtocolGroup,
    ConsumerProtocolMembership,
    GroupProtocolError,
    check_group_protocol,
    from_wire,
    heartbeat_action,
    reconcile_step,
    to_wire,
)
from client.types import TopicPartition
from protocol.api.group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    PartitionResult,
    TopicPartitions,
    TopicResult,
)
from protocol.errors import FencedMemberEpochError, StaleMemberEpochError, UsageError


def tps(*parts: int, topic: str = "t") -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in parts}


def test_reconcile_revokes_what_is_no_longer_owned_then_adds_the_increment() -> None:
    step = reconcile_step(tps(0, 1, 2), tps(2, 3))
    assert step.revoke == tps(0, 1) and step.keep == tps(2) and step.add == tps(3)
    same = reconcile_step(tps(0, 1), tps(0, 1))
    assert not same.revoke and not same.add and same.keep == tps(0, 1)
    first = reconcile_step((), tps(0, 1, topic="u"))
    assert not first.revoke and first.add == tps(0, 1, topic="u")


def test_heartbeat_codes_decide_the_members_next_move() -> None:
    assert heartbeat_action(0) is Action.OK
    assert heartbeat_action(110) is Action.REJOIN  # FENCED_MEMBER_EPOCH
    assert heartbeat_action(25) is Action.REJOIN  # UNKNOWN_MEMBER_ID
    for code in (14, 15, 16):  # loading, not available, not the coordinator
        assert heartbeat_action(code) is Action.RETRY
    for code in (69, 23, 112, 81):  # not a consumer group, wrong kind, assignor, full
        assert heartbeat_action(code) is Action.FATAL


def test_wire_names_round_trip() -> None:
    owned = tps(2, 0) | tps(1, topic="a")
    wire = to_wire(owned)
    assert wire == [TopicPartitions("a", [1]), TopicPartitions("t", [0, 2])]
    assert from_wire(wire) == owned


def test_classic_only_settings_and_unknown_protocols_are_refused() -> None:
    check_group_protocol("classic", ["session_timeout_ms"])
    check_group_protocol("consumer", [])
    with pytest.raises(ValueError, match="group_protocol must be one of classic, consumer"):
        check_group_protocol("eager", [])
    for bad in ("session_timeout_ms", "heartbeat_interval_ms", "assignment_strategy"):
        with pytest.raises(GroupProtocolError, match=f"{bad} cannot be set with group_protocol"):
            AsyncConsumer("127.0.0.1:1", group_id="g", group_protocol="consumer",
                          **{bad: "range" if bad == "assignment_strategy" else 500})  # type: ignore[arg-type]  # fmt: skip
    with pytest.raises(UsageError):
        AsyncConsumer("127.0.0.1:1", group_id="g", group_protocol="Consumer")


async def test_the_protocol_chooses_the_membership() -> None:
    classic = AsyncConsumer("127.0.0.1:1", group_id="g", session_timeout_ms=6000)
    new = AsyncConsumer("127.0.0.1:1", group_id="g", group_protocol="consumer")
    try:
        assert type(classic._group) is ConsumerGroup
        assert classic._group.membership.settings.session_timeout_ms == 6000
        assert isinstance(new._group, ConsumerProtocolGroup)
    finally:
        await classic.close()
        await new.close()


async def test_requests_carry_the_epoch_owned_partitions_and_leave_epochs() -> None:
    new = AsyncConsumer("127.0.0.1:1", group_id="g", group_protocol="consumer",
                        group_instance_id="i-1", group_remote_assignor="range")  # fmt: skip
    try:
        new.subscribe(["t"])
        m = new._group.membership  # type: ignore[union-attr]
        assert isinstance(m, ConsumerProtocolMembership)
        join = m._request(m.epoch)
        assert join.member_epoch == 0 and join.member_id and join.owned == []
        assert join.subscribed_topic_names == ["t"] and join.server_assignor == "range"
        m._accept(ConsumerGroupHeartbeatResponse(0, None, join.member_id, 3, 250,
                                                 [TopicPartitions("t", [0, 1])]))  # fmt: skip
        assert m.epoch == 3 and m.interval_s == 0.25 and m.target == tps(0, 1)
        assert m.needs_join  # the poll step has partitions to take
        m.report(tps(0, 1))
        assert m._request(m.epoch).owned == [TopicPartitions("t", [0, 1])]
        sent: list[int] = []

        async def send(request: object, timeout_ms: float | None = None) -> None:
            sent.append(request.member_epoch)  # type: ignore[attr-defined]

        m._send = send  # type: ignore[method-assign]
        await m.leave()
        assert sent == [-2]  # static: leaves its place, keeps its partitions for the session
        m._fence()
        m.rejoin()
        assert m.epoch == 0 and m.owned == frozenset() and m.target is None
    finally:
        await new.close()


async def test_a_poll_step_revokes_first_commits_only_the_revoked_then_takes_the_increment() -> (
    None
):
    consumer = AsyncConsumer("127.0.0.1:1", group_id="g", group_protocol="consumer")
    group = consumer._group
    assert isinstance(group, ConsumerProtocolGroup)
    m = group.membership
    events: list[tuple[str, object]] = []

    class Listener:
        def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            events.append(("revoked", revoked))

        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            events.append(("assigned", assigned))

    async def commit(offsets: dict[TopicPartition, int]) -> None:
        events.append(("commit", dict(offsets)))

    async def committed(wanted: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        events.append(("fetch", set(wanted)))
        return {TopicPartition("t", 3): 42}

    m.commit = commit  # type: ignore[method-assign]
    m.committed = committed  # type: ignore[method-assign]
    m._heartbeat_task = asyncio.ensure_future(asyncio.sleep(0))  # started: no real heartbeats
    try:
        consumer.subscribe(["t"], listener=Listener())
        consumer.apply_assignment(tps(0, 1, 2))
        for p in (0, 1, 2):
            consumer.seek(TopicPartition("t", p), 10 + p)
        m.report(tps(0, 1, 2))
        m.target = frozenset(tps(2, 3))
        assert m.needs_join
        await group.ensure_active()
        assert events == [
            ("commit", {TopicPartition("t", 0): 10, TopicPartition("t", 1): 11}),
            ("revoked", tps(0, 1)),
            ("fetch", tps(3)),
            ("assigned", tps(3)),
        ]
        assert consumer.assignment() == tps(2, 3) and m.owned == tps(2, 3)
        assert consumer._subs.position(TopicPartition("t", 2)) == 12  # kept its position
        assert consumer._subs.position(TopicPartition("t", 3)) == 42  # from the commit
        assert not m.needs_join

        events.clear()  # fenced: everything dropped without a commit, then epoch 0
        m.generation = 7
        m._fence()
        await group.ensure_active()
        assert events == [("revoked", tps(2, 3))]
        assert consumer.assignment() == set() and m.epoch == 0 and not m.fenced
    finally:
        await consumer.close()


async def test_a_heartbeat_the_broker_cannot_serve_stops_the_member_and_poll_says_why() -> None:
    from protocol.errors import UnsupportedVersionError

    consumer = AsyncConsumer("127.0.0.1:1", group_id="g", group_protocol="consumer")
    m = consumer._group.membership  # type: ignore[union-attr]
    assert isinstance(m, ConsumerProtocolMembership)

    async def send(request: object, timeout_ms: float | None = None) -> None:
        raise UnsupportedVersionError("api 68 is not served here")

    m._send = send  # type: ignore[method-assign]
    try:
        consumer.subscribe(["t"])
        await m.heartbeat_once()
        assert isinstance(m.fatal, UnsupportedVersionError) and m.needs_join
        with pytest.raises(UnsupportedVersionError, match="api 68"):
            await consumer._group.ensure_active()  # type: ignore[union-attr]
    finally:
        await consumer.close()


class EpochCoordinator:
    """Answers a member's heartbeats and commits as a KIP-848 coordinator whose epoch for the
    member is `epoch`: a commit at another epoch is STALE_MEMBER_EPOCH; a heartbeat answers
    `epoch`, or `heartbeat_code` when set."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.heartbeat_code = 0
        self.commits: list[int] = []  # the epoch of each commit, in order
        self.heartbeats = 0

    async def send(self, request: object, timeout_ms: float | None = None) -> object:
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            self.heartbeats += 1
            return ConsumerGroupHeartbeatResponse(self.heartbeat_code, None, request.member_id,
                                                  self.epoch, 3_600_000, None)  # fmt: skip
        assert isinstance(request, OffsetCommitRequest)
        self.commits.append(request.generation_id)
        code = 0 if request.generation_id == self.epoch else StaleMemberEpochError.code
        return OffsetCommitResponse([TopicResult("t", [PartitionResult(0, code)])])


async def _member_at_epoch(
    coordinator: EpochCoordinator,
) -> tuple[AsyncConsumer, ConsumerProtocolMembership]:
    consumer = AsyncConsumer("127.0.0.1:1", group_id="g", group_protocol="consumer",
                             request_timeout_ms=5000, retry_backoff_ms=1)  # fmt: skip
    m = consumer._group.membership  # type: ignore[union-attr]
    assert isinstance(m, ConsumerProtocolMembership)
    m._send = coordinator.send  # type: ignore[method-assign]
    consumer.subscribe(["t"])
    m.polled()  # as a poll would: the member is not leaving for want of polls
    await m.start(5)  # the first heartbeat: the member is at the coordinator's epoch
    assert m.epoch == coordinator.epoch and m.interval_s == 3600  # no heartbeat unless woken
    return consumer, m


async def test_a_commit_at_a_stale_epoch_is_retried_at_the_newer_one() -> None:
    coordinator = EpochCoordinator(3)
    consumer, m = await _member_at_epoch(coordinator)
    try:
        coordinator.epoch = 4  # moved on; the heartbeat answer saying so is not read yet
        await m.commit({TopicPartition("t", 0): 10})
        assert coordinator.commits == [3, 4] and m.epoch == 4
    finally:
        await consumer.close()


async def test_a_stale_commit_of_a_member_fenced_meanwhile_is_refused() -> None:
    coordinator = EpochCoordinator(3)
    consumer, m = await _member_at_epoch(coordinator)
    try:
        coordinator.epoch = 4
        coordinator.heartbeat_code = FencedMemberEpochError.code
        with pytest.raises(StaleMemberEpochError):
            await m.commit({TopicPartition("t", 0): 10})
        assert coordinator.commits == [3] and m.fenced
    finally:
        await consumer.close()
