"""The broker's SASL settings (broker/config.py): each bad value is one UsageError line."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import BrokerConfig, load_config
from protocol.errors import UsageError

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret";'
)


def config(**values: object) -> BrokerConfig:
    return BrokerConfig(broker_id=1, log_dir=Path("/tmp/x"), **values)  # type: ignore[arg-type]


def test_defaults() -> None:
    c = config()
    assert c.sasl_enabled_mechanisms == "SCRAM-SHA-256,SCRAM-SHA-512"
    assert (c.connections_max_reauth_ms, c.connection_failed_authentication_delay_ms) == (0, 100)


def test_plain_with_users() -> None:
    c = config(sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-512", sasl_jaas_config=JAAS)
    assert "admin-secret" not in repr(c)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"sasl_enabled_mechanisms": "GSSAPI"}, "does not serve GSSAPI"),
        ({"sasl_mechanism_inter_broker_protocol": "OAUTHBEARER"}, "does not serve OAUTHBEARER"),
        ({"sasl_enabled_mechanisms": "PLAIN"}, "names no PLAIN user"),
        ({"sasl_jaas_config": JAAS}, "does not have PLAIN"),
        ({"sasl_jaas_config": "PlainLoginModule required user_a=;"}, "sasl.jaas.config"),
        ({"connections_max_reauth_ms": -1}, "connections_max_reauth_ms must be >= 0"),
        ({"connection_failed_authentication_delay_ms": -5}, "must be >= 0"),
        ({"connection_failed_authentication_delay_ms": 600_000}, "below connections_max_idle"),
        ({"sasl_server_max_receive_size": 0}, "sasl_server_max_receive_size must be positive"),
    ],
)
def test_bad_settings(values: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        config(**values)
    assert "\n" not in str(info.value) and "admin-secret" not in str(info.value)


def test_from_a_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "broker.toml"
    path.write_text(
        'broker_id = 1\nlog_dir = "/tmp/x"\nsasl_enabled_mechanisms = "PLAIN"\n'
        f"sasl_jaas_config = '{JAAS}'\nconnections_max_reauth_ms = 3000\n"
    )
    c = load_config(path)
    assert (c.sasl_enabled_mechanisms, c.connections_max_reauth_ms) == ("PLAIN", 3000)
    path.write_text('broker_id = 1\nlog_dir = "/tmp/x"\nsasl_jaas_config = 5\n')
    with pytest.raises(UsageError, match="sasl_jaas_config must be a str"):
        load_config(path)


def test_describe_configs_never_shows_the_jaas_config() -> None:
    from broker.config_entries import broker_entries

    c = config(sasl_enabled_mechanisms="PLAIN", sasl_jaas_config=JAAS, explicit=frozenset(
        {"sasl_enabled_mechanisms", "sasl_jaas_config"}))  # fmt: skip
    entries = {e.name: e for e in broker_entries(c, "1", synonyms=True)}
    jaas = entries["sasl.jaas.config"]
    assert (jaas.value, jaas.is_sensitive) == (None, True)
    assert all(s.value is None for s in jaas.synonyms)
    assert entries["sasl.enabled.mechanisms"].value == "PLAIN"
    assert not entries["sasl.enabled.mechanisms"].is_sensitive
    assert "admin-secret" not in repr(list(entries.values()))


def test_the_inter_broker_mechanism_must_be_enabled_on_a_sasl_inter_broker_listener() -> None:
    sasl_native = {"native_listeners": "INTERNAL://127.0.0.1:9092",
                   "listener_security_protocol_map": "INTERNAL:SASL_PLAINTEXT"}  # fmt: skip
    with pytest.raises(UsageError, match="must be one of the inter-broker listener INTERNAL's"):
        config(sasl_enabled_mechanisms="SCRAM-SHA-256", **sasl_native)
    ok = config(sasl_enabled_mechanisms="SCRAM-SHA-256", **sasl_native,
                sasl_mechanism_inter_broker_protocol="SCRAM-SHA-256")  # fmt: skip
    assert ok.sasl_mechanism_inter_broker_protocol == "SCRAM-SHA-256"
    config(sasl_enabled_mechanisms="SCRAM-SHA-256")  # a PLAINTEXT inter-broker listener


TWO_SASL = {"native_listeners": "EXTERNAL://h:1,INTERNAL://h:2",
            "listener_security_protocol_map": "EXTERNAL:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
            "inter_broker_listener_name": "INTERNAL"}  # fmt: skip


def test_a_listener_has_its_own_mechanisms_and_plain_users(tmp_path: Path) -> None:
    """Kafka's listener.name.<l>.sasl.enabled.mechanisms and .<mechanism>.sasl.jaas.config,
    quoted or as nested TOML tables, over the broker-wide settings."""
    from broker.service_configs import sasl_configs

    path = tmp_path / "broker.toml"
    path.write_text(
        'broker_id = 1\nlog_dir = "/tmp/x"\n'
        + "".join(f'{k} = "{v}"\n' for k, v in TWO_SASL.items())
        + '"listener.name.external.sasl.enabled.mechanisms" = "PLAIN,SCRAM-SHA-512"\n'
        + f"listener.name.external.plain.sasl.jaas.config = '{JAAS}'\n"
    )
    c = load_config(path)
    broker_wide, per_listener = sasl_configs(c)
    assert broker_wide.enabled_mechanisms == ("SCRAM-SHA-256", "SCRAM-SHA-512")
    assert not broker_wide.plain_users
    assert list(per_listener) == ["EXTERNAL"]
    assert per_listener["EXTERNAL"].enabled_mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert dict(per_listener["EXTERNAL"].plain_users) == {"admin": "admin-secret"}
    assert "admin-secret" not in repr(c)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"listener.name.external.sasl.enabled.mechanisms": "PLAIN"},
         "listener.name.external.sasl.enabled.mechanisms has PLAIN but "
         "listener.name.external.plain.sasl.jaas.config names no PLAIN user"),
        ({"listener.name.external.plain.sasl.jaas.config": JAAS},
         "listener.name.external.plain.sasl.jaas.config names PLAIN users but"),
        ({"listener.name.external.sasl.enabled.mechanisms": "GSSAPI"}, "does not serve GSSAPI"),
        ({"listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-256"},
         "sasl_mechanism_inter_broker_protocol SCRAM-SHA-512 must be one of the inter-broker "
         "listener INTERNAL's sasl_enabled_mechanisms \\(SCRAM-SHA-256\\)"),
        ({"listener.name.external.sasl.jaas.config": JAAS}, "name the mechanism"),
    ],
)  # fmt: skip
def test_bad_per_listener_sasl_settings(values: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        load_config(None, broker_id=1, log_dir="/tmp/x", **TWO_SASL, **values)
    assert "\n" not in str(info.value) and "admin-secret" not in str(info.value)


def test_the_inter_broker_login_comes_from_its_listeners_jaas() -> None:
    from broker.service_configs import inter_broker_security

    scram = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
             'username="broker" password="broker-secret";')  # fmt: skip
    c = load_config(None, broker_id=1, log_dir="/tmp/x", **TWO_SASL,
                    **{"listener.name.internal.scram-sha-512.sasl.jaas.config": scram})  # fmt: skip
    security = inter_broker_security(c, "SASL_PLAINTEXT", None, "INTERNAL")
    assert (security.sasl_plain_username, security.sasl_plain_password) == (
        "broker", "broker-secret")  # fmt: skip
    with pytest.raises(UsageError, match="needs a ScramLoginModule"):
        inter_broker_security(c, "SASL_PLAINTEXT", None, "EXTERNAL")
