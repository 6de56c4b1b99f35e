"""`__consumer_offsets` is compacted: on a cluster made before it was (created with only
`retention.ms=-1`), the controller corrects its config at start, in ZooKeeper, with a change
notification every broker applies (coordinator/internal_topics.py). Against a real ZooKeeper;
a new cluster's offsets topic is created compacted (test_kafka_admin_configs.py shows it
through a real cluster)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from coordinator.cluster import topics
from coordinator.cluster import zk_paths as paths
from coordinator.cluster.registration import register_broker
from coordinator.cluster.zk import ZkClient
from coordinator.group.records import OFFSETS_TOPIC
from coordinator.internal_topics import OFFSETS_TOPIC_CONFIGS, corrected
from tests.integration.test_topic_changes_zk import Brokers, eventually

pytestmark = pytest.mark.integration


@pytest.fixture
async def brokers(zk_chroot: str) -> AsyncIterator[Brokers]:
    b = Brokers(zk_chroot)
    yield b
    await b.close()


def test_corrected_sets_only_the_policy() -> None:
    assert corrected({"retention.ms": "-1"}) == {"retention.ms": "-1", "cleanup.policy": "compact"}
    assert corrected({"cleanup.policy": "delete"}) == {"cleanup.policy": "compact"}
    assert corrected({"cleanup.policy": "compact", "segment.bytes": "1000"}) is None
    assert OFFSETS_TOPIC_CONFIGS == {"cleanup.policy": "compact", "segment.bytes": "104857600"}


async def test_an_old_offsets_topic_is_compacted_at_controller_start(
    brokers: Brokers, zk_chroot: str
) -> None:
    old = ZkClient(zk_chroot, 2000)
    await old.start(10)
    try:
        await register_broker(old, 9, "127.0.0.1", 9999)
        await topics.create_topic(old, OFFSETS_TOPIC, 2, 1, {"retention.ms": "-1"}, [9])
        await topics.create_topic(old, "plain", 1, 1, {"retention.ms": "-1"}, [9])
        before = await old.get_children(paths.CONFIG_CHANGES)
    finally:
        await old.stop()
    zk = await brokers.start(1)

    async def compacted() -> bool:
        return await topics.read_topic_config(zk, OFFSETS_TOPIC) == {
            "retention.ms": "-1", "cleanup.policy": "compact",
        }  # fmt: skip

    await eventually(compacted, "the offsets topic's config corrected")
    assert len(await zk.get_children(paths.CONFIG_CHANGES)) == len(before) + 1  # announced
    assert await topics.read_topic_config(zk, "plain") == {"retention.ms": "-1"}  # untouched
