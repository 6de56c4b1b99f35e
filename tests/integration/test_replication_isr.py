"""coordinator/cluster/isr.py against a real ZooKeeper: the leader's conditional ISR write and the
/isr_change_notification znodes the controller watches."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.isr import (
    ISR_CHANGE_NOTIFICATION,
    ZkIsrWriter,
    decode_isr_change,
    isr_change_path,
    next_sequence,
)
from coordinator.cluster.zk import ZkClient

pytestmark = pytest.mark.integration


@pytest.fixture
async def zk(zk_chroot: str) -> AsyncIterator[ZkClient]:
    client = ZkClient(zk_chroot, 4000)
    await client.start(10)
    yield client
    await client.stop()


async def _state(zk: ZkClient, leader: int, epoch: int, isr: list[int]) -> int:
    path = paths.partition_state_path("t", 0)
    data = paths.LeaderIsrState(leader, epoch, 1, isr).encode()
    if await zk.exists(path) is None:
        await zk.create(path, data, makepath=True)
        return 0
    return await zk.set(path, data)


def test_sequence_names() -> None:
    assert next_sequence([]) == 0
    assert next_sequence(["isr_change_0000000007", "isr_change_0000000003", "other"]) == 8
    assert isr_change_path(12) == "/isr_change_notification/isr_change_0000000012"


async def test_conditional_write_and_notification(zk: ZkClient) -> None:
    version = await _state(zk, leader=1, epoch=3, isr=[1])
    writer = ZkIsrWriter(zk, broker_id=1, notify_delay_ms=10)
    result = await writer.write_isr("t", 0, 3, 1, [1, 2], version)
    assert (result.written, result.zk_version, result.isr) == (True, version + 1, [1, 2])
    data, _ = await zk.get(paths.partition_state_path("t", 0))
    assert paths.LeaderIsrState.decode(data) == paths.LeaderIsrState(1, 3, 1, [1, 2])
    await writer.close()  # sends the pending notification now
    children = await zk.get_children(ISR_CHANGE_NOTIFICATION)
    assert len(children) == 1 and children[0].startswith("isr_change_")
    data, _ = await zk.get(f"{ISR_CHANGE_NOTIFICATION}/{children[0]}")
    assert decode_isr_change(data) == [("t", 0)]
    second = await writer.notify([("t", 0), ("u", 2)])
    assert second == isr_change_path(next_sequence(children))


async def test_stale_version_is_refused_and_reports_the_new_leadership(zk: ZkClient) -> None:
    version = await _state(zk, leader=1, epoch=3, isr=[1, 2])
    await _state(zk, leader=2, epoch=4, isr=[2])  # the controller moved leadership
    writer = ZkIsrWriter(zk, broker_id=1)
    result = await writer.write_isr("t", 0, 3, 1, [1], version)
    assert not result.written
    assert (result.leader, result.leader_epoch, result.isr) == (2, 4, [2])
    data, _ = await zk.get(paths.partition_state_path("t", 0))
    assert paths.LeaderIsrState.decode(data).isr == [2]  # nothing written
    assert await zk.exists(ISR_CHANGE_NOTIFICATION) is None  # nothing announced
