"""A static member (group_instance_id, KIP-345) of odradek's consumer against the scripted fake
coordinator: every request carries the instance id, closing sends no LeaveGroup, and
FENCED_INSTANCE_ID stops consumption and makes the next join raise."""

from __future__ import annotations

import pytest

from client.cluster import Cluster
from client.group.membership import GroupMembership, GroupSettings
from client.group.states import ConsumerState
from client.types import TopicPartition
from protocol.api.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
)
from protocol.errors import FencedInstanceIdError
from tests.unit.client.fake_broker import bootstrap
from tests.unit.client.group.test_membership import (  # noqa: F401 (the fixture)
    Clock,
    FakeCoordinator,
    coordinator,
)


async def _static(fake: FakeCoordinator) -> GroupMembership:
    cluster = Cluster(bootstrap(fake.state), retry_backoff_ms=1)
    settings = GroupSettings("g", session_timeout_ms=120_000, heartbeat_interval_ms=60_000,
                             max_poll_interval_ms=5000, retry_backoff_ms=1,
                             group_instance_id="pod-0")  # fmt: skip
    m = GroupMembership(cluster, settings, monotonic_s=Clock())
    m.subscribe(["t"], None)
    await m.join()
    return m


async def test_static_member_names_its_instance_and_does_not_leave(
    coordinator: FakeCoordinator,  # noqa: F811
) -> None:
    m = await _static(coordinator)
    await m.heartbeat_once()
    await m.commit({TopicPartition("t", 0): 5})
    kinds = (JoinGroupRequest, HeartbeatRequest, OffsetCommitRequest)
    sent = [r for r in coordinator.seen if isinstance(r, kinds)]
    assert len(sent) == 3 and all(r.group_instance_id == "pod-0" for r in sent)
    await m.close()
    assert not any(isinstance(r, LeaveGroupRequest) for r in coordinator.seen)


async def test_fenced_static_member_stops_and_cannot_rejoin(
    coordinator: FakeCoordinator,  # noqa: F811
) -> None:
    m = await _static(coordinator)
    coordinator.codes["Heartbeat"] = [FencedInstanceIdError.code]
    await m.heartbeat_once()
    assert m.state is ConsumerState.STOPPED and m.needs_join
    joins = sum(isinstance(r, JoinGroupRequest) for r in coordinator.seen)
    with pytest.raises(FencedInstanceIdError, match="group_instance_id"):
        await m.join()
    assert sum(isinstance(r, JoinGroupRequest) for r in coordinator.seen) == joins
    await m.close()
