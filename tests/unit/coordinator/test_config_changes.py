"""Config change notifications: their names and JSON, which ones a broker still has to apply,
which ones a writer purges, and the listener's decisions over an in-memory ZooKeeper."""

from __future__ import annotations

import pytest

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.config_changes import (
    ConfigChangeListener,
    pending_changes,
    sequence_of,
    stale_changes,
)
from coordinator.cluster.zk import ZkNoNode
from coordinator.cluster.zk_paths import ConfigChange, TopicAssignment, TopicConfig, ZkDataError


def change(seq: int) -> str:
    return f"config_change_{seq:010d}"


def test_sequence_of_reads_only_notification_names() -> None:
    assert sequence_of("config_change_0000000042") == 42
    assert sequence_of("config_change_42") is None
    assert sequence_of("isr_change_0000000042") is None
    assert sequence_of("config_change_00000000x2") is None


def test_pending_changes_are_those_after_the_last_applied_oldest_first() -> None:
    children = [change(7), "junk", change(3), change(5)]
    assert pending_changes(children, -1) == [(3, change(3)), (5, change(5)), (7, change(7))]
    assert pending_changes(children, 5) == [(7, change(7))]
    assert pending_changes(children, 7) == []


def test_stale_changes_keep_the_newest() -> None:
    children = [change(s) for s in (9, 1, 5, 3)] + ["junk"]
    assert stale_changes(children, 2) == [change(1), change(3)]
    assert stale_changes(children, 10) == []
    assert stale_changes(children, 0) == [change(s) for s in (1, 3, 5, 9)]


def test_config_change_json_is_kafkas() -> None:
    data = ConfigChange.for_topic("orders").encode()
    assert data == b'{"entity_path":"topics/orders","version":2}'
    assert ConfigChange.decode(data).topic == "orders"
    assert ConfigChange("clients/some-client").topic is None  # Kafka writes those too
    assert ConfigChange("topics/").topic is None
    with pytest.raises(ZkDataError):
        ConfigChange.decode(b'{"version":2}')


class MemoryZk:
    """The two reads the listener makes (get, exists) over a dict of znodes."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}

    async def get(self, path: str) -> tuple[bytes, int]:
        if path not in self.nodes:
            raise ZkNoNode(path, path)
        return self.nodes[path], 0

    async def exists(self, path: str) -> int | None:
        return 0 if path in self.nodes else None

    def topic(self, name: str, config: dict[str, str]) -> None:
        self.nodes[paths.topic_path(name)] = TopicAssignment({0: [1]}).encode()
        self.nodes[paths.topic_config_path(name)] = TopicConfig(config).encode()

    def announce(self, seq: int, data: bytes) -> str:
        self.nodes[f"{paths.CONFIG_CHANGES}/{change(seq)}"] = data
        return change(seq)


def listener(zk: MemoryZk, hosted: set[str]) -> tuple[ConfigChangeListener, list[tuple]]:
    applied: list[tuple] = []
    sink = ConfigChangeListener(
        zk,  # type: ignore[arg-type]  # duck-typed: get and exists are all it calls
        lambda topic, overrides: applied.append((topic, dict(overrides))),
        lambda: hosted,
    )
    return sink, applied


async def test_each_announced_topic_is_read_again_once() -> None:
    zk = MemoryZk()
    zk.topic("a", {"retention.ms": "1"})
    zk.topic("b", {})
    announced = ((4, "a"), (6, "b"), (7, "a"))
    children = [zk.announce(s, ConfigChange.for_topic(t).encode()) for s, t in announced]
    sink, applied = listener(zk, set())
    assert await sink.process(children) == ["a", "b"]
    assert applied == [("a", {"retention.ms": "1"}), ("b", {})]
    assert sink.last_seq == 7
    assert await sink.process(children) == []  # nothing new
    zk.topic("a", {"retention.ms": "2"})
    children.append(zk.announce(9, ConfigChange.for_topic("a").encode()))
    assert await sink.process(children) == ["a"]
    assert applied[-1] == ("a", {"retention.ms": "2"})


async def test_a_purged_notification_rereads_every_hosted_topic() -> None:
    zk = MemoryZk()
    zk.topic("a", {})
    zk.topic("h", {"flush.ms": "5"})
    children = [change(1), zk.announce(2, ConfigChange.for_topic("a").encode())]  # 1: gone
    sink, applied = listener(zk, {"h"})
    assert await sink.process(children) == ["a", "h"]
    assert ("h", {"flush.ms": "5"}) in applied


async def test_deleted_topics_and_foreign_or_bad_notes_are_skipped() -> None:
    zk = MemoryZk()
    children = [
        zk.announce(1, ConfigChange.for_topic("gone").encode()),
        zk.announce(2, ConfigChange("clients/c1").encode()),
        zk.announce(3, b"not json"),
    ]
    sink, applied = listener(zk, set())
    assert await sink.process(children) == ["gone"]
    assert applied == [] and sink.last_seq == 3


async def test_a_failed_read_leaves_the_changes_to_be_read_again() -> None:
    zk = MemoryZk()
    zk.topic("a", {})
    children = [zk.announce(1, ConfigChange.for_topic("a").encode())]

    async def broken_get(path: str) -> tuple[bytes, int]:
        raise RuntimeError("ZooKeeper went away")

    sink, applied = listener(zk, set())
    real_get = zk.get
    zk.get = broken_get  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await sink.process(children)
    assert sink.last_seq == -1
    zk.get = real_get  # type: ignore[method-assign]
    assert await sink.process(children) == ["a"]
    assert applied == [("a", {})]
