"""The config APIs' operations (broker/operations/describe_configs.py, alter_configs.py), each
tested once, whichever door serves it: called directly with a `Session` on an in-process broker
(tests/unit/broker/harness.py), whose fake topic store plays ZooKeeper and, where a test says
so, every broker's config change listener. The override set's rules are pure functions tested in
tests/unit/broker/test_alter_configs_rules.py, the entries' sources in
test_describe_configs_sources.py; the doors' codecs in test_config_codecs.py; each door end to
end in tests/unit/broker/test_kafka_admin_configs.py, test_admin.py and tests/integration.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker import password_encoder
from broker.config import BrokerConfig
from broker.operations import alter_configs, describe_configs
from broker.operations import list_config_resources as lcr
from protocol.acl import AclOperation, ResourceType
from protocol.api.admin import (
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_DYNAMIC_BROKER_CONFIG,
    SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    SOURCE_TOPIC_CONFIG,
    TYPE_BOOLEAN,
    TYPE_LIST,
    TYPE_LONG,
)
from protocol.errors import (
    ClusterAuthorizationFailedError,
    InvalidConfigError,
    InvalidRequestError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from protocol.topic_config import IN_EFFECT, TOPIC_CONFIGS
from tests.unit.broker.harness import BROKER_ID, BrokerHarness, FakeTopicStore, running_broker
from tests.unit.broker.operations.test_topic_operations import SESSION, authorizing, run
from tests.unit.broker.test_acl_rules import grant

dc, ac = describe_configs, alter_configs
TOPIC, BROKER, GROUP = RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_GROUP

# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "DescribeConfigs": dc.DescribeConfigs((dc.ConfigResource(TOPIC, "t"),
                                           dc.ConfigResource(BROKER, str(BROKER_ID)))),
    "AlterConfigs": ac.AlterConfigs((ac.ConfigResource(TOPIC, "t", (ac.ConfigChange("a", "1"),)),
                                     ac.ConfigResource(BROKER, "1", ())), validate_only=True),
    "IncrementalAlterConfigs": ac.AlterConfigs(
        (ac.ConfigResource(TOPIC, "t", (ac.ConfigChange("retention.ms", "1"),)),
         ac.ConfigResource(BROKER, "1", ())), validate_only=True, incremental=True),
    "ListConfigResources": lcr.ListConfigResources(),
}  # fmt: skip
_CONFIG = BrokerConfig(broker_id=BROKER_ID, log_dir=Path("/nonexistent"))


async def _no_overrides(topic: str) -> dict[str, str]:
    return {}


_SERVICES = {
    "config": _CONFIG,
    "metadata": SimpleNamespace(has_topic=lambda name: True),
    "topics": SimpleNamespace(read_topic_config=_no_overrides),
    "replicas": SimpleNamespace(default_log_config=_CONFIG.default_log_config()),
}
CONTEXTS: dict[str, Any] = {
    "DescribeConfigs": _SERVICES,
    "AlterConfigs": _SERVICES,
    "IncrementalAlterConfigs": _SERVICES,
}


def codes(result: Any) -> list[int]:
    return [r.error_code for r in result.results]


def acting_as_listener(b: BrokerHarness) -> None:
    """Every config write reaches this broker's logs, as the config change listener does."""
    b.topics.on_config = b.ctx.replicas.roles.apply_topic_config


# ----- DescribeConfigs -------------------------------------------------------------------------


async def test_a_topics_configs_with_sources_types_synonyms_and_docs(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"t": {"retention.ms": "1234"}})
    async with running_broker(tmp_path, topics=store,
                              topic_defaults={"segment.bytes": "65536"}) as b:  # fmt: skip
        await b.lead("t")
        asked = dc.DescribeConfigs((dc.ConfigResource(TOPIC, "t"),), True, True)
        (result,) = (await run(dc.run, b, asked)).results
    assert (result.error_code, result.resource_type, result.resource_name) == (0, TOPIC, "t")
    entries = {e.name: e for e in result.configs}
    assert set(entries) == set(IN_EFFECT)
    retention, segment = entries["retention.ms"], entries["segment.bytes"]
    assert (retention.value, retention.source, retention.config_type, retention.is_default) == (
        "1234", SOURCE_TOPIC_CONFIG, TYPE_LONG, False,
    )  # fmt: skip
    assert not retention.read_only and not retention.is_sensitive
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("retention.ms", "1234", SOURCE_TOPIC_CONFIG),
        ("log.retention.ms", "604800000", SOURCE_DEFAULT_CONFIG),
    ]
    assert retention.documentation == TOPIC_CONFIGS["retention.ms"].doc
    assert (segment.value, segment.source, segment.is_default) == (
        "65536", SOURCE_STATIC_BROKER_CONFIG, True,
    )  # fmt: skip
    assert [(s.name, s.source) for s in segment.synonyms] == [
        ("log.segment.bytes", SOURCE_STATIC_BROKER_CONFIG),
        ("log.segment.bytes", SOURCE_DEFAULT_CONFIG),
    ]
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.config_type, policy.source) == (
        "delete", TYPE_LIST, SOURCE_DEFAULT_CONFIG,
    )  # fmt: skip
    unclean = entries["unclean.leader.election.enable"]
    assert (unclean.value, unclean.config_type) == ("false", TYPE_BOOLEAN)


async def test_describe_filters_names_and_answers_each_resource_its_error(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        names = ("retention.ms", "segment.bytes")
        asked = dc.DescribeConfigs((
            dc.ConfigResource(TOPIC, "t", names),
            dc.ConfigResource(TOPIC, "t", ()),  # empty asks for every config, as in Kafka
            dc.ConfigResource(TOPIC, "nope"),
            dc.ConfigResource(99, "x"),
            dc.ConfigResource(BROKER, "9"),
        ))  # fmt: skip
        found, every, unknown, bad_type, other = (await run(dc.run, b, asked)).results
    assert sorted(e.name for e in found.configs) == sorted(names)
    assert {e.name for e in every.configs} == set(IN_EFFECT)
    # neither synonyms nor documentation unless asked
    assert all(e.synonyms == [] and e.documentation is None for e in every.configs)
    assert (unknown.error_code, unknown.configs) == (UnknownTopicOrPartitionError.code, ())
    assert bad_type.error_code == InvalidRequestError.code
    assert (other.error_code, other.error_message) == (
        InvalidRequestError.code, f"this is broker {BROKER_ID}, not 9",
    )  # fmt: skip


async def test_describe_a_broker_gives_its_settings_by_kafka_names(tmp_path: Path) -> None:
    async with running_broker(tmp_path, num_partitions=3,
                              topic_defaults={"min.insync.replicas": "2"}) as b:  # fmt: skip
        asked = dc.DescribeConfigs((dc.ConfigResource(BROKER, str(BROKER_ID)),
                                    dc.ConfigResource(BROKER, "")))  # fmt: skip
        mine, default = (await run(dc.run, b, asked)).results
    assert mine.error_code == 0 and default.error_code == 0
    entries = {e.name: e for e in mine.configs}
    # what may change live (dynamic broker configs) is not read-only, the rest is
    assert entries["num.partitions"].read_only and entries["broker.id"].read_only
    assert not entries["message.max.bytes"].read_only
    assert not entries["log.cleaner.threads"].read_only
    assert default.configs == ()  # the cluster default: only what it sets, as Kafka answers
    assert (entries["num.partitions"].value, entries["num.partitions"].source) == (
        "3", SOURCE_STATIC_BROKER_CONFIG,
    )  # fmt: skip
    assert entries["default.replication.factor"].source == SOURCE_DEFAULT_CONFIG
    assert entries["message.max.bytes"].value == "1048588"
    assert entries["min.insync.replicas"].source == SOURCE_STATIC_BROKER_CONFIG
    assert entries["broker.id"].value == str(BROKER_ID)


async def test_describe_refusals_are_per_resource(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        await b.lead("u")
        authz = authorizing(b)
        grant(authz, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, "u")
        asked = dc.DescribeConfigs((dc.ConfigResource(TOPIC, "t"), dc.ConfigResource(TOPIC, "u"),
                                    dc.ConfigResource(BROKER, str(BROKER_ID))))  # fmt: skip
        hidden, shown, broker = (await run(dc.run, b, asked, SESSION)).results
    assert (hidden.error_code, hidden.configs) == (TopicAuthorizationFailedError.code, ())
    assert shown.error_code == 0 and shown.configs
    assert broker.error_code == ClusterAuthorizationFailedError.code


# ----- AlterConfigs and IncrementalAlterConfigs ------------------------------------------------


async def test_alter_replaces_the_whole_override_set_and_logs_follow(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"t": {"retention.ms": "1234", "flush.ms": "10"}})
    async with running_broker(tmp_path, topics=store) as b:
        acting_as_listener(b)
        await b.lead("t", partitions=2)
        changes = (ac.ConfigChange("retention.bytes", "5000"), ac.ConfigChange("segment.ms", None))
        asked = ac.AlterConfigs((ac.ConfigResource(TOPIC, "t", changes),))
        assert codes(await run(ac.run, b, asked)) == [0]
        assert store.configs["t"] == {"retention.bytes": "5000"}  # the others are gone
        for p in (0, 1):
            config = b.log_manager.get("t", p).config
            assert (config.retention_bytes, config.flush_ms) == (5000, None)


async def test_incremental_set_delete_and_append_keep_the_other_overrides(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"t": {"retention.ms": "1234", "flush.ms": "10"}})
    async with running_broker(tmp_path, topics=store) as b:
        acting_as_listener(b)
        await b.lead("t")
        changes = (ac.ConfigChange("retention.bytes", "4096", OP_SET),
                   ac.ConfigChange("flush.ms", None, OP_DELETE),
                   ac.ConfigChange("cleanup.policy", "compact", OP_APPEND))  # fmt: skip
        asked = ac.AlterConfigs((ac.ConfigResource(TOPIC, "t", changes),), incremental=True)
        assert codes(await run(ac.run, b, asked)) == [0]
        assert store.configs["t"] == {"retention.ms": "1234", "retention.bytes": "4096",
                                      "cleanup.policy": "delete,compact"}  # fmt: skip
        config = b.log_manager.get("t", 0).config
        assert (config.retention_ms, config.retention_bytes, config.flush_ms) == (1234, 4096, None)


async def test_alter_errors_are_per_resource_and_write_nothing(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"t": {"retention.ms": "1234"}, "u": {}})
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("t")
        await b.lead("u")
        for incremental in (False, True):
            asked = ac.AlterConfigs((
                ac.ConfigResource(TOPIC, "t", (ac.ConfigChange("retention.ms", "soon"),)),
                ac.ConfigResource(TOPIC, "nope", (ac.ConfigChange("retention.ms", "1"),)),
                ac.ConfigResource(BROKER, "1", (ac.ConfigChange("num.partitions", "3"),)),
                ac.ConfigResource(99, "x", ()),
                ac.ConfigResource(TOPIC, "u", (ac.ConfigChange("no.such", "1"),)),
                ac.ConfigResource(TOPIC, "u", (ac.ConfigChange("retention.ms", "1"),)),
            ), incremental=incremental)  # fmt: skip
            result = await run(ac.run, b, asked)
            invalid = InvalidRequestError.code
            assert codes(result) == [InvalidConfigError.code, UnknownTopicOrPartitionError.code,
                                     invalid, invalid, invalid, invalid]  # fmt: skip
            assert result.results[2].error_message == (
                "num.partitions cannot be updated dynamically; it needs a broker restart"
            )
            assert [r.error_message for r in result.results[4:]] == [
                "duplicate resource in request"
            ] * 2  # Kafka refuses both
            alone = ac.AlterConfigs(asked.resources[4:5], incremental=incremental)
            (refused,) = (await run(ac.run, b, alone)).results
            assert (refused.error_code, refused.error_message) == (
                InvalidConfigError.code, "unknown topic config 'no.such'",
            )  # fmt: skip
        assert store.config_writes == []


async def test_validate_only_checks_and_writes_nothing(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"t": {}})
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("t")
        good = ac.ConfigResource(TOPIC, "t", (ac.ConfigChange("retention.ms", "1"),))
        bad = ac.ConfigResource(TOPIC, "t", (ac.ConfigChange("segment.bytes", "0"),))
        assert codes(await run(ac.run, b, ac.AlterConfigs((good,), validate_only=True))) == [0]
        checked = ac.AlterConfigs((bad,), validate_only=True, incremental=True)
        assert codes(await run(ac.run, b, checked)) == [InvalidConfigError.code]
        assert store.config_writes == []


async def test_alter_refusals_are_per_resource(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"t": {}, "u": {}})
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("t")
        await b.lead("u")
        authz = authorizing(b)
        grant(authz, AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, "u")
        change = (ac.ConfigChange("retention.ms", "7"),)
        asked = ac.AlterConfigs((ac.ConfigResource(TOPIC, "t", change),
                                 ac.ConfigResource(TOPIC, "u", change),
                                 ac.ConfigResource(BROKER, str(BROKER_ID), ())),
                                incremental=True)  # fmt: skip
        assert codes(await run(ac.run, b, asked, SESSION)) == [
            TopicAuthorizationFailedError.code,
            0,
            ClusterAuthorizationFailedError.code,
        ]
        assert store.config_writes == [("u", {"retention.ms": "7"})]


# ----- dynamic broker configs ------------------------------------------------------------------


async def test_alter_a_broker_keeps_its_dynamic_configs_and_describe_shows_them(
    tmp_path: Path,
) -> None:
    store = FakeTopicStore()
    async with running_broker(tmp_path, topics=store) as b:
        me = str(BROKER_ID)
        set_threads = (ac.ConfigChange("log.cleaner.threads", "2", OP_SET),)
        set_bytes = (ac.ConfigChange("message.max.bytes", "5000", OP_SET),)
        checked = ac.AlterConfigs((ac.ConfigResource(BROKER, me, set_bytes),),
                                  validate_only=True, incremental=True)  # fmt: skip
        assert codes(await run(ac.run, b, checked)) == [0]
        assert store.broker_configs == {}  # validate_only writes nothing
        asked = ac.AlterConfigs((ac.ConfigResource(BROKER, me, set_bytes),
                                 ac.ConfigResource(BROKER, "", set_threads),
                                 ac.ConfigResource(BROKER, "7", set_threads)),
                                incremental=True)  # fmt: skip
        result = await run(ac.run, b, asked)
        assert codes(result)[:2] == [0, 0]
        assert (result.results[2].error_code, result.results[2].error_message) == (
            InvalidRequestError.code,
            f"Unexpected broker id, expected {me} or empty string, but received 7",
        )  # fmt: skip
        assert store.broker_configs == {me: {"message.max.bytes": "5000"},
                                        "<default>": {"log.cleaner.threads": "2"}}  # fmt: skip
        described = dc.DescribeConfigs((dc.ConfigResource(BROKER, me),
                                        dc.ConfigResource(BROKER, "")))  # fmt: skip
        mine, default = (await run(dc.run, b, described)).results
        entries = {e.name: e for e in mine.configs}
        assert (entries["message.max.bytes"].value, entries["message.max.bytes"].source) == (
            "5000", SOURCE_DYNAMIC_BROKER_CONFIG,
        )  # fmt: skip
        assert entries["log.cleaner.threads"].source == SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG
        assert [(e.name, e.value) for e in default.configs] == [("log.cleaner.threads", "2")]
        bad = ac.AlterConfigs(
            (
                ac.ConfigResource(
                    BROKER, me, (ac.ConfigChange("log.cleaner.threads", "0", OP_SET),)
                ),
            ),
            incremental=True,
        )
        (refused,) = (await run(ac.run, b, bad)).results
        assert refused.error_code == InvalidConfigError.code
        assert "log_cleaner_threads must be positive" in (refused.error_message or "")
        assert store.broker_configs[me] == {"message.max.bytes": "5000"}


# ----- ListConfigResources ---------------------------------------------------------------------


async def test_list_config_resources_by_type(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        await b.lead("a")
        b.ctx.groups.configs.apply("g2", {"consumer.session.timeout.ms": "50000"})
        b.ctx.groups.configs.apply("g1", {"consumer.heartbeat.interval.ms": "4000"})
        brokers = tuple((str(i), BROKER) for i in b.ctx.metadata.live_broker_ids())
        every = (await run(lcr.run, b, lcr.ListConfigResources())).resources
        assert every == (("g1", GROUP), ("g2", GROUP), *brokers, ("a", TOPIC), ("t", TOPIC))
        v0 = await run(lcr.run, b, lcr.ListConfigResources(client_metrics_only=True))
        assert (v0.error_code, v0.resources) == (0, ())  # no client-metrics subscriptions
        only_topics = await run(lcr.run, b, lcr.ListConfigResources((TOPIC,)))
        assert only_topics.resources == (("a", TOPIC), ("t", TOPIC))
        groups = await run(lcr.run, b, lcr.ListConfigResources((TOPIC, GROUP)))
        assert groups.resources == (("g1", GROUP), ("g2", GROUP), ("a", TOPIC), ("t", TOPIC))
        loggers = await run(lcr.run, b, lcr.ListConfigResources((TOPIC, 8)))  # BROKER_LOGGER
        assert (loggers.error_code, loggers.resources) == (UnsupportedVersionError.code, ())
        authz = authorizing(b)
        denied = await run(lcr.run, b, lcr.ListConfigResources(), SESSION)
        assert (denied.error_code, denied.resources) == (ClusterAuthorizationFailedError.code, ())
        grant(authz, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, "kafka-cluster")
        allowed = await run(lcr.run, b, lcr.ListConfigResources(), SESSION)
        assert (allowed.error_code, allowed.resources) == (0, every)


async def test_a_dynamic_password_is_stored_encrypted_or_refused_without_a_secret(
    tmp_path: Path,
) -> None:
    """Kafka's rule: a password among the dynamic broker configs needs password.encoder.secret
    (else INVALID_CONFIG, nothing written); with it, ZooKeeper holds it encrypted and
    DescribeConfigs shows it sensitive with no value."""
    name = "listener.name.plaintext.ssl.key.password"
    change = (ac.ConfigChange(name, "hunter2", OP_SET),)
    asked = ac.AlterConfigs((ac.ConfigResource(BROKER, str(BROKER_ID), change),),
                            incremental=True)  # fmt: skip
    store = FakeTopicStore()
    async with running_broker(tmp_path / "a", topics=store) as b:
        (refused,) = (await run(ac.run, b, asked)).results
        assert refused.error_code == InvalidConfigError.code
        assert "Password encoder secret not configured" in (refused.error_message or "")
        assert store.broker_configs == {}
    store = FakeTopicStore()
    async with running_broker(tmp_path / "b", topics=store, password_encoder_secret="s") as b:
        (done,) = (await run(ac.run, b, asked)).results
        assert done.error_code == 0, done.error_message
        stored = store.broker_configs[str(BROKER_ID)][name]
        assert "hunter2" not in stored and password_encoder.decode(stored, "s") == "hunter2"
        described = dc.DescribeConfigs((dc.ConfigResource(BROKER, str(BROKER_ID)),))
        (mine,) = (await run(dc.run, b, described)).results
        entry = next(e for e in mine.configs if e.name == name)
        assert (entry.value, entry.is_sensitive, entry.source) == (
            None, True, SOURCE_DYNAMIC_BROKER_CONFIG,
        )  # fmt: skip
        secret = next(e for e in mine.configs if e.name == "password.encoder.secret")
        assert (secret.value, secret.is_sensitive) == (None, True)
