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
    UnknownTopicOrPartitionError,
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


async def test_describe_configs_merges_defaults_and_overrides(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"c": {"retention.ms": "1234"}})
    async with running_broker(
        tmp_path, topics=store, topic_defaults={"segment.bytes": "65536"}
    ) as b:
        await b.lead("c")
        conn = await b.connect()
        broker_names = ["port", "fetch.use.sendfile", "log.segment.bytes"]
        req = DescribeConfigsRequest(
            [
                DescribeConfigsResource(RESOURCE_TOPIC, "c", None),
                DescribeConfigsResource(RESOURCE_TOPIC, "c", ["retention.ms"]),
                DescribeConfigsResource(RESOURCE_TOPIC, "nope", None),
                DescribeConfigsResource(RESOURCE_BROKER, str(BROKER_ID), broker_names),
            ]
        )
        res = (await conn.send(req)).results
        entries = {e.name: e for e in res[0].configs}
        assert (entries["retention.ms"].value, entries["retention.ms"].is_default) == (
            "1234",
            False,
        )
        assert (entries["segment.bytes"].value, entries["segment.bytes"].is_default) == (
            "65536",
            True,
        )
        assert [e.name for e in res[1].configs] == ["retention.ms"]
        assert res[2].error_code == UnknownTopicOrPartitionError.code
        broker_entries = {e.name: e for e in res[3].configs}
        assert broker_entries["port"].value == "0" and broker_entries["port"].read_only
        assert broker_entries["port"].source == SOURCE_STATIC_BROKER_CONFIG
        assert broker_entries["fetch.use.sendfile"].is_default
        assert broker_entries["fetch.use.sendfile"].value == "true"
        assert broker_entries["fetch.use.sendfile"].source == SOURCE_DEFAULT_CONFIG
        segment = broker_entries["log.segment.bytes"]  # the topic default, by Kafka's name
        assert (segment.value, segment.source) == ("65536", SOURCE_STATIC_BROKER_CONFIG)
        assert entries["retention.ms"].source == SOURCE_TOPIC_CONFIG
        assert entries["segment.bytes"].source == SOURCE_STATIC_BROKER_CONFIG
        assert entries["flush.ms"].source == SOURCE_DEFAULT_CONFIG
        assert entries["unclean.leader.election.enable"].value == "false"
