"""The broker's own connections on a SASL_* inter-broker listener log in as Kafka's brokers do:
the username/password of sasl_jaas_config's login module for
sasl_mechanism_inter_broker_protocol; without one, the broker refuses to start with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.service_configs import inter_broker_security
from protocol.errors import UsageError

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="broker" password="broker-secret";'
)


def config(**overrides: object) -> BrokerConfig:
    return BrokerConfig(broker_id=1, log_dir=Path("/nonexistent"), **overrides)  # type: ignore[arg-type]


def test_scram_login_from_the_jaas_entry() -> None:
    security = inter_broker_security(config(sasl_jaas_config=JAAS), "SASL_PLAINTEXT", None)
    assert security.sasl_mechanism == "SCRAM-SHA-512"
    assert security.sasl_plain_username == "broker"
    assert security.sasl_plain_password == "broker-secret"
    assert "broker-secret" not in repr(security)


def test_plaintext_needs_no_login() -> None:
    security = inter_broker_security(config(), "PLAINTEXT", None)
    assert security.sasl_mechanism is None and not security.sasl


def test_a_missing_login_is_one_usage_error_without_secrets() -> None:
    plain_only = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="alice" password="alice-secret";'
    )
    with pytest.raises(UsageError, match="needs a ScramLoginModule entry") as info:
        inter_broker_security(config(sasl_jaas_config=plain_only), "SASL_SSL", None)
    assert "alice-secret" not in str(info.value)
