"""Cluster metadata snapshots and bootstrap parsing; the pool against the fake cluster."""

import asyncio

import pytest

from client.admin import AsyncAdmin
from client.cluster import Cluster, ClusterMetadata, parse_bootstrap
from protocol.api.metadata import (
    BrokerInfo,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from protocol.errors import NetworkError, RequestTimedOutError, UsageError
from tests.unit.client.fake_broker import FakeState, bootstrap


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:1, b:2,") == [("a", 1), ("b", 2)]
    assert parse_bootstrap(["[::1]:9092"]) == [("::1", 9092)]
    for bad in ("", "host", "host:", "host:0", "host:x", ":9092"):
        with pytest.raises(UsageError):
            parse_bootstrap(bad)


def test_metadata_snapshot_lookups() -> None:
    resp = MetadataResponse(
        [BrokerInfo(1, "h1", 1), BrokerInfo(2, "h2", 2)],
        "cid",
        2,
        [
            TopicMetadata(0, "t", False, [
                PartitionMetadata(0, 1, 2, 7, [2, 1], [2], []),
                PartitionMetadata(0, 0, 1, 3, [1, 2], [1, 2], []),
                PartitionMetadata(5, 2, -1, 0, [3], [], [3]),
            ]),
            TopicMetadata(3, "missing", False, []),
        ],
    )  # fmt: skip
    meta = ClusterMetadata.from_response(resp)
    assert meta.controller_id == 2 and meta.cluster_id == "cid"
    assert meta.num_partitions("t") == 3 and meta.num_partitions("missing") is None
    assert meta.topic_errors == {"missing": 3}
    assert [meta.leader_for("t", p) for p in range(4)] == [1, 2, -1, -1]
    assert meta.leader_epoch_for("t", 1) == 7
    assert meta.available_partitions("t") == [0, 1]
    assert meta.partitions_for("t")[1].isr == (2,)


async def test_pool_reuses_and_reopens_connections(fake3: FakeState) -> None:
    cluster = Cluster(bootstrap(fake3), retry_backoff_ms=1)
    meta = await cluster.request_update()
    assert sorted(meta.brokers) == [1, 2, 3]
    conn = await cluster.connection(2)
    assert await cluster.connection(2) is conn
    fake3.brokers[2].kill_connections()
    for _ in range(100):
        if conn.closed:
            break
        await asyncio.sleep(0.01)
    again = await cluster.connection(2)
    assert again is not conn and not again.closed
    with pytest.raises(NetworkError):
        await cluster.connection(9)
    await cluster.close()
    with pytest.raises(NetworkError):
        await cluster.request_update()


async def test_concurrent_refreshes_share_one_request(fake1: FakeState) -> None:
    cluster = Cluster(bootstrap(fake1), retry_backoff_ms=1)
    before = fake1.requests["Metadata"]
    await asyncio.gather(*[cluster.request_update() for _ in range(10)])
    assert fake1.requests["Metadata"] == before + 1
    await cluster.close()


async def test_a_read_passes_over_a_broker_that_accepts_but_never_answers(
    fake3: FakeState,
) -> None:
    """A paused broker's kernel still takes connections: a request any broker answers is asked
    of the next broker when it times out there (`read`); other requests keep the error."""
    fake3.create_topic("p", 3)
    cluster = Cluster(bootstrap(fake3), request_timeout_ms=200, retry_backoff_ms=1)
    await cluster.request_update()
    await cluster.connection(2)  # connected brokers are asked first
    fake3.paused.add(2)
    with pytest.raises(RequestTimedOutError):
        await cluster.send_to_any(MetadataRequest(["p"]))
    resp = await cluster.send_to_any(MetadataRequest(["p"]), read=True)
    assert [t.name for t in resp.topics] == ["p"] and len(resp.topics[0].partitions) == 3
    await cluster.close()
    async with AsyncAdmin(bootstrap(fake3), request_timeout_ms=200) as admin:
        await admin.describe_cluster()
        for node, conn in admin._cluster._conns.items():
            if node != 2:
                conn.abort()
        await admin._cluster.connection(2)  # the one connected broker: asked first
        (desc,) = await admin.describe_topics(["p"])
    assert desc.error_code == 0 and len(desc.partitions) == 3
