"""The metadata APIs' operations (broker/operations/), each tested once, whichever door serves
it: called directly with a `Session`, on an in-process broker (tests/unit/broker/harness.py)
whose metadata cache the test fills as the controller would, with a real Authorizer where a
test says so. The doors' codecs are tested apart (test_metadata_codecs.py).
"""

from __future__ import annotations

import dataclasses
import inspect
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker import apis
from broker.config import BrokerConfig
from broker.context import ClusterIdentity
from broker.metadata_cache import MetadataCache
from broker.operations import (
    alter_replica_log_dirs,
    api_versions,
    describe_cluster,
    describe_log_dirs,
    describe_topic_partitions,
    metadata,
)
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from protocol.acl import AclOperation, PatternType, ResourceType
from protocol.api.controller import UpdateMetadataRequest
from protocol.api.metadata import KAFKA_DOOR, NATIVE_DOOR, BrokerInfo
from protocol.errors import (
    ClusterAuthorizationFailedError,
    KafkaStorageError,
    LeaderNotAvailableError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from protocol.principal import KafkaPrincipal
from protocol.topic_ids import encode_topic_id, new_topic_id
from tests.unit.broker.harness import BROKER_ID, BrokerHarness, FakeTopicStore, running_broker
from tests.unit.broker.test_acl_rules import grant

ALICE = KafkaPrincipal.user("alice")
SESSION = Session(principal=ALICE, peer_host="127.0.0.1", peer_port=5555)
TOPIC_AUTH = TopicAuthorizationFailedError.code
UNKNOWN = UnknownTopicOrPartitionError.code
CLUSTER_AUTH = ClusterAuthorizationFailedError.code
LIVE = [BrokerInfo(BROKER_ID, "127.0.0.1", 1)]


def _cache() -> MetadataCache:
    cache = MetadataCache()
    cache.apply(UpdateMetadataRequest(1, 1, [], LIVE, []))
    return cache


# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "AlterReplicaLogDirs": alter_replica_log_dirs.AlterReplicaLogDirs((("/x", (("t", 0),)),)),
    "ApiVersions": api_versions.ApiVersions(True),
    "DescribeCluster": describe_cluster.DescribeCluster(1, True),
    "DescribeLogDirs": describe_log_dirs.DescribeLogDirs(None),
    "DescribeTopicPartitions": describe_topic_partitions.DescribeTopicPartitions(("t",), None, 9),
    "Metadata": metadata.Metadata(("t", "new"), KAFKA_DOOR, True, True),
}
CONTEXTS: dict[str, Any] = {
    "DescribeCluster": {"metadata": _cache(), "cluster": ClusterIdentity("c")},
    "DescribeTopicPartitions": {"metadata": _cache()},
    "DescribeLogDirs": {"replicas": SimpleNamespace(log_manager=SimpleNamespace(
        log_dirs=[Path("/nonexistent/odradek")], failures={}, logs=lambda: [],
        futures=dict))},
    "Metadata": {"metadata": _cache(), "cluster": ClusterIdentity("c"), "topics": FakeTopicStore(),
                 "config": BrokerConfig(broker_id=BROKER_ID, log_dir=Path("/nonexistent"))},
}  # fmt: skip


async def run(operation: Any, ctx: Any, request: Any, session: Session = SESSION) -> Any:
    result = operation(ctx, session, request)
    return await result if inspect.isawaitable(result) else result


async def give_id(b: BrokerHarness, topic: str) -> uuid.UUID:
    """Give a one-partition topic an id, as the controller announces it (KIP-516)."""
    topic_id = new_topic_id()
    state = dataclasses.replace(b.state(topic, 0), topic_id=encode_topic_id(topic_id))
    conn = await b.connect()
    um = UpdateMetadataRequest(0, b.controller_epoch, [state], [b.broker_info()], [])
    assert (await conn.send(um)).error_code == 0
    return topic_id


async def test_metadata_answers_from_the_cache(tmp_path: Path) -> None:
    """Moved from test_admin.py (the native door's): the controller, every topic by name, an
    offline partition LEADER_NOT_AVAILABLE, an unknown topic in its own entry, in the order
    asked; brokers at the endpoint of the door asked through."""
    async with running_broker(tmp_path) as b:
        await b.lead("a", partitions=2)
        conn = await b.connect()
        um = UpdateMetadataRequest(7, 1, [b.state("dark", 0, leader=-1, replicas=[3])],
                                   [b.broker_info()], [])  # fmt: skip
        assert (await conn.send(um)).error_code == 0
        meta = await run(metadata.run, b.ctx, metadata.Metadata(None))
        assert meta.controller_id == 7
        assert [t.name for t in meta.topics] == ["a", "dark"]
        assert [p.leader for p in meta.topics[0].partitions] == [BROKER_ID, BROKER_ID]
        dark = meta.topics[1].partitions[0]
        assert (dark.leader, dark.error_code) == (-1, LeaderNotAvailableError.code)
        assert [(x.host, x.port) for x in meta.brokers] == [("127.0.0.1", b.port)]
        one = await run(metadata.run, b.ctx, metadata.Metadata(("nope", "a"), KAFKA_DOOR))
        assert [(t.name, t.error_code) for t in one.topics] == [("nope", UNKNOWN), ("a", 0)]
        assert [(x.host, x.port) for x in one.brokers] == [("127.0.0.1", b.kafka_port)]
        assert one.topic_ids == {} and one.topic_operations == {}  # not asked: not looked up


async def test_metadata_auto_creates_when_asked_allowed_and_enabled(tmp_path: Path) -> None:
    """Kafka's rule on both doors: an unknown name is created when the request allows it and
    auto.create.topics.enable is on, answered LEADER_NOT_AVAILABLE meanwhile; a bad name is
    answered why; with ACLs it takes Create (on the cluster, or on the topic)."""
    async with running_broker(tmp_path) as b:
        await b.lead("t")  # a live broker to place replicas on
        asked = metadata.Metadata(("auto", "bad/name"), NATIVE_DOOR, True)
        codes = {t.name: t.error_code for t in (await run(metadata.run, b.ctx, asked)).topics}
        assert codes["auto"] == LeaderNotAvailableError.code
        assert codes["bad/name"] not in (0, UNKNOWN, LeaderNotAvailableError.code)
        assert [name for name, _, _ in b.topics.created] == ["auto"]
        not_allowed = metadata.Metadata(("other",), NATIVE_DOOR, False)
        assert (await run(metadata.run, b.ctx, not_allowed)).topics[0].error_code == UNKNOWN
        b.install_authorizer(Authorizer(AclCache()))
        grant(b.ctx.authorizer, AclOperation.DESCRIBE, ResourceType.TOPIC, "other")
        allowed = metadata.Metadata(("other",), KAFKA_DOOR, True)
        assert (await run(metadata.run, b.ctx, allowed)).topics[0].error_code == TOPIC_AUTH
        grant(b.ctx.authorizer, AclOperation.CREATE, ResourceType.TOPIC, "other")
        assert (await run(metadata.run, b.ctx, allowed)).topics[0].error_code != TOPIC_AUTH
        assert [name for name, _, _ in b.topics.created] == ["auto", "other"]
    async with running_broker(tmp_path / "off", auto_create_topics_enable=False) as b:
        asked = metadata.Metadata(("auto",), KAFKA_DOOR, True)
        assert (await run(metadata.run, b.ctx, asked)).topics[0].error_code == UNKNOWN
        assert b.topics.created == []


async def test_metadata_hides_what_may_not_be_described(tmp_path: Path) -> None:
    """Moved from test_acl_rules.py: all topics leaves out the others; a named one is
    TOPIC_AUTHORIZATION_FAILED whether or not it exists, without its id; one asked by id is
    answered by its id alone (Kafka: the id is not secret, the name is)."""
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        await b.lead("orders")
        solo = await give_id(b, "solo")
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        everything = metadata.Metadata(None, KAFKA_DOOR, with_ids=True)
        assert (await run(metadata.run, b.ctx, everything)).topics == []
        grant(authz, AclOperation.READ, ResourceType.TOPIC, "ord",
              pattern_type=PatternType.PREFIXED)  # Read implies Describe  # fmt: skip
        shown = await run(metadata.run, b.ctx, everything)
        assert [t.name for t in shown.topics] == ["orders"]
        named = await run(
            metadata.run, b.ctx, metadata.Metadata(("orders", "t", "missing", solo), with_ids=True)
        )
        assert [(t.name, t.error_code) for t in named.topics] == [
            ("orders", 0), ("t", TOPIC_AUTH), ("missing", TOPIC_AUTH)]  # fmt: skip
        assert named.by_id == ((solo, TOPIC_AUTH),)
        assert set(named.topic_ids) == {"orders"}  # no id for what may not be described
        grant(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, "solo")
        by_id = await run(metadata.run, b.ctx, metadata.Metadata((solo,), with_ids=True))
        assert [t.name for t in by_id.topics] == ["solo"] and by_id.by_id == ()
        assert by_id.topic_ids == {"solo": solo}


async def test_metadata_answers_an_unknown_id_by_its_id_alone(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        nobody = new_topic_id()
        result = await run(metadata.run, b.ctx, metadata.Metadata((nobody,), with_ids=True))
        assert result.topics == [] and result.by_id == ((nobody, UnknownTopicIdError.code),)


async def test_metadata_gives_authorized_operations_only_when_asked(tmp_path: Path) -> None:
    """KIP-430: the cluster's operations (0 without Describe on the cluster) and each shown
    topic's, when asked; not asked is INT32_MIN."""
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
        quiet = await run(metadata.run, b.ctx, metadata.Metadata(("t",)))
        assert quiet.cluster_operations == metadata.NO_OPERATIONS
        asked = metadata.Metadata(("t",), cluster_operations=True, topic_operations=True)
        result = await run(metadata.run, b.ctx, asked)
        assert result.cluster_operations == 0
        assert result.topic_operations["t"] & (1 << AclOperation.DESCRIBE.value)
        grant(authz, AclOperation.DESCRIBE, ResourceType.CLUSTER)
        assert (await run(metadata.run, b.ctx, asked)).cluster_operations > 0


def test_api_versions_lists_the_kafka_doors_table_and_refuses_an_unserved_version() -> None:
    """The list is the whole table's (operations and legacy handlers), by key; an unserved
    version (the codec hands it over unread) gets it with UNSUPPORTED_VERSION (KIP-511)."""
    served = {18: (0, 4), 3: (0, 13)}
    run_it = api_versions.answering(served)
    ok = run_it(SimpleNamespace(), SESSION, api_versions.ApiVersions(True))
    assert ok == api_versions.ApiVersionsResult(
        0, ((3, 0, 13), (18, 0, 4)), (("transaction.version", 0, 2),),
        (("transaction.version", 2),), 0,
    )  # fmt: skip
    too_new = run_it(SimpleNamespace(), SESSION, api_versions.ApiVersions(False))
    assert too_new.error_code == UnsupportedVersionError.code and too_new.apis == ok.apis
    table = apis.kafka_handler(apis.BY_KEY[18].key)
    assert table is not None
    listed = apis.BY_KEY[18].operation(SimpleNamespace(), SESSION, api_versions.ApiVersions(True))
    assert {k: (lo, hi) for k, lo, hi in listed.apis} == apis.KAFKA_SERVED


async def test_describe_cluster_gives_the_kafka_endpoints_or_refuses_controllers(
    tmp_path: Path,
) -> None:
    """Brokers at the Kafka endpoint of the listener asked on, the controller and the cluster
    id; endpoint type 2 (KRaft controllers) is UNSUPPORTED_ENDPOINT_TYPE (moved from
    test_kafka_admin_logs.py); KIP-430 operations only when asked, 0 without Describe."""
    async with running_broker(tmp_path, cluster_id="cid") as b:
        await b.lead("t")
        ok = describe_cluster.run(b.ctx, SESSION, describe_cluster.DescribeCluster())
        assert (ok.error_code, ok.cluster_id, ok.controller_id) == (0, "cid", 0)
        assert [(x.node_id, x.port) for x in ok.brokers] == [(BROKER_ID, b.kafka_port)]
        assert ok.cluster_operations == describe_cluster.NO_OPERATIONS
        kraft = describe_cluster.run(b.ctx, SESSION, describe_cluster.DescribeCluster(2))
        assert kraft.error_code == describe_cluster.UNSUPPORTED_ENDPOINT_TYPE
        assert kraft.brokers == () and kraft.endpoint_type == 2
        b.install_authorizer(Authorizer(AclCache()))
        asked = describe_cluster.DescribeCluster(1, True)
        assert describe_cluster.run(b.ctx, SESSION, asked).cluster_operations == 0
        grant(b.ctx.authorizer, AclOperation.DESCRIBE, ResourceType.CLUSTER)
        assert describe_cluster.run(b.ctx, SESSION, asked).cluster_operations > 0


async def test_describe_topic_partitions_hides_what_may_not_be_described(
    tmp_path: Path,
) -> None:
    """Every topic: those the principal may Describe; a named one it may not is
    TOPIC_AUTHORIZATION_FAILED without its id, after the others; a cursor outside the topics
    named is INVALID_REQUEST on each (the paging itself: test_admin_logs_decisions.py, and
    through the Kafka door test_kafka_admin_logs.py)."""
    dtp = describe_topic_partitions
    async with running_broker(tmp_path) as b:
        await b.lead("a", partitions=2)
        solo = await give_id(b, "solo")
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, "solo")
        every = dtp.run(b.ctx, SESSION, dtp.DescribeTopicPartitions((), None, 100))
        assert [(t.name, t.topic_id, len(t.partitions)) for t in every.topics] == [
            ("solo", solo, 1)]  # fmt: skip
        assert every.topics[0].authorized_operations & (1 << AclOperation.DESCRIBE.value)
        named = dtp.run(b.ctx, SESSION, dtp.DescribeTopicPartitions(("solo", "a"), None, 100))
        assert [(t.name, t.error_code, t.topic_id) for t in named.topics] == [
            ("solo", 0, solo), ("a", TOPIC_AUTH, None)]  # fmt: skip
        outside = dtp.DescribeTopicPartitions(("solo",), dtp.Cursor("a", 0), 100)
        refused = dtp.run(b.ctx, SESSION, outside)
        assert [(t.name, t.error_code) for t in refused.topics] == [
            ("solo", dtp.InvalidRequestError.code)]  # fmt: skip


async def test_describe_log_dirs_refuses_without_describe_and_reports_a_lost_directory(
    tmp_path: Path,
) -> None:
    """Without Describe on the cluster: CLUSTER_AUTHORIZATION_FAILED and no directories; the
    logs asked for (sizes and lags: test_kafka_admin_logs.py through the Kafka door); a
    directory that is gone: KAFKA_STORAGE_ERROR and no logs."""
    async with running_broker(tmp_path / "logs") as b:
        await b.lead("t", partitions=2)
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        asked = describe_log_dirs.DescribeLogDirs(frozenset({("t", 1), ("t", 7)}))
        refused = describe_log_dirs.run(b.ctx, SESSION, asked)
        assert refused == describe_log_dirs.DescribeLogDirsResult(CLUSTER_AUTH, ())
        grant(authz, AclOperation.DESCRIBE, ResourceType.CLUSTER)
        (found,) = describe_log_dirs.run(b.ctx, SESSION, asked).dirs
        assert found.error_code == 0 and found.path == str((tmp_path / "logs").absolute())
        assert [(p.topic, p.partition, p.offset_lag) for p in found.partitions] == [("t", 1, 0)]
        (tmp_path / "logs").rename(tmp_path / "moved")
        (gone,) = describe_log_dirs.run(b.ctx, SESSION, asked).dirs
        assert gone.error_code == KafkaStorageError.code and gone.partitions == ()
        (tmp_path / "moved").rename(tmp_path / "logs")
