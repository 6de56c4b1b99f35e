"""Controller-to-broker requests and the admin APIs, over a real socket."""

from __future__ import annotations

from pathlib import Path

from protocol.api.admin import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    SOURCE_TOPIC_CONFIG,
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from protocol.api.controller import LeaderAndIsrRequest
from protocol.api.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.api.metadata import BrokerInfo
from protocol.errors import (
    FencedLeaderEpochError,
    StaleControllerEpochError,
    UnknownLeaderEpochError,
)
from tests.unit.broker.harness import BROKER_ID, FakeTopicStore, running_broker
from tests.unit.broker.helpers import fetch

LIVE = [BrokerInfo(BROKER_ID, "127.0.0.1", 1)]


async def test_older_leader_epoch_is_refused_per_partition(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        b.leader_epochs[("t", 0)] = 3
        await b.lead("t")
        conn = await b.connect()
        b.leader_epochs[("t", 0)] = 2
        lai = await conn.send(
            LeaderAndIsrRequest(0, 1, [b.state("t", 0, leader=2, replicas=[1, 2])], LIVE)
        )
        assert lai.partitions[0].error_code == StaleControllerEpochError.code
        f = await conn.send(fetch("t", {0: 0}))
        assert f.topics[0].partitions[0].error_code == 0  # still leading

        # a fetch naming an older leader epoch is fenced
        def at_epoch(epoch: int) -> FetchRequest:
            part = FetchPartition(0, 0, 1000, current_leader_epoch=epoch)
            return FetchRequest(-1, 0, 1, 1000, [FetchTopic("t", [part])])

        got = await conn.send(at_epoch(2))
        assert got.topics[0].partitions[0].error_code == FencedLeaderEpochError.code
        got = await conn.send(at_epoch(4))
        assert got.topics[0].partitions[0].error_code == UnknownLeaderEpochError.code
        got = await conn.send(at_epoch(3))
        assert got.topics[0].partitions[0].error_code == 0


async def test_describe_configs_through_the_native_door(tmp_path: Path) -> None:
    """The native door end to end (its entries carry odradek's `is_default`); what each entry
    holds is tested on the operation (tests/unit/broker/operations/test_config_operations.py)."""
    store = FakeTopicStore(configs={"c": {"retention.ms": "1234"}})
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("c")
        conn = await b.connect()
        req = DescribeConfigsRequest(
            [
                DescribeConfigsResource(RESOURCE_TOPIC, "c", ["retention.ms", "flush.ms"]),
                DescribeConfigsResource(RESOURCE_BROKER, str(BROKER_ID), ["port"]),
            ]
        )
        topic, broker = (await conn.send(req)).results
        entries = {e.name: e for e in topic.configs}
        assert set(entries) == {"retention.ms", "flush.ms"}
        retention, flush = entries["retention.ms"], entries["flush.ms"]
        assert (retention.value, retention.is_default, retention.source) == (
            "1234", False, SOURCE_TOPIC_CONFIG,
        )  # fmt: skip
        assert (flush.is_default, flush.source) == (True, SOURCE_DEFAULT_CONFIG)
        (port,) = broker.configs
        assert (port.value, port.read_only, port.source) == ("0", True, SOURCE_STATIC_BROKER_CONFIG)
