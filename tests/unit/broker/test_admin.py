"""Controller-to-broker requests and the admin APIs, over a real socket."""

from __future__ import annotations

from pathlib import Path

from protocol.api.admin import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    SOURCE_TOPIC_CONFIG,
    CreatableTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from protocol.api.controller import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    TopicPartitionRef,
    UpdateMetadataRequest,
)
from protocol.api.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.api.metadata import BrokerInfo, MetadataRequest
from protocol.errors import (
    FencedLeaderEpochError,
    InvalidConfigError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    NotLeaderForPartitionError,
    RequestTimedOutError,
    StaleControllerEpochError,
    TopicAlreadyExistsError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from tests.unit.broker.harness import BROKER_ID, BrokerHarness, FakeTopicStore, running_broker
from tests.unit.broker.helpers import batch, fetch, produce

LIVE = [BrokerInfo(BROKER_ID, "127.0.0.1", 1)]


async def test_stale_controller_epoch_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        b.controller_epoch = 5
        await b.lead("t")
        conn = await b.connect()
        follower_state = b.state("t", 0, leader=2, replicas=[1, 2])
        old = 4
        lai = await conn.send(LeaderAndIsrRequest(0, old, [follower_state], LIVE))
        assert lai.error_code == StaleControllerEpochError.code
        um = await conn.send(UpdateMetadataRequest(0, old, [], LIVE, ["t"]))
        assert um.error_code == StaleControllerEpochError.code
        sr = await conn.send(StopReplicaRequest(0, old, True, [TopicPartitionRef("t", 0)]))
        assert sr.error_code == StaleControllerEpochError.code
        # still the leader, still in the metadata, the log still there
        resp = await conn.send(produce("t", 0, batch(1)))
        assert resp.topics[0].partitions[0].error_code == 0
        meta = await conn.send(MetadataRequest(["t"]))
        assert meta.topics[0].partitions[0].leader == BROKER_ID
        # a newer epoch is obeyed: become follower, produce is refused
        b.controller_epoch = 6
        b.leader_epochs[("t", 0)] = 1
        newer = b.state("t", 0, leader=2, replicas=[1, 2])
        lai = await conn.send(LeaderAndIsrRequest(0, 6, [newer], LIVE))
        assert lai.error_code == 0 and lai.partitions[0].error_code == 0
        resp = await conn.send(produce("t", 0, batch(1)))
        assert resp.topics[0].partitions[0].error_code == NotLeaderForPartitionError.code


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


def _acting_controller(b: BrokerHarness) -> None:
    """Make the fake ZooKeeper call back into the broker as the controller would."""

    async def on_create(name: str, partitions: int) -> None:
        await b.lead(name, partitions)

    async def on_delete(name: str) -> None:
        conn = await b.connect()
        refs = [TopicPartitionRef(name, p) for p in sorted(b.ctx.metadata.topics.get(name, {}))]
        await conn.send(StopReplicaRequest(0, b.controller_epoch, True, refs))
        await conn.send(UpdateMetadataRequest(0, b.controller_epoch, [], LIVE, [name]))

    b.topics.on_create = on_create
    b.topics.on_delete = on_delete


async def test_create_and_delete_topics(tmp_path: Path) -> None:
    store = FakeTopicStore()
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("existing")
        _acting_controller(b)
        conn = await b.connect()
        topics = [
            CreatableTopic("new", 2, 1, [], {"retention.ms": "1000"}),
            CreatableTopic("existing", 1, 1, [], {}),
            CreatableTopic("bad-config", 1, 1, [], {"retention.ms": "soon"}),
            CreatableTopic("too-many-replicas", 1, 3, [], {}),
            CreatableTopic("bad/name", 1, 1, [], {}),
            CreatableTopic("checked", 1, 1, [], {}),
        ]
        store.configs["existing"] = {}
        resp = await conn.send(CreateTopicsRequest(topics[:5], 5000))
        codes = {r.name: r.error_code for r in resp.topics}
        assert codes == {
            "new": 0,
            "existing": TopicAlreadyExistsError.code,
            "bad-config": InvalidConfigError.code,
            "too-many-replicas": InvalidReplicationFactorError.code,
            "bad/name": InvalidTopicError.code,
        }
        assert [c[0] for c in store.created] == ["new"]
        assert (tmp_path / "new-0").is_dir() and (tmp_path / "new-1").is_dir()
        only = await conn.send(CreateTopicsRequest([topics[5]], 5000, validate_only=True))
        assert only.topics[0].error_code == 0 and "checked" not in store.configs
        # a created topic takes produce at once, with its own config
        assert (await conn.send(produce("new", 1, batch(2)))).topics[0].partitions[
            0
        ].error_code == 0
        assert b.log_manager.get("new", 0).config.retention_ms == 1000

        gone = await conn.send(DeleteTopicsRequest(["new", "never"], 5000))
        assert {r.name: r.error_code for r in gone.responses} == {
            "new": 0,
            "never": UnknownTopicOrPartitionError.code,
        }
        assert not (tmp_path / "new-0").exists()
        after = await conn.send(produce("new", 1, batch(2)))
        assert after.topics[0].partitions[0].error_code == UnknownTopicOrPartitionError.code


async def test_create_times_out_without_a_controller(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("x")  # tells the cache broker 1 is live
        conn = await b.connect()
        resp = await conn.send(CreateTopicsRequest([CreatableTopic("slow", 1, 1, [], {})], 50))
        assert resp.topics[0].error_code == RequestTimedOutError.code
        assert b.topics.created == [("slow", 1, 1)]


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
