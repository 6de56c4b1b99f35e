"""Dynamic broker configs as pure functions (broker/dynamic_config.py): which names may change
live, which layer wins, and how DescribeConfigs lists each layer (broker/config_entries.py).
The operation is tested in tests/unit/broker/operations/test_config_operations.py, the live
effects against real brokers in tests/integration/test_kafka_dynamic_broker_configs.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker import dynamic_config as dynamic
from broker.config import BrokerConfig
from broker.config_entries import broker_entries, topic_entries
from protocol.api.admin import SOURCE_DEFAULT_CONFIG as DEFAULT
from protocol.api.admin import SOURCE_DYNAMIC_BROKER_CONFIG as BROKER
from protocol.api.admin import SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG as CLUSTER
from protocol.api.admin import SOURCE_STATIC_BROKER_CONFIG as STATIC
from protocol.api.admin import SOURCE_TOPIC_CONFIG as TOPIC
from protocol.errors import InvalidConfigError, InvalidRequestError

TLS_LISTENERS = {"listeners": "SSL://127.0.0.1:0", "ssl_keystore_location": "/k.pem"}


def test_what_may_change_live_and_what_is_refused() -> None:
    assert dynamic.kind_of("message.max.bytes", per_broker=False) == dynamic.TOPIC_DEFAULT
    assert dynamic.kind_of("log.retention.ms", per_broker=True) == dynamic.TOPIC_DEFAULT
    assert dynamic.kind_of("log.cleaner.threads", per_broker=False) == dynamic.SETTING
    assert dynamic.kind_of("unclean.leader.election.enable", per_broker=False) == dynamic.SETTING
    tls = "listener.name.ssl.ssl.keystore.location"
    assert dynamic.kind_of(tls, per_broker=True) == dynamic.LISTENER_TLS
    refused = {
        "num.partitions": "num.partitions cannot be updated dynamically; it needs a broker restart",
        "listener.name.ssl.ssl.client.auth": "needs a broker restart",
        "ssl.keystore.location": "only per listener",
    }
    for name, why in refused.items():
        with pytest.raises(InvalidRequestError, match=why):
            dynamic.kind_of(name, per_broker=True)
    with pytest.raises(InvalidRequestError, match="a broker id must be specified"):
        dynamic.kind_of(tls, per_broker=False)
    with pytest.raises(InvalidConfigError, match=r"unknown broker config no\.such"):
        dynamic.kind_of("no.such", per_broker=True)


def test_per_broker_wins_over_the_cluster_default_over_the_file() -> None:
    defaults = {"retention.ms": "100", "segment.bytes": "65536"}
    static = BrokerConfig(1, Path("/x"), max_connections=10, topic_defaults=defaults)
    cluster = {"log.retention.ms": "200", "log.cleaner.threads": "2", "max.connections": "20"}
    mine = {"log.retention.ms": "300", "message.max.bytes": "1000"}
    config = dynamic.effective(static, cluster, mine)
    log_config = config.default_log_config()
    assert (log_config.retention_ms, log_config.max_message_bytes) == (300, 1000)
    assert log_config.segment_bytes == 65536  # the file's, nobody overrides it
    assert (config.log_cleaner_threads, config.max_connections) == (2, 20)
    assert config.explicit == static.explicit  # what the file gave stays the file's
    assert dynamic.effective(static, {}, {}) == static
    # a name that cannot change live, written past AlterConfigs' checks, is left out
    assert dynamic.effective(static, {"num.partitions": "7"}, {}).num_partitions == 1


def test_a_value_the_settings_refuse_is_one_line() -> None:
    static = BrokerConfig(1, Path("/x"))
    for bad in ({"log.cleaner.threads": "0"}, {"log.cleaner.threads": "two"},
                {"message.max.bytes": "-5"}):  # fmt: skip
        with pytest.raises(InvalidConfigError) as err:
            dynamic.effective(static, {}, bad)
        assert "\n" not in err.value.message


def test_a_listener_keystore_set_per_broker_lands_on_that_listener() -> None:
    static = BrokerConfig(1, Path("/x"), **TLS_LISTENERS)  # type: ignore[arg-type]
    mine = {"listener.name.ssl.ssl.keystore.location": "/new.pem",
            "listener.name.ssl.ssl.key.password": "s3cret"}  # fmt: skip
    config = dynamic.effective(static, {}, mine)
    assert config.listener_settings["SSL"] == {"ssl_keystore_location": "/new.pem",
                                               "ssl_key_password": "s3cret"}  # fmt: skip
    assert dynamic.tls_listeners(mine) == {"SSL"}


def _synonyms(entry: object) -> list[tuple[str, str | None, int]]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]  # type: ignore[attr-defined]


def test_describe_lists_each_layer_in_kafka_order() -> None:
    static = BrokerConfig(1, Path("/x"), topic_defaults={"retention.ms": "100"},
                          explicit=frozenset({"topic_defaults"}))  # fmt: skip
    cluster = {"log.retention.ms": "200", "log.cleaner.threads": "2"}
    mine = {"log.retention.ms": "300"}
    entries = {e.name: e for e in broker_entries(static, "1", True, cluster, mine)}
    retention = entries["log.retention.ms"]
    assert (retention.value, retention.source, retention.read_only) == ("300", BROKER, False)
    assert _synonyms(retention) == [
        ("log.retention.ms", "300", BROKER), ("log.retention.ms", "200", CLUSTER),
        ("log.retention.ms", "100", STATIC), ("log.retention.ms", "604800000", DEFAULT),
    ]  # fmt: skip
    assert (entries["log.cleaner.threads"].value, entries["log.cleaner.threads"].source) == (
        "2", CLUSTER,
    )  # fmt: skip
    # the cluster default resource: only what it sets, without a per-broker layer
    default = {e.name: e for e in broker_entries(static, "", True, cluster, mine)}
    assert sorted(default) == ["log.cleaner.threads", "log.retention.ms"]
    assert default["log.retention.ms"].value == "200"
    assert _synonyms(default["log.retention.ms"])[0] == ("log.retention.ms", "200", CLUSTER)
    # a topic without its own override takes the broker's dynamic default
    topic = {e.name: e for e in topic_entries(static, {}, True, cluster, mine)}
    assert (topic["retention.ms"].value, topic["retention.ms"].source) == ("300", BROKER)
    overridden = {e.name: e for e in topic_entries(static, {"retention.ms": "5"}, True,
                                                   cluster, mine)}  # fmt: skip
    assert [s for _, _, s in _synonyms(overridden["retention.ms"])] == [
        TOPIC, BROKER, CLUSTER, STATIC, DEFAULT,
    ]  # fmt: skip


def test_a_dynamic_password_is_described_sensitive_and_null() -> None:
    static = BrokerConfig(1, Path("/x"), **TLS_LISTENERS)  # type: ignore[arg-type]
    mine = {"listener.name.ssl.ssl.keystore.password": "s3cret",
            "listener.name.ssl.ssl.keystore.location": "/k.p12"}  # fmt: skip
    entries = {e.name: e for e in broker_entries(static, "1", True, {}, mine)}
    password = entries["listener.name.ssl.ssl.keystore.password"]
    assert (password.value, password.is_sensitive, password.source) == (None, True, BROKER)
    assert all(s.value is None for s in password.synonyms)
    location = entries["listener.name.ssl.ssl.keystore.location"]
    assert (location.value, location.is_sensitive, location.read_only) == ("/k.p12", False, False)
