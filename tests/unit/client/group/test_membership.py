"""GroupMembership against a scripted fake coordinator: the consumer state table in action."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from client.cluster import Cluster
from client.consumer import AsyncConsumer
from client.group.membership import GroupMembership, GroupSettings
from client.group.states import (
    TABLE,
    ConsumerState,
    IllegalConsumerTransitionError,
    check_transition,
)
from client.types import TopicPartition
from protocol.api.group import (
    FetchedOffset,
    FetchedTopic,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
    TopicPartitions,
    TopicResult,
)
from protocol.errors import (
    CoordinatorLoadInProgressError,
    IllegalGenerationError,
    InvalidRequestError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from tests.unit.client.fake_broker import FakeBroker, FakeState, bootstrap, stop_cluster

C = ConsumerState


class FakeCoordinator(FakeBroker):
    """Answers group requests from per-api scripts of error codes (then 0)."""

    def __init__(self, node_id: int, state: FakeState) -> None:
        super().__init__(node_id, state)
        self.codes: dict[str, list[int]] = {}
        self.seen: list[Any] = []

    def _code(self, api: str) -> int:
        script = self.codes.get(api) or [0]
        return script.pop(0) if self.codes.get(api) else script[0]

    def on_FindCoordinator(self, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
        self.seen.append(req)
        return FindCoordinatorResponse(0, None, self.node_id, "127.0.0.1", self.port)

    def on_JoinGroup(self, req: JoinGroupRequest) -> JoinGroupResponse:
        self.seen.append(req)
        code = self._code("JoinGroup")
        if code:
            return JoinGroupResponse(code, -1, req.member_id, [])
        return JoinGroupResponse(0, 7, req.member_id or "m-1", [TopicPartitions("t", [0, 2])])

    def on_Heartbeat(self, req: HeartbeatRequest) -> HeartbeatResponse:
        self.seen.append(req)
        return HeartbeatResponse(self._code("Heartbeat"))

    def on_LeaveGroup(self, req: LeaveGroupRequest) -> LeaveGroupResponse:
        self.seen.append(req)
        return LeaveGroupResponse(0)

    def on_OffsetFetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        self.seen.append(req)
        code = self._code("OffsetFetch")
        if code:
            return OffsetFetchResponse(code, [])
        topics = [FetchedTopic(t.topic, [FetchedOffset(p, -1, None, 0) for p in t.partitions])
                  for t in req.topics or []]  # fmt: skip
        return OffsetFetchResponse(0, topics)

    def on_OffsetCommit(self, req: OffsetCommitRequest) -> OffsetCommitResponse:
        self.seen.append(req)
        code = self._code("OffsetCommit")
        return OffsetCommitResponse(
            [
                TopicResult(t.name, [PartitionResult(p.partition, code) for p in t.partitions])
                for t in req.topics
            ]
        )


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
async def coordinator() -> AsyncIterator[FakeCoordinator]:
    state = FakeState()
    broker = await FakeCoordinator.start(1, state)
    assert isinstance(broker, FakeCoordinator)
    yield broker
    await stop_cluster(state)


async def joined(coordinator: FakeCoordinator, clock: Clock) -> GroupMembership:
    cluster = Cluster(bootstrap(coordinator.state), retry_backoff_ms=1)
    settings = GroupSettings("g", session_timeout_ms=120_000, heartbeat_interval_ms=60_000,
                             max_poll_interval_ms=5000, retry_backoff_ms=1)  # fmt: skip
    m = GroupMembership(cluster, settings, monotonic_s=clock)
    m.subscribe(["t"], None)
    assert m.state is C.DISCOVER and m.needs_join
    assert await m.join() == [TopicPartition("t", 0), TopicPartition("t", 2)]
    assert (m.state, m.member_id, m.generation) == (C.MEMBER, "m-1", 7)
    return m


async def test_rebalance_and_fencing_codes_stop_consumption(coordinator: FakeCoordinator) -> None:
    clock = Clock()
    m = await joined(coordinator, clock)
    coordinator.codes["Heartbeat"] = [RebalanceInProgressError.code]
    await m.heartbeat_once()
    assert m.state is C.STOPPED and m.needs_join and m.member_id == "m-1"
    await m.join()
    coordinator.codes["Heartbeat"] = [UnknownMemberIdError.code]
    await m.heartbeat_once()
    assert m.state is C.STOPPED and m.member_id == ""
    await m.join()
    coordinator.codes["OffsetCommit"] = [IllegalGenerationError.code]
    with pytest.raises(IllegalGenerationError):
        await m.commit({TopicPartition("t", 0): 5})
    assert m.state is C.STOPPED
    await m.close()


async def test_lost_coordinator_is_rediscovered_without_stopping(
    coordinator: FakeCoordinator,
) -> None:
    clock = Clock()
    m = await joined(coordinator, clock)
    coordinator.codes["Heartbeat"] = [NotCoordinatorError.code]
    await m.heartbeat_once()
    assert m.state is C.REDISCOVER and not m.needs_join  # keeps consuming
    finds = sum(isinstance(r, FindCoordinatorRequest) for r in coordinator.seen)
    await m.heartbeat_once()  # rediscovers
    assert m.state is C.MEMBER
    assert sum(isinstance(r, FindCoordinatorRequest) for r in coordinator.seen) == finds + 1
    coordinator.kill_connections()
    await m.heartbeat_once()
    assert m.state is C.REDISCOVER
    await m.heartbeat_once()
    await m.heartbeat_once()
    assert m.state is C.MEMBER and isinstance(coordinator.seen[-1], HeartbeatRequest)
    await m.close()
    assert isinstance(coordinator.seen[-1], LeaveGroupRequest)


async def test_a_commit_retries_a_topic_the_coordinator_does_not_know_yet(
    coordinator: FakeCoordinator,
) -> None:
    """UNKNOWN_TOPIC_OR_PARTITION is retriable (a topic just created reaches the
    coordinator's metadata a moment late): the commit is sent again and succeeds, and the
    member keeps its place."""
    m = await joined(coordinator, Clock())
    coordinator.codes["OffsetCommit"] = [UnknownTopicOrPartitionError.code] * 2
    await m.commit({TopicPartition("t", 0): 5})
    assert sum(isinstance(r, OffsetCommitRequest) for r in coordinator.seen) == 3
    assert m.state is C.MEMBER
    await m.close()


async def test_join_retries_while_the_coordinator_loads(coordinator: FakeCoordinator) -> None:
    coordinator.codes["JoinGroup"] = [CoordinatorLoadInProgressError.code] * 3
    m = await joined(coordinator, Clock())
    assert sum(isinstance(r, JoinGroupRequest) for r in coordinator.seen) == 4
    await m.close()


async def test_max_poll_interval_leaves_the_group(coordinator: FakeCoordinator) -> None:
    clock = Clock()
    m = await joined(coordinator, clock)
    clock.now_s += 4
    await m.heartbeat_once()
    assert m.state is C.MEMBER
    clock.now_s += 2  # 6 s since the last poll > 5 s
    await m.heartbeat_once()
    assert m.state is C.STOPPED and m.member_id == ""
    assert isinstance(coordinator.seen[-1], LeaveGroupRequest)
    await m.close()


async def test_an_assignment_whose_offsets_cannot_be_read_is_not_taken_up(
    coordinator: FakeCoordinator,
) -> None:
    """The committed offsets are read before the new partitions are taken up (so that no
    other task sees them before the assigned callback). If that read fails, poll raises, the
    consumer owns nothing, and the next poll joins again."""
    coordinator.state.create_topic("t", 3)
    coordinator.codes["OffsetFetch"] = [InvalidRequestError.code]
    told: list[set[TopicPartition]] = []

    class Listener:
        def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            pass

        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            told.append(assigned)

    consumer = AsyncConsumer(bootstrap(coordinator.state), group_id="g", retry_backoff_ms=1,
                             heartbeat_interval_ms=60_000, session_timeout_ms=120_000)  # fmt: skip
    consumer.subscribe(["t"], listener=Listener())
    try:
        with pytest.raises(InvalidRequestError):
            await consumer.poll(timeout_ms=0)
        assert consumer.assignment() == set() and told == []
        await consumer.poll(timeout_ms=0)
        mine = {TopicPartition("t", 0), TopicPartition("t", 2)}
        assert consumer.assignment() == mine and told == [mine]
        assert sum(isinstance(r, JoinGroupRequest) for r in coordinator.seen) == 2
    finally:
        await consumer.close()


def test_state_table() -> None:
    assert all(spec.does for spec in TABLE.values())
    assert check_transition(C.MEMBER, C.REDISCOVER) is C.REDISCOVER
    with pytest.raises(IllegalConsumerTransitionError):
        check_transition(C.DOWN, C.MEMBER)
