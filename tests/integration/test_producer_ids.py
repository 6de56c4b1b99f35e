"""Producer id blocks in a real ZooKeeper: brokers claiming at once never share an id, and the
znode holds Kafka's JSON (coordinator/cluster/producer_ids.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.producer_ids import BLOCK_SIZE, ProducerIdManager, ZkBlockSource
from coordinator.cluster.zk import ZkClient
from coordinator.cluster.zk_paths import ProducerIdBlock

pytestmark = pytest.mark.integration

SESSION_MS = 4000


@pytest.fixture
async def two_sessions(zk_chroot: str) -> AsyncIterator[tuple[ZkClient, ZkClient]]:
    clients = (ZkClient(zk_chroot, SESSION_MS), ZkClient(zk_chroot, SESSION_MS))
    for client in clients:
        await client.start(10)
    yield clients
    for client in clients:
        await client.stop()


async def test_two_managers_never_hand_out_the_same_id(
    two_sessions: tuple[ZkClient, ZkClient],
) -> None:
    zk1, zk2 = two_sessions
    # Blocks of 7 so that the two brokers claim often, and at the same time.
    one = ProducerIdManager(1, ZkBlockSource(zk1, size=7))
    two = ProducerIdManager(2, ZkBlockSource(zk2, size=7))

    async def take(manager: ProducerIdManager, count: int) -> list[int]:
        return [await manager.next_producer_id() for _ in range(count)]

    takes = [take(m, 20) for m in (one, two) for _ in range(3)]  # 3 callers per broker
    got = [i for ids in await asyncio.gather(*takes) for i in ids]
    assert len(got) == len(set(got)) == 120
    assert min(got) == 0
    data, version = await zk1.get(paths.LATEST_PRODUCER_ID_BLOCK)
    latest = ProducerIdBlock.decode(data)
    assert max(got) <= latest.end and latest.end + 1 == 7 * (version + 1)  # one write per block
    assert (latest.end - latest.start + 1, latest.broker_id in (1, 2)) == (7, True)


async def test_the_znode_is_kafkas_and_an_empty_one_is_taken_over(
    two_sessions: tuple[ZkClient, ZkClient],
) -> None:
    zk, _ = two_sessions
    await zk.create(paths.LATEST_PRODUCER_ID_BLOCK, b"")  # as Kafka leaves it at start-up
    manager = ProducerIdManager(3, ZkBlockSource(zk))
    assert await manager.init_producer_id(None, -1, -1) == (0, 0)
    data, _ = await zk.get(paths.LATEST_PRODUCER_ID_BLOCK)
    assert json.loads(data) == {
        "version": 1, "broker": 3, "block_start": "0", "block_end": str(BLOCK_SIZE - 1),
    }  # fmt: skip
    assert await ProducerIdManager(4, ZkBlockSource(zk)).next_producer_id() == BLOCK_SIZE
    data, _ = await zk.get(paths.LATEST_PRODUCER_ID_BLOCK)
    assert json.loads(data)["block_start"] == str(BLOCK_SIZE)
    assert json.loads(data)["broker"] == 4
