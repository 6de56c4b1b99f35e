"""A local cluster's own listeners (deploy/cluster_listeners.py): the settings each broker gets
and the names refused; and LocalCluster's checks of them, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import listener_setting, load_config
from deploy.cluster import ClusterError, LocalCluster
from deploy.cluster_config import write_broker_config
from deploy.cluster_listeners import check_listeners, listener_names, listener_settings
from protocol.errors import UsageError


def test_settings_name_each_listener_with_its_port_and_map_it_to_its_protocol() -> None:
    kafka = {"CLIENT": "PLAINTEXT", "SCRAMONLY": "SASL_PLAINTEXT"}
    native = {"INTERNAL": "PLAINTEXT"}
    ports = {"CLIENT": 2001, "SCRAMONLY": 2002, "INTERNAL": 2003}
    settings = listener_settings("127.0.0.1", kafka, native, ports, kafka_port=0)
    assert settings["listeners"] == "CLIENT://127.0.0.1:2001,SCRAMONLY://127.0.0.1:2002"
    assert settings["native_listeners"] == "INTERNAL://127.0.0.1:2003"
    protocols = dict(e.split(":") for e in settings["listener_security_protocol_map"].split(","))
    assert protocols["SCRAMONLY"] == "SASL_PLAINTEXT" and protocols["CLIENT"] == "PLAINTEXT"
    assert protocols["PLAINTEXT"] == "PLAINTEXT"  # Kafka's default entries stay
    assert listener_names(kafka, native) == ["INTERNAL", "CLIENT", "SCRAMONLY"]

    # and the broker reads them as meant
    config = load_config(None, broker_id=1, log_dir="/tmp/x", **settings)
    native_read = [(x.name, x.port, x.security_protocol) for x in config.native_listener_list()]
    kafka_read = [(x.name, x.port, x.security_protocol) for x in config.kafka_listeners()]
    assert native_read == [("INTERNAL", 2003, "PLAINTEXT")]
    assert kafka_read == [("CLIENT", 2001, "PLAINTEXT"), ("SCRAMONLY", 2002, "SASL_PLAINTEXT")]


def test_kafkas_dotted_names_reach_the_broker_whole(tmp_path: Path) -> None:
    # written unquoted, `ssl.client.auth = ...` was TOML's table ssl, refused as setting 'ssl'
    kafka = {"SASL_PLAINTEXT": "SASL_PLAINTEXT", "SCRAMONLY": "SASL_PLAINTEXT"}
    ports = {"SASL_PLAINTEXT": 2001, "SCRAMONLY": 2002}
    settings = {
        **listener_settings("127.0.0.1", kafka, {}, ports, kafka_port=0),
        "listener.name.scramonly.sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "ssl.client.auth": "requested",
        "logger_levels": "odradek.broker.sasl=DEBUG",
    }
    path = tmp_path / "broker-1.toml"
    write_broker_config(path, "127.0.0.1", 4000, settings)
    config = load_config(path, broker_id=1, log_dir=str(tmp_path))
    mechanisms = "sasl_enabled_mechanisms"
    assert listener_setting(config, "SCRAMONLY", mechanisms) == "SCRAM-SHA-256"
    assert listener_setting(config, "SASL_PLAINTEXT", mechanisms) == config.sasl_enabled_mechanisms
    assert config.ssl_client_auth == "requested"
    assert config.logger_levels == "odradek.broker.sasl=DEBUG"
    assert config.zookeeper_session_timeout_ms == 4000
    assert config.group_initial_rebalance_delay_ms == 0  # a development cluster's, as Kafka's
    write_broker_config(path, "127.0.0.1", 4000, {"group_initial_rebalance_delay_ms": 3000})
    assert load_config(path, broker_id=1, log_dir="/x").group_initial_rebalance_delay_ms == 3000


def test_a_door_given_nothing_keeps_its_plaintext_default() -> None:
    settings = listener_settings("h", {}, {"INTERNAL": "PLAINTEXT"}, {"INTERNAL": 7}, 9093)
    assert settings["listeners"] == "PLAINTEXT://h:9093"
    assert settings["native_listeners"] == "INTERNAL://h:7"
    sasl = {"SASL_PLAINTEXT": "SASL_PLAINTEXT"}
    only_kafka = listener_settings("h", sasl, {}, {"SASL_PLAINTEXT": 8}, 0)
    assert only_kafka["listeners"] == "SASL_PLAINTEXT://h:8"
    assert "native_listeners" not in only_kafka  # the broker's --port, PLAINTEXT


@pytest.mark.parametrize(
    ("kafka", "native", "message"),
    [
        ({"ssl": "SSL"}, {}, "is not a listener name"),
        ({"A": "TLS"}, {}, "not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        ({"SAME": "SSL"}, {"SAME": "SSL"}, "on both doors"),
    ],
)
def test_bad_listeners_get_one_line(
    kafka: dict[str, str], native: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        check_listeners(kafka, native)
    with pytest.raises(UsageError, match=message):
        LocalCluster("/tmp/never-made", listeners=kafka, native_listeners=native)


def test_a_secure_cluster_takes_no_listeners_of_ones_own() -> None:
    with pytest.raises(ClusterError, match="makes its own listeners"):
        LocalCluster("/tmp/never-made", secure=True, listeners={"SSL": "SSL"})
