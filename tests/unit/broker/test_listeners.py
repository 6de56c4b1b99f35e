"""Listener settings (broker/config.py): Kafka's listeners, advertised listeners, the security
protocol map, the inter-broker listener, the ssl.* checks, and Kafka's dotted names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from broker.config import BrokerConfig, Listener, listener_setting, load_config, tls_settings
from coordinator.cluster.zk_paths import BrokerRegistration
from protocol.api.metadata import KAFKA_DOOR, NATIVE_DOOR, BrokerInfo, Endpoint
from protocol.errors import UsageError


def config(**kwargs: Any) -> BrokerConfig:
    return load_config(broker_id=1, log_dir="/tmp/x", **kwargs)


def test_defaults_keep_one_plaintext_native_listener_and_no_kafka_listener() -> None:
    c = config(port=9999)
    assert c.native_listener_list() == (Listener("PLAINTEXT", "127.0.0.1", 9999, "PLAINTEXT"),)
    assert c.kafka_listeners() == ()
    assert c.inter_broker_listener().name == "PLAINTEXT"


def test_many_listeners_with_a_protocol_map() -> None:
    c = config(
        listeners="CLIENT://0.0.0.0:9093,secure://h1:9094",
        listener_security_protocol_map="CLIENT:SASL_SSL,SECURE:SSL,REPLICATION:SSL",
        native_listeners="REPLICATION://h1:9100",
        inter_broker_listener_name="REPLICATION",
        ssl_keystore_location="/etc/broker.pem",
    )
    assert [(n.name, n.host, n.port, n.security_protocol) for n in c.kafka_listeners()] == [
        ("CLIENT", "0.0.0.0", 9093, "SASL_SSL"),
        ("SECURE", "h1", 9094, "SSL"),
    ]
    assert c.inter_broker_listener() == Listener("REPLICATION", "h1", 9100, "SSL")


def test_advertised_by_name_else_the_listener_with_its_bound_port() -> None:
    c = config(listeners="A://0.0.0.0:0,B://h2:0", advertised_listeners="B://public:443",
               listener_security_protocol_map="A:PLAINTEXT,B:PLAINTEXT", host="h9")  # fmt: skip
    a, b = c.kafka_listeners()
    assert c.advertised(a, 5555, native=False) == ("h9", 5555)  # wildcard: advertise `host`
    assert c.advertised(b, 6666, native=False) == ("public", 443)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"listeners": "PLAINTEXT:9092"}, "is not NAME://host:port"),
        ({"listeners": "NOPE://h:1"}, "listener NOPE has no security protocol"),
        ({"listeners": "PLAINTEXT://h:1,PLAINTEXT://h:2"}, "twice"),
        ({"listener_security_protocol_map": "A:TLS"}, "is not NAME:PROTOCOL"),
        ({"advertised_listeners": "SSL://h:1", "listeners": "PLAINTEXT://h:2"}, "is not one of"),
        ({"inter_broker_listener_name": "CLIENT"}, "brokers talk to each other on the native"),
        ({"listeners": "SSL://h:1"}, "uses TLS: set ssl_keystore_location"),
        ({"ssl_keystore_type": "JKS"}, "keytool -importkeystore"),
        ({"ssl_client_auth": "yes"}, "ssl_client_auth must be none, requested or required"),
        ({"ssl_enabled_protocols": "TLSv1"}, "ssl_enabled_protocols"),
    ],
)
def test_bad_settings_are_one_usage_error_line(settings: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        config(**settings)


def test_kafka_dotted_names_are_the_same_settings(tmp_path: Path) -> None:
    path = tmp_path / "broker.toml"
    path.write_text(
        'broker_id = 1\nlog_dir = "/tmp/x"\n'
        '"listener.security.protocol.map" = "CLIENT:SSL"\n'
        '"listeners" = "CLIENT://h:1"\n"ssl.keystore.location" = "/k.pem"\n'
        '"ssl.client.auth" = "required"\n'
    )
    c = load_config(path, **{"native.listeners": "CLIENT://h:2"})
    assert c.kafka_listeners() == (Listener("CLIENT", "h", 1, "SSL"),)
    assert c.ssl_client_auth == "required"
    assert c.native_listener_list()[0].port == 2
    with pytest.raises(UsageError, match="unknown"):
        load_config(path, **{"ssl.no.such.thing": "x"})


def test_a_listener_has_its_own_ssl_settings_as_kafkas_listener_name_prefix(
    tmp_path: Path,
) -> None:
    """listener.name.<l>.ssl.*: quoted, as nested TOML tables (unquoted), or as a flag."""
    path = tmp_path / "broker.toml"
    path.write_text(
        'broker_id = 1\nlog_dir = "/tmp/x"\n'
        'listeners = "MTLS://h:1,SCRAM://h:2"\n'
        'listener_security_protocol_map = "MTLS:SSL,SCRAM:SASL_SSL"\n'
        'ssl_keystore_location = "/k.pem"\nssl_client_auth = "none"\n'
        '"listener.name.mtls.ssl.client.auth" = "required"\n'
        'listener.name.mtls.ssl.principal.mapping.rules = "RULE:^CN=(.*?),.*$/$1/L,DEFAULT"\n'
    )
    c = load_config(path, **{"listener.name.scram.ssl.keystore.location": "/scram.pem"})
    assert tls_settings(c, "MTLS").client_auth == "required"
    assert tls_settings(c, "SCRAM").client_auth == "none"  # the broker-wide setting
    assert tls_settings(c, "SCRAM").keystore_location == "/scram.pem"
    assert tls_settings(c, "MTLS").keystore_location == "/k.pem"
    assert tls_settings(c).client_auth == "none"
    assert listener_setting(c, "MTLS", "ssl_principal_mapping_rules").startswith("RULE:")
    assert listener_setting(c, "SCRAM", "ssl_principal_mapping_rules") == "DEFAULT"


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("listener.name.nope.ssl.client.auth", "there is no listener NOPE"),
        ("listener.name.mtls.sasl.enabled.mechanisms", "MTLS is SSL, which does not use SASL"),
        ("listener.name.mtls.sasl.jaas.config", "name the mechanism, as Kafka does"),
        ("listener.name.mtls.sasl.kerberos.service.name", "may be set per listener"),
        ("listener.name.mtls.ssl.client.auth", "ssl_client_auth must be none, requested"),
    ],
)
def test_bad_per_listener_settings_are_one_usage_error_line(key: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        config(listeners="MTLS://h:1", listener_security_protocol_map="MTLS:SSL",
               ssl_keystore_location="/k.pem", **{key: "maybe"})  # fmt: skip


def test_registration_lists_every_endpoint_as_kafka_writes_them() -> None:
    listeners = (
        Endpoint(NATIVE_DOOR, "REPLICATION", "h1", 9100, "SSL"),
        Endpoint(NATIVE_DOOR, "PLAINTEXT", "h1", 9092, "PLAINTEXT"),
        Endpoint(KAFKA_DOOR, "CLIENT", "h1", 9093, "SASL_SSL"),
        Endpoint(KAFKA_DOOR, "INTERNAL", "10.0.0.1", 9094, "PLAINTEXT"),
    )
    reg = BrokerRegistration("h1", 9100, 7, "h1", 9093, listeners)
    obj = json.loads(reg.encode())
    assert obj["version"] == 5
    assert obj["endpoints"] == ["CLIENT://h1:9093", "INTERNAL://10.0.0.1:9094"]
    assert (obj["host"], obj["port"]) == ("10.0.0.1", 9094)  # the PLAINTEXT endpoint
    assert obj["listener_security_protocol_map"] == {
        "REPLICATION": "SSL", "PLAINTEXT": "PLAINTEXT", "CLIENT": "SASL_SSL",
        "INTERNAL": "PLAINTEXT",
    }  # fmt: skip
    assert obj["odradek_endpoints"] == ["REPLICATION://h1:9100", "PLAINTEXT://h1:9092"]
    assert BrokerRegistration.decode(reg.encode()) == reg
    only_tls = BrokerRegistration("h1", 9100, 7, "h1", 9093, listeners[:1] + listeners[2:3])
    assert (json.loads(only_tls.encode())["host"], json.loads(only_tls.encode())["port"]) == (
        None,
        -1,
    )


def test_a_client_is_told_the_endpoint_of_the_listener_it_came_in_on() -> None:
    info = BrokerInfo(1, "h1", 9100, None, "h1", 9093, [
        Endpoint(KAFKA_DOOR, "CLIENT", "public", 443, "SSL"),
        Endpoint(KAFKA_DOOR, "INTERNAL", "10.0.0.1", 9094, "PLAINTEXT"),
    ])  # fmt: skip
    assert info.endpoint(KAFKA_DOOR, "CLIENT") == ("public", 443)
    assert info.endpoint(KAFKA_DOOR, "INTERNAL") == ("10.0.0.1", 9094)
    assert info.endpoint(KAFKA_DOOR, "OTHER") is None
    legacy = BrokerInfo(2, "h2", 1, None, "h2", 2)
    assert legacy.endpoint(KAFKA_DOOR, "ANY") == ("h2", 2)


def test_metadata_cache_gives_each_listener_its_endpoints() -> None:
    from broker.leader_hints import endpoints
    from broker.metadata_cache import MetadataCache
    from protocol.api.controller import UpdateMetadataRequest

    cache = MetadataCache()
    one = BrokerInfo(1, "h1", 9100, "r1", "h1", 9093, [
        Endpoint(KAFKA_DOOR, "CLIENT", "public1", 443, "SSL"),
        Endpoint(KAFKA_DOOR, "INTERNAL", "10.0.0.1", 9094, "PLAINTEXT"),
    ])  # fmt: skip
    two = BrokerInfo(2, "h2", 9100, None, "h2", 9093, [
        Endpoint(KAFKA_DOOR, "INTERNAL", "10.0.0.2", 9094, "PLAINTEXT"),
    ])  # fmt: skip
    cache.apply(UpdateMetadataRequest(0, 1, [], [one, two], []))
    assert cache.kafka_brokers("CLIENT") == [(1, "public1", 443, "r1")]
    assert cache.kafka_brokers("INTERNAL") == [
        (1, "10.0.0.1", 9094, "r1"),
        (2, "10.0.0.2", 9094, None),
    ]
    assert cache.kafka_endpoint(2, "CLIENT") is None
    assert endpoints(cache, {2}, "INTERNAL") == [(2, "10.0.0.2", 9094, None)]


def test_tls_secrets_stay_out_of_the_configs_repr(tmp_path: Path) -> None:
    config = BrokerConfig(
        broker_id=1,
        log_dir=tmp_path,
        ssl_key_password="key-secret",
        ssl_keystore_password="store-secret",
        ssl_truststore_password="trust-secret",
    )
    shown = repr(config)
    assert not any(s in shown for s in ("key-secret", "store-secret", "trust-secret"))
