"""The pure parts behind DeleteRecords, DescribeTopicPartitions paging, the cluster id and the
delete-records CLI (no sockets)."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

import pytest

from broker.delete_records import delete_target
from broker.operations.describe_topic_partitions import (
    MAX_PARTITIONS_PER_PAGE,
    Cursor,
    PageEntry,
    page,
)
from broker.partition import low_watermark
from broker.replica_fetcher import follower_log_start
from coordinator.cluster import zk_paths as paths
from coordinator.cluster.cluster_id import get_or_create_cluster_id, random_cluster_id
from coordinator.cluster.zk import ZkError, ZkNodeExists, ZkNoNode
from coordinator.cluster.zk_paths import ClusterId, ZkDataError
from deploy import records_cli
from protocol.errors import OffsetOutOfRangeError

# ----- DeleteRecords ---------------------------------------------------------------------------


def test_delete_target_minus_one_is_the_high_watermark() -> None:
    assert delete_target(-1, 42) == 42
    assert delete_target(0, 42) == 0
    assert delete_target(42, 42) == 42


@pytest.mark.parametrize("offset", [43, -2, -100])
def test_delete_target_outside_zero_to_hw_is_out_of_range(offset: int) -> None:
    with pytest.raises(OffsetOutOfRangeError):
        delete_target(offset, 42)


def test_low_watermark_is_the_smallest_start_over_live_replicas() -> None:
    starts = {2: 10, 3: 4}
    assert low_watermark(12, 1, [1, 2, 3], starts, alive={1, 2, 3}) == 4
    assert low_watermark(12, 1, [1, 2, 3], starts, alive={1, 2}) == 10  # 3 is down: not counted
    assert low_watermark(3, 1, [1, 2, 3], starts, alive={1, 2, 3}) == 3  # the leader's is lowest
    assert low_watermark(12, 1, [1], {}, alive={1}) == 12


def test_low_watermark_waits_for_a_live_follower_not_heard_from() -> None:
    assert low_watermark(12, 1, [1, 2], {}, alive={1, 2}) == -1


def test_follower_log_start_follows_the_leader_bounded_by_its_hw() -> None:
    assert follower_log_start(10, 0, 50) == 10
    assert follower_log_start(10, 10, 50) is None  # already there
    assert follower_log_start(5, 10, 50) is None  # never down
    assert follower_log_start(80, 0, 50) == 50  # not past what it knows is committed
    assert follower_log_start(80, 50, 50) is None


# ----- DescribeTopicPartitions paging ----------------------------------------------------------

TOPICS = [("a", 3), ("b", 2), ("c", 4)]


def test_one_page_when_everything_fits() -> None:
    entries, nxt = page(TOPICS, None, 100)
    assert entries == [PageEntry("a", 0, 3, True), PageEntry("b", 0, 2, True),
                       PageEntry("c", 0, 4, True)]  # fmt: skip
    assert nxt is None


def test_a_page_filling_inside_a_topic_points_at_the_next_partition() -> None:
    entries, nxt = page(TOPICS, None, 4)
    assert entries == [PageEntry("a", 0, 3, True), PageEntry("b", 0, 1, True)]
    assert nxt == Cursor("b", 1)
    entries, nxt = page(TOPICS, nxt, 4)
    assert entries == [PageEntry("b", 1, 2, True), PageEntry("c", 0, 3, True)]
    assert nxt == Cursor("c", 3)
    entries, nxt = page(TOPICS, nxt, 4)
    assert entries == [PageEntry("c", 3, 4, True)]
    assert nxt is None


def test_a_page_filling_at_a_topic_end_points_at_the_next_topic() -> None:
    entries, nxt = page(TOPICS, None, 5)
    assert [e.topic for e in entries] == ["a", "b"]
    assert nxt == Cursor("c", 0)


def test_paging_walks_every_partition_once_whatever_the_limit() -> None:
    for limit in range(1, 11):
        seen: list[tuple[str, int]] = []
        cursor = None
        for _ in range(20):
            entries, cursor = page(TOPICS, cursor, limit)
            assert sum(e.end - e.start for e in entries) <= limit
            seen += [(e.topic, i) for e in entries for i in range(e.start, e.end)]
            if cursor is None:
                break
        assert seen == [(t, i) for t, n in TOPICS for i in range(n)], limit


def test_unknown_topics_are_answered_and_the_limit_is_capped() -> None:
    entries, nxt = page([("a", 1), ("zz", None)], None, 10)
    assert entries == [PageEntry("a", 0, 1, True), PageEntry("zz", 0, 0, False)]
    assert nxt is None
    entries, nxt = page([("big", 5000)], None, 1 << 30)
    assert entries == [PageEntry("big", 0, MAX_PARTITIONS_PER_PAGE, True)]
    assert nxt == Cursor("big", MAX_PARTITIONS_PER_PAGE)


def test_a_cursor_past_a_topics_end_gives_an_empty_slice() -> None:
    entries, nxt = page(TOPICS, Cursor("b", 9), 10)
    assert entries[0] == PageEntry("b", 9, 9, True)
    assert [e.topic for e in entries] == ["b", "c"] and nxt is None


# ----- the cluster id --------------------------------------------------------------------------


def test_random_cluster_ids_are_22_url_safe_characters_of_a_uuid() -> None:
    ids = {random_cluster_id() for _ in range(100)}
    assert len(ids) == 100
    for cid in ids:
        assert len(cid) == 22
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16


def test_cluster_id_znode_is_kafkas_json() -> None:
    assert ClusterId("abc").encode() == b'{"id":"abc","version":"1"}'
    assert ClusterId.decode(b'{"version":"1","id":"xyz"}') == ClusterId("xyz")
    for bad in (b"{}", b'{"id":""}', b'{"id":3}', b"nope"):
        with pytest.raises(ZkDataError):
            ClusterId.decode(bad)


@dataclass
class FakeZk:
    """/cluster/id in memory; `racer` is created by "another broker" just before ours."""

    nodes: dict[str, bytes] = field(default_factory=dict)
    racer: bytes | None = None

    async def get(self, path: str) -> tuple[bytes, int]:
        if path not in self.nodes:
            raise ZkNoNode(path, path)
        return self.nodes[path], 0

    async def create(self, path: str, data: bytes = b"", makepath: bool = False) -> str:
        if self.racer is not None:
            self.nodes[path], self.racer = self.racer, None
        if path in self.nodes:
            raise ZkNodeExists(path, path)
        self.nodes[path] = data
        return path


async def test_the_first_broker_creates_the_id_and_the_others_read_it() -> None:
    zk = FakeZk()
    first = await get_or_create_cluster_id(zk, lambda: "first-id")  # type: ignore[arg-type]
    again = await get_or_create_cluster_id(zk, lambda: "other-id")  # type: ignore[arg-type]
    assert first == again == "first-id"
    assert ClusterId.decode(zk.nodes[paths.CLUSTER_ID]).id == "first-id"


async def test_a_broker_losing_the_create_race_takes_the_winners_id() -> None:
    zk = FakeZk(racer=ClusterId("winner").encode())
    assert await get_or_create_cluster_id(zk, lambda: "loser") == "winner"  # type: ignore[arg-type]


async def test_a_garbled_cluster_id_znode_is_a_zookeeper_error() -> None:
    zk = FakeZk({paths.CLUSTER_ID: b"garbage"})
    with pytest.raises(ZkError, match="/cluster/id"):
        await get_or_create_cluster_id(zk)  # type: ignore[arg-type]


# ----- the CLI's helpers -----------------------------------------------------------------------


def test_before_offset_takes_an_offset_or_hw() -> None:
    assert records_cli.before_offset("17") == 17
    assert records_cli.before_offset("hw") == -1
    assert records_cli.before_offset("-1") == -1
    with pytest.raises(Exception, match="negative"):
        records_cli.before_offset("-5")


def test_offsets_go_before_the_marker() -> None:
    line = "Topic: t Partition: 0 Leader: 1 Replicas: 1,2 Isr: 1"
    assert (
        records_cli.with_offsets(line + "  (under-replicated)", (5, 9))
        == line + " LogStartOffset: 5 HighWatermark: 9  (under-replicated)"
    )
    assert records_cli.with_offsets(line, (0, 3)) == line + " LogStartOffset: 0 HighWatermark: 3"
    assert records_cli.with_offsets(line, None) == line
