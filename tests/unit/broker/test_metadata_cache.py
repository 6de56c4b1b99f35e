"""The metadata cache: what UpdateMetadata says, and what Metadata answers from it."""

from __future__ import annotations

import asyncio

from broker.metadata_cache import MetadataCache
from protocol.api.controller import PartitionState, UpdateMetadataRequest
from protocol.api.metadata import BrokerInfo
from protocol.errors import LeaderNotAvailableError, UnknownTopicOrPartitionError


def _state(topic: str, p: int, leader: int, replicas: list[int]) -> PartitionState:
    return PartitionState(topic, p, 1, leader, 0, [leader] if leader >= 0 else [], 0, replicas, [])


def _update(
    states: list[PartitionState], live: list[int], deleted: tuple[str, ...] = ()
) -> UpdateMetadataRequest:
    brokers = [BrokerInfo(i, "127.0.0.1", 9000 + i) for i in live]
    return UpdateMetadataRequest(2, 1, states, brokers, list(deleted))


def test_describe_all_and_unknown() -> None:
    cache = MetadataCache()
    cache.apply(
        _update(
            [_state("b", 0, 1, [1]), _state("a", 1, 2, [2, 1]), _state("a", 0, 1, [1, 2])], [1, 2]
        )
    )
    assert cache.controller_id == 2
    assert cache.live_broker_ids() == [1, 2]
    topics = cache.describe(None)
    assert [t.name for t in topics] == ["a", "b"]
    assert [p.partition for p in topics[0].partitions] == [0, 1]
    assert topics[0].partitions[1].leader == 2
    unknown = cache.describe(["zz"])[0]
    assert unknown.error_code == UnknownTopicOrPartitionError.code
    assert unknown.partitions == []


def test_the_coordinators_topics_are_internal() -> None:
    """Kafka's Topic.INTERNAL_TOPICS: Metadata marks the coordinators' logs internal (the
    native door said False for both, and the Kafka door for __transaction_state)."""
    from coordinator.group.records import OFFSETS_TOPIC
    from coordinator.share.records import SHARE_STATE_TOPIC
    from coordinator.transaction.records import TRANSACTION_STATE_TOPIC

    cache = MetadataCache()
    names = [OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_STATE_TOPIC, "events"]
    cache.apply(_update([_state(n, 0, 1, [1]) for n in names], [1]))
    internal = {t.name: t.is_internal for t in cache.describe(None)}
    assert internal == {OFFSETS_TOPIC: True, TRANSACTION_STATE_TOPIC: True,
                        SHARE_STATE_TOPIC: True, "events": False}  # fmt: skip


def test_offline_partitions_have_no_leader() -> None:
    cache = MetadataCache()
    cache.apply(_update([_state("t", 0, -1, [3]), _state("t", 1, 3, [3, 1])], [1]))
    p0, p1 = cache.describe(["t"])[0].partitions
    assert (p0.leader, p0.error_code) == (-1, LeaderNotAvailableError.code)
    # leader 3 is not live: offline too, and listed among offline replicas
    assert (p1.leader, p1.error_code) == (-1, LeaderNotAvailableError.code)
    assert p1.offline_replicas == [3]
    assert not cache.all_partitions_led("t")


def test_deleted_topics_disappear() -> None:
    cache = MetadataCache()
    cache.apply(_update([_state("t", 0, 1, [1])], [1]))
    assert cache.has_topic("t")
    cache.apply(_update([], [1], ("t",)))
    assert not cache.has_topic("t")


async def test_wait_until_wakes_on_update() -> None:
    cache = MetadataCache()
    waiter = asyncio.create_task(cache.wait_until(lambda: cache.all_partitions_led("t"), 5000))
    await asyncio.sleep(0)
    assert not waiter.done()
    cache.apply(_update([_state("t", 0, 1, [1])], [1]))
    assert await asyncio.wait_for(waiter, 1)


async def test_wait_until_times_out() -> None:
    cache = MetadataCache()
    assert not await cache.wait_until(lambda: cache.has_topic("t"), 10)
