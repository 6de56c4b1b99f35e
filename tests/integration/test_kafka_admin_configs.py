"""Kafka admin clients against a real odradek cluster: configs described and altered, partitions
added, through each broker's Kafka listener; every result checked against what odradek's own
Admin and `odradek topics describe` see, and the changes taken effect on every broker.

kafka-python 3's KafkaAdminClient and confluent-kafka's AdminClient (librdkafka), each as a
user would call it; `odradek topics alter-config` / `add-partitions` the other way round.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from client import Admin
from client.types import NewTopic
from deploy.cluster import LocalCluster
from protocol.api.admin import TYPE_LIST, TYPE_LONG
from protocol.api.metadata import MetadataRequest
from protocol.kafka.versions import DESCRIBE_CONFIGS
from protocol.topic_config import IN_EFFECT, TOPIC_CONFIGS
from tests.fixtures.cluster import run_odradek
from tests.integration import kafka_wire
from tests.integration.kafka_clients import CLIENTS, Rec
from transport.connection import BrokerConnection

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _eventually(check: Callable[[], bool], what: str, timeout_s: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def kafka_python(cluster3: LocalCluster) -> Iterator[Any]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster3.kafka_bootstrap)
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture
def confluent(cluster3: LocalCluster) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster3.kafka_bootstrap})


def _create(cluster: LocalCluster, name: str, partitions: int, rf: int, **configs: str) -> None:
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(name, partitions, rf, configs)])
    _known_everywhere(cluster, name, partitions)


def _known_everywhere(cluster: LocalCluster, topic: str, partitions: int) -> None:
    """Wait until every broker's metadata has the topic's partitions, all led: a Kafka client
    may ask any of them, and a broker answers as its own metadata cache says (as Kafka's)."""

    async def known(host: str, port: int) -> bool:
        conn = await BrokerConnection.connect(host, port, client_id="test")
        try:
            (t,) = (await conn.send(MetadataRequest([topic]))).topics
        finally:
            await conn.close()
        return (
            t.error_code == 0
            and sorted(p.partition for p in t.partitions) == list(range(partitions))
            and all(p.leader >= 0 for p in t.partitions)
        )

    for where in cluster.bootstrap.split(","):
        host, _, port = where.rpartition(":")
        _eventually(
            lambda h=host, p=int(port): asyncio.run(known(h, p)), f"{topic} known at {where}"
        )


def _native_configs(cluster: LocalCluster, topic: str) -> dict[str, tuple[str | None, bool]]:
    """{name: (value, is_default)} as odradek's own Admin sees them."""
    with Admin(cluster.bootstrap) as admin:
        entries = admin.describe_configs([topic])[topic]
    return {name: (e.value, e.is_default) for name, e in entries.items()}


def _cli_describe(cluster: LocalCluster, topic: str) -> list[str]:
    done = run_odradek("topics", "describe", topic, "--bootstrap", cluster.bootstrap)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _confluent_wait(futures: dict[Any, Any]) -> dict[Any, Any]:
    return {key: f.result(timeout=TIMEOUT_S) for key, f in futures.items()}


# ----- describing ---------------------------------------------------------------------------


def test_kafka_python_describes_what_the_native_admin_sees(
    cluster3: LocalCluster, kafka_python: Any
) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = _topic("describe")
    _create(cluster3, topic, 2, 2, **{"retention.ms": "3600000", "flush.ms": "1000"})
    got = kafka_python.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
    )["topic"][topic]
    native = _native_configs(cluster3, topic)
    assert {name: c["value"] for name, c in got.items()} == {n: v for n, (v, _) in native.items()}
    assert got["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"  # Kafka's name for 1
    assert got["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    modified = kafka_python.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    assert set(modified["topic"][topic]) == {"retention.ms", "flush.ms"}
    assert "Configs: flush.ms=1000,retention.ms=3600000" in _cli_describe(cluster3, topic)[0]

    broker = kafka_python.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, "2")], config_filter="all"
    )["broker"]["2"]
    assert broker["broker.id"]["value"] == "2"
    assert broker["num.partitions"]["value"] == "1"
    assert broker["message.max.bytes"]["config_source"] == "DEFAULT_CONFIG"
    # the dynamic broker configs may change live; the others are read-only
    assert broker["num.partitions"]["read_only"] and not broker["message.max.bytes"]["read_only"]


def test_confluent_describes_sources_and_broker_settings(
    cluster3: LocalCluster, confluent: Any
) -> None:
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

    topic = _topic("describe-c")
    _create(cluster3, topic, 1, 1, **{"retention.bytes": "123456"})
    topic_res = ConfigResource(ResourceType.TOPIC, topic)
    broker_res = ConfigResource(ResourceType.BROKER, "1")
    found = _confluent_wait(confluent.describe_configs([topic_res, broker_res]))
    entries = next(v for k, v in found.items() if k.restype == ResourceType.TOPIC)
    assert entries["retention.bytes"].value == "123456"
    assert entries["retention.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["max.message.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert not entries["retention.bytes"].is_read_only
    broker = next(v for k, v in found.items() if k.restype == ResourceType.BROKER)
    assert broker["auto.create.topics.enable"].value == "true"
    assert broker["default.replication.factor"].is_read_only


def test_kafka_python_broker_resource_says_what_its_file_sets(
    cluster3: LocalCluster, kafka_python: Any
) -> None:
    """kafka-python's expectation: a config set in the broker's file is STATIC_BROKER_CONFIG
    (the test cluster's broker.toml sets host and zookeeper_session_timeout_ms; host to its
    default value, which is still a setting the file gives)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    res = [ConfigResource(ConfigResourceType.BROKER, "1")]
    static = kafka_python.describe_configs(res, config_filter="static")["broker"]["1"]
    for name in ("host.name", "zookeeper.session.timeout.ms", "broker.id", "log.dir"):
        assert static[name]["config_source"] == "STATIC_BROKER_CONFIG", name
    every = kafka_python.describe_configs(res, include_synonyms=True, config_filter="all")
    broker = every["broker"]["1"]
    assert broker["host.name"]["value"] == "127.0.0.1"
    assert broker["log.cleanup.policy"]["value"] == "delete"  # a topic default, by its broker name
    assert broker["log.cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
    assert broker["message.max.bytes"]["config_source"] == "DEFAULT_CONFIG"


def test_confluent_describes_synonyms_types_and_docs(
    cluster3: LocalCluster, confluent: Any
) -> None:
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

    topic = _topic("synonyms")
    _create(cluster3, topic, 1, 1, **{"cleanup.policy": "compact"})
    found = _confluent_wait(confluent.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]))
    (entries,) = found.values()
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source) == ("compact", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert [(s.name, s.value, s.source) for s in policy.synonyms.values()] == [
        ("cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG.value),
    ]
    assert not policy.is_sensitive and not policy.is_read_only
    ratio = entries["min.cleanable.dirty.ratio"]
    assert (ratio.value, ratio.source) == ("0.5", ConfigSource.DEFAULT_CONFIG.value)
    assert "remote.storage.enable" not in entries  # refused configs are not described


def test_every_config_of_the_registry_is_described_with_docs(
    cluster3: LocalCluster, kafka_python: Any
) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = _topic("docs")
    _create(cluster3, topic, 1, 1)
    got = kafka_python.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
    )["topic"][topic]
    assert set(got) == set(IN_EFFECT)
    resource = kafka_wire.nested(
        DESCRIBE_CONFIGS,
        4,
        "DescribeConfigsResource",
        resource_type=2,
        resource_name=topic,
        configuration_keys=None,
    )
    for with_docs in (True, False):
        answer = kafka_wire.call(
            kafka_wire.addresses(cluster3.kafka_bootstrap)[0], DESCRIBE_CONFIGS, 4,
            resources=(resource,), include_synonyms=False, include_documentation=with_docs,
        )  # fmt: skip
        entries = {e.name: e for e in answer.results[0].configs}
        jitter = entries["segment.jitter.ms"]
        assert jitter.documentation == (TOPIC_CONFIGS[jitter.name].doc if with_docs else None)
        assert (jitter.config_type, entries["cleanup.policy"].config_type) == (TYPE_LONG, TYPE_LIST)


# ----- altering -----------------------------------------------------------------------------


def test_confluent_incremental_alter_is_seen_natively_and_by_the_cli(
    cluster3: LocalCluster, confluent: Any
) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    topic = _topic("incr")
    _create(cluster3, topic, 3, 3, **{"retention.ms": "3600000", "flush.ms": "1000"})
    changes = [
        ConfigEntry("retention.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("flush.ms", None, incremental_operation=AlterConfigOpType.DELETE),
    ]
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=changes)
    _confluent_wait(confluent.incremental_alter_configs([res]))
    native = _native_configs(cluster3, topic)
    assert native["retention.ms"] == ("3600000", False)  # kept
    assert native["retention.bytes"] == ("1048576", False)
    assert native["flush.ms"][1]  # back to the default
    header = _cli_describe(cluster3, topic)[0]
    assert header.endswith("Configs: retention.bytes=1048576,retention.ms=3600000")


def test_confluent_appends_and_subtracts_cleanup_policy(
    cluster3: LocalCluster, confluent: Any
) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    topic = _topic("policy")
    _create(cluster3, topic, 1, 1)

    def alter(op: AlterConfigOpType, value: str) -> str | None:
        change = [ConfigEntry("cleanup.policy", value, incremental_operation=op)]
        res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=change)
        _confluent_wait(confluent.incremental_alter_configs([res]))
        return _native_configs(cluster3, topic)["cleanup.policy"][0]

    assert alter(AlterConfigOpType.APPEND, "compact") == "delete,compact"  # onto the default
    assert alter(AlterConfigOpType.SUBTRACT, "delete") == "compact"
    assert alter(AlterConfigOpType.APPEND, "compact") == "compact"  # already there


def test_unknown_and_refused_configs_are_invalid_config_saying_why(
    cluster3: LocalCluster, confluent: Any
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic as KafkaNewTopic

    refused = _topic("tiered")
    unknown = _topic("unknown")
    futures = confluent.create_topics([
        KafkaNewTopic(refused, 1, 1, config={"remote.storage.enable": "true"}),
        KafkaNewTopic(unknown, 1, 1, config={"no.such.config": "1"}),
    ])  # fmt: skip
    errors = {}
    for name, future in futures.items():
        with pytest.raises(KafkaException) as exc:
            future.result(timeout=TIMEOUT_S)
        errors[name] = exc.value.args[0]
    assert {e.code() for e in errors.values()} == {KafkaError.INVALID_CONFIG}
    assert "odradek has no tiered storage" in errors[refused].str()
    assert "unknown topic config 'no.such.config'" in errors[unknown].str()


def test_the_offsets_topic_is_compacted(cluster3: LocalCluster) -> None:
    kafka_wire.ready_coordinator(cluster3.kafka_bootstrap, "compacted-group")  # creates it
    own = {n: v for n, (v, default) in _native_configs(cluster3, "__consumer_offsets").items()
           if not default}  # fmt: skip
    assert own == {"cleanup.policy": "compact", "segment.bytes": "104857600"}


def test_refusals_come_back_per_resource(
    cluster3: LocalCluster, confluent: Any, kafka_python: Any
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    topic = _topic("refuse")
    _create(cluster3, topic, 1, 1)
    bad = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)
    ])  # fmt: skip
    broker = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)
    ])  # fmt: skip
    futures = confluent.incremental_alter_configs([bad, broker])
    errors = {}
    for res, future in futures.items():
        with pytest.raises(KafkaException) as exc:
            future.result(timeout=TIMEOUT_S)
        errors[res.restype] = exc.value.args[0]
    assert errors[ResourceType.TOPIC].code() == KafkaError.INVALID_CONFIG
    assert errors[ResourceType.BROKER].code() == KafkaError.INVALID_REQUEST
    # a dynamic broker config may not be one that needs a restart
    assert "num.partitions cannot be updated dynamically; it needs a broker restart" in (
        errors[ResourceType.BROKER].str()
    )
    assert _native_configs(cluster3, topic)["retention.ms"][1]  # nothing changed


def test_kafka_python_whole_set_alter_replaces_the_overrides(
    cluster3: LocalCluster, kafka_python: Any
) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = _topic("replace")
    _create(cluster3, topic, 1, 1, **{"retention.ms": "3600000", "flush.ms": "1000"})
    res = ConfigResource(ConfigResourceType.TOPIC, topic, configs={"segment.ms": "600000"})
    # kafka-python fills in the other modified keys itself before a whole-set AlterConfigs,
    # so what is left out here is kept: exactly as against Kafka
    result = kafka_python.alter_configs([res], incremental=False)
    assert result == {"topic": {topic: "OK"}}
    own = {n: v for n, (v, default) in _native_configs(cluster3, topic).items() if not default}
    assert own == {"retention.ms": "3600000", "flush.ms": "1000", "segment.ms": "600000"}
    check = ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "1"})
    assert kafka_python.alter_configs([check], validate_only=True) == {"topic": {topic: "OK"}}
    assert _native_configs(cluster3, topic)["retention.ms"] == ("3600000", False)


def test_lowered_max_message_bytes_holds_on_every_leader(
    cluster3: LocalCluster, kafka_python: Any
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = _topic("max-bytes")
    _create(cluster3, topic, 3, 3)  # one leader per broker
    client = CLIENTS["confluent-kafka"](cluster3.kafka_bootstrap)
    record = b"x" * 5000
    assert len(client.produce(topic, [Rec(None, record, [], p) for p in range(3)])) == 3
    res = ConfigResource(ConfigResourceType.TOPIC, topic, configs={"max.message.bytes": "2000"})
    assert kafka_python.alter_configs([res]) == {"topic": {topic: "OK"}}

    def refused(partition: int) -> bool:
        try:
            client.produce(topic, [Rec(None, record, [], partition)], retries=0)
        except KafkaException as exc:
            assert exc.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
            return True
        return False

    for partition in range(3):  # each broker applies the change from its notification
        _eventually(lambda p=partition: refused(p), f"partition {partition} to refuse 5000 bytes")
    # small batches still go in (a 5000-byte one may have too, before the change arrived)
    [(partition, offset)] = client.produce(topic, [Rec(None, b"small", [], 0)])
    assert partition == 0 and offset >= 1


# ----- adding partitions --------------------------------------------------------------------


def test_kafka_python_adds_partitions_the_controller_leads(
    cluster3: LocalCluster, kafka_python: Any
) -> None:
    from kafka.admin import NewPartitions
    from kafka.errors import InvalidPartitionsError

    topic = _topic("grow")
    _create(cluster3, topic, 2, 2)
    kafka_python.create_partitions({topic: NewPartitions(5)})
    with Admin(cluster3.bootstrap) as admin:

        def grown() -> bool:
            (desc,) = admin.describe_topics([topic])
            return len(desc.partitions) == 5 and all(p.leader >= 0 for p in desc.partitions)

        _eventually(grown, "5 led partitions")
        (desc,) = admin.describe_topics([topic])
    _known_everywhere(cluster3, topic, 5)
    replicas = {p.partition: p.replicas for p in desc.partitions}
    assert all(len(r) == 2 and len(set(r)) == 2 for r in replicas.values())
    lines = _cli_describe(cluster3, topic)
    assert "PartitionCount: 5 ReplicationFactor: 2" in lines[0]
    assert len(lines) == 6
    with pytest.raises(InvalidPartitionsError):
        kafka_python.create_partitions({topic: NewPartitions(5)})
    # and a Kafka client sees them too: produce to the last one
    assert CLIENTS["kafka-python"](cluster3.kafka_bootstrap).produce(
        topic, [Rec(None, b"v", [], 4)]
    ) == [(4, 0)]


def test_confluent_adds_partitions_with_given_replicas(
    cluster3: LocalCluster, confluent: Any
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewPartitions

    topic = _topic("assign")
    _create(cluster3, topic, 1, 2)
    checked = confluent.create_partitions(
        [NewPartitions(topic, 3, replica_assignment=[[3, 1], [2, 3]])], validate_only=True
    )
    _confluent_wait(checked)
    with Admin(cluster3.bootstrap) as admin:
        assert len(admin.describe_topics([topic])[0].partitions) == 1
    _confluent_wait(
        confluent.create_partitions([NewPartitions(topic, 3, replica_assignment=[[3, 1], [2, 3]])])
    )
    with Admin(cluster3.bootstrap) as admin:

        def placed() -> bool:
            (desc,) = admin.describe_topics([topic])
            return [p.replicas for p in desc.partitions][1:] == [[3, 1], [2, 3]]

        _eventually(placed, "the given replicas")
    bad = confluent.create_partitions([NewPartitions(topic, 4, replica_assignment=[[3, 9]])])
    with pytest.raises(KafkaException) as exc:
        _confluent_wait(bad)
    assert exc.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT


def test_confluent_creates_a_topic_with_given_replicas(
    cluster3: LocalCluster, confluent: Any
) -> None:
    """`kafka-topics --create --replica-assignment 3:1,1:2,2:3`: the replicas as asked, the
    first of each its leader; a bad assignment refused as Kafka refuses it."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic as KafkaNewTopic

    topic = _topic("given")
    asked = [[3, 1], [1, 2], [2, 3]]
    # librdkafka wants the partition count and sends -1 and -1 with the assignment (Kafka's rule)
    _confluent_wait(confluent.create_topics([KafkaNewTopic(topic, 3, replica_assignment=asked)]))
    _known_everywhere(cluster3, topic, 3)
    with Admin(cluster3.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    assert [p.replicas for p in desc.partitions] == asked
    assert [p.leader for p in desc.partitions] == [3, 1, 2]
    meta = confluent.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
    assert {p: m.replicas for p, m in meta.items()} == dict(enumerate(asked))
    for bad, code in [
        ([[1, 9]], KafkaError.INVALID_REPLICA_ASSIGNMENT),
        ([[2, 2]], KafkaError.INVALID_REPLICA_ASSIGNMENT),
        ([[1, 2], [3]], KafkaError.INVALID_REPLICA_ASSIGNMENT),
    ]:
        name = _topic("badassign")
        with pytest.raises(KafkaException) as exc:
            new = KafkaNewTopic(name, len(bad), replica_assignment=bad)
            _confluent_wait(confluent.create_topics([new]))
        assert exc.value.args[0].code() == code, bad
    with Admin(cluster3.bootstrap) as admin:
        assert not [t for t in admin.list_topics() if t.startswith("badassign-")]


# ----- the CLI, seen by a Kafka client -------------------------------------------------------


def test_cli_creates_a_topic_with_given_replicas(cluster3: LocalCluster, confluent: Any) -> None:
    """`odradek topics create` and `add-partitions --replica-assignment` as kafka-topics.sh
    --create and --alter take it, seen by librdkafka's metadata; a broker that does not exist
    refused in one line."""
    topic = _topic("cliassign")
    done = run_odradek("topics", "create", topic, "--replica-assignment", "2:3,3:1",
                       "--bootstrap", cluster3.bootstrap)  # fmt: skip
    assert done.returncode == 0, done.stderr
    _known_everywhere(cluster3, topic, 2)
    meta = confluent.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
    assert {p: (m.replicas, m.leader) for p, m in meta.items()} == {0: ([2, 3], 2), 1: ([3, 1], 3)}
    # add-partitions takes the whole assignment, as kafka-topics --alter: the first two skipped
    done = run_odradek("topics", "add-partitions", topic, "--partitions", "3",
                       "--replica-assignment", "2:3,3:1,1:2",
                       "--bootstrap", cluster3.bootstrap)  # fmt: skip
    assert done.returncode == 0, done.stderr
    _known_everywhere(cluster3, topic, 3)
    meta = confluent.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
    assert meta[2].replicas == [1, 2]
    bad = run_odradek("topics", "create", _topic("cliassign"), "--replica-assignment", "1:7",
                      "--bootstrap", cluster3.bootstrap)  # fmt: skip
    assert bad.returncode == 1
    (line,) = bad.stderr.strip().splitlines()  # one line, no traceback
    assert "INVALID_REPLICA_ASSIGNMENT" in line and "includes broker 7, but no such broker" in line


def test_cli_alter_config_and_add_partitions(cluster3: LocalCluster, kafka_python: Any) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = _topic("cli")
    _create(cluster3, topic, 1, 3, **{"flush.ms": "1000"})
    done = run_odradek(
        "topics", "alter-config", topic, "--set", "retention.ms=7200000", "--delete", "flush.ms",
        "--bootstrap", cluster3.bootstrap,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f"Topic: {topic} Configs: retention.ms=7200000")
    got = kafka_python.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    assert {k: c["value"] for k, c in got["topic"][topic].items()} == {"retention.ms": "7200000"}

    done = run_odradek(
        "topics", "add-partitions", topic, "--partitions", "3", "--bootstrap", cluster3.bootstrap
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"Topic {topic} now has 3 partitions."
    _known_everywhere(cluster3, topic, 3)
    meta = kafka_python.describe_topics([topic])[0]
    assert sorted(p["partition_index"] for p in meta["partitions"]) == [0, 1, 2]

    bad = run_odradek(
        "topics", "alter-config", topic, "--set", "segment.bytes=0",
        "--bootstrap", cluster3.bootstrap,
    )  # fmt: skip
    assert bad.returncode == 1 and "segment.bytes" in bad.stderr


def test_kafka_python_lists_config_resources(cluster3: LocalCluster, kafka_python: Any) -> None:
    """ListConfigResources (KIP-1142): every broker and topic, and every group with configs of
    its own, or one type; a type odradek has no configs for (BROKER_LOGGER) is refused as Kafka
    refuses a type it does not support."""
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.errors import UnsupportedVersionError

    topic, group = _topic("listed"), _topic("listed-group")
    _create(cluster3, topic, 1, 1)
    kafka_python.alter_configs(
        [ConfigResource(ConfigResourceType.GROUP, group, {"consumer.session.timeout.ms": "50000"})]
    )
    _eventually(
        lambda: group in kafka_python.list_config_resources(["GROUP"]).get("group", ()),
        "the group with configs of its own listed",
    )
    every = kafka_python.list_config_resources()
    assert sorted(every["broker"]) == ["1", "2", "3"] and group in every["group"]
    assert topic in every["topic"] and "client_metrics" not in every
    assert set(kafka_python.list_config_resources(["TOPIC"])) == {"topic"}
    with pytest.raises(UnsupportedVersionError):
        kafka_python.list_config_resources(["BROKER_LOGGER"])
