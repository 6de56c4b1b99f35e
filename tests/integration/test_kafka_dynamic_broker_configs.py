"""Dynamic broker configs (broker/dynamic_config.py, broker/dynamic_apply.py) through
confluent-kafka's AdminClient against real brokers: altered on one broker id and on the
cluster default (""), described with their sources, taking effect without a restart, and
kept over one. The refused case (a setting that needs a restart) is in
test_kafka_admin_configs.py's test_refusals_come_back_per_resource, on the shared cluster.
"""

from __future__ import annotations

import socket
import ssl
import uuid
from pathlib import Path
from typing import Any

import pytest

from protocol.kafka.versions import DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS
from tests.fixtures.certs import TestCerts, certs  # noqa: F401
from tests.fixtures.cluster import run_odradek, wait_until
from tests.integration import kafka_wire

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0
LARGE_BYTES = 5000


def _produce(bootstrap: str, topic: str, size: int) -> int | None:
    """Send one record of `size` bytes; None when delivered, else the error code."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 20_000})
    outcome: list[int | None] = []
    producer.produce(topic, b"x" * size,
                     on_delivery=lambda err, _msg: outcome.append(err and err.code()))  # fmt: skip
    producer.flush(TIMEOUT_S)
    assert outcome, "no delivery report"
    return outcome[0]


def _alter(admin: Any, broker: str, name: str, value: str | None) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    res = ConfigResource(ResourceType.BROKER, broker, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op)])  # fmt: skip
    for future in admin.incremental_alter_configs([res]).values():
        future.result(timeout=TIMEOUT_S)


def _alter_default(bootstrap: str, name: str, value: str) -> tuple[int, str | None]:
    """Set one config of the cluster default (the "" broker resource) by hand: neither
    confluent-kafka's Python ConfigResource nor kafka-python takes an empty broker name."""
    key = INCREMENTAL_ALTER_CONFIGS
    entry = kafka_wire.nested(key, 1, "AlterableConfig", name=name, config_operation=0,
                              value=value)  # fmt: skip
    resource = kafka_wire.nested(key, 1, "AlterConfigsResource", resource_type=4,
                                 resource_name="", configs=(entry,))  # fmt: skip
    answer = kafka_wire.call(kafka_wire.addresses(bootstrap)[0], key, 1,
                             resources=(resource,), validate_only=False)  # fmt: skip
    (result,) = answer.responses
    return result.error_code, result.error_message


def _describe_default(bootstrap: str) -> dict[str, str | None]:
    """The cluster default's configs (by hand, as `_alter_default`)."""
    resource = kafka_wire.nested(
        DESCRIBE_CONFIGS,
        4,
        "DescribeConfigsResource",
        resource_type=4,
        resource_name="",
        configuration_keys=None,
    )
    answer = kafka_wire.call(kafka_wire.addresses(bootstrap)[0], DESCRIBE_CONFIGS, 4,
                             resources=(resource,), include_synonyms=False,
                             include_documentation=False)  # fmt: skip
    (result,) = answer.results
    assert result.error_code == 0, result
    return {e.name: e.value for e in result.configs}


def _describe(admin: Any, broker: str) -> dict[str, Any]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    res = ConfigResource(ResourceType.BROKER, broker)
    (future,) = admin.describe_configs([res]).values()
    return dict(future.result(timeout=TIMEOUT_S))


def test_a_broker_config_acts_live_and_is_kept_over_a_restart(cluster_factory: Any) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, ConfigSource, NewTopic

    cluster = cluster_factory(brokers=1)
    bootstrap = cluster.kafka_bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"dyn-{uuid.uuid4().hex[:8]}"
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(timeout=TIMEOUT_S)
    assert _produce(bootstrap, topic, LARGE_BYTES) is None

    _alter(admin, "1", "message.max.bytes", "1000")
    entry = _describe(admin, "1")["message.max.bytes"]
    assert (entry.value, entry.source) == ("1000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert not entry.is_read_only
    too_large = KafkaError.MSG_SIZE_TOO_LARGE
    wait_until(lambda: _produce(bootstrap, topic, LARGE_BYTES) == too_large,
               "message.max.bytes=1000 in effect without a restart", TIMEOUT_S)  # fmt: skip
    assert _produce(bootstrap, topic, 100) is None  # small records still go

    assert _alter_default(bootstrap, "log.retention.ms", "86400000") == (0, None)
    retention = _describe(admin, "1")["log.retention.ms"]
    default_source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert (retention.value, retention.source) == ("86400000", default_source)
    assert _describe_default(bootstrap) == {"log.retention.ms": "86400000"}  # what it sets

    cluster.kill(1, "TERM")
    cluster.start(1)
    entry = _describe(admin, "1")["message.max.bytes"]
    assert (entry.value, entry.source) == ("1000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    # applied before the listeners opened: the first produce after the restart is refused
    assert _produce(bootstrap, topic, LARGE_BYTES) == too_large

    _alter(admin, "1", "message.max.bytes", None)
    wait_until(lambda: _produce(bootstrap, topic, LARGE_BYTES) is None,
               "message.max.bytes back to the default", TIMEOUT_S)  # fmt: skip
    assert _describe(admin, "1")["message.max.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    # the same through `odradek configs`, as kafka-configs --entity-type brokers takes them
    native = ("--bootstrap", cluster.bootstrap)
    done = run_odradek("configs", "alter", "--broker", "1", "--set", "message.max.bytes=2000",
                       *native)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Altered broker 1. Configs: message.max.bytes=2000"
    done = run_odradek("configs", "alter", "--broker-defaults", "--delete", "log.retention.ms",
                       *native)  # fmt: skip
    assert done.stdout.strip() == "Altered the broker defaults. Configs:", done.stderr
    assert _describe_default(bootstrap) == {}
    done = run_odradek("configs", "describe", "--broker", "1", *native)
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()[1:]}
    assert lines["message.max.bytes"] == ["2000", "DYNAMIC_BROKER_CONFIG"], done.stdout
    assert lines["log.retention.ms"][-1] != "DYNAMIC_DEFAULT_BROKER_CONFIG", done.stdout
    bad = run_odradek("configs", "alter", "--broker", "1", "--set", "broker.id=7", *native)
    assert bad.returncode == 1 and "needs a broker restart" in bad.stderr.strip(), bad.stderr


def _served_issuer(port: int) -> str:
    """The issuer CN of the certificate a new TLS connection to `port` is shown."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # we only look at it
    with (
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as raw,
        context.wrap_socket(raw) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    issuer = x509.load_der_x509_certificate(der).issuer
    return str(issuer.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def test_a_listener_keystore_is_reloaded_without_a_restart(
    cluster_factory: Any,
    certs: TestCerts,  # noqa: F811
    tmp_path: Path,
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    first, second = tmp_path / "broker.pem", tmp_path / "renewed.pem"
    for path, issued in ((first, certs.broker), (second, certs.foreign_broker)):
        path.write_bytes(issued.cert_path.read_bytes() + issued.key_path.read_bytes())
    cluster = cluster_factory(
        brokers=1, native_listeners={"INTERNAL": "PLAINTEXT"},
        listeners={"PLAIN": "PLAINTEXT", "SECURE": "SSL"},
        broker_settings={"inter_broker_listener_name": "INTERNAL",
                         "ssl_keystore_location": str(first),
                         "password_encoder_secret": "dynamic-secrets"},
    )  # fmt: skip
    port = cluster.broker(1).listener_ports["SECURE"]
    assert _served_issuer(port) == certs.ca.cert.issuer.rfc4514_string().removeprefix("CN=")
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    name = "listener.name.secure.ssl.keystore.location"
    with pytest.raises(KafkaException) as refused:
        _alter(admin, "1", name, str(tmp_path / "missing.pem"))
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "cannot load the keystore" in refused.value.args[0].str()
    code, message = _alter_default(cluster.kafka_bootstrap, name, str(second))
    assert code == KafkaError.INVALID_REQUEST and "a broker id must be specified" in str(message)

    _alter(admin, "1", name, str(second))
    wait_until(lambda: _served_issuer(port) == "another CA",
               "new connections get the new keystore", TIMEOUT_S)  # fmt: skip
    entry = _describe(admin, "1")[name]
    assert (entry.value, entry.is_read_only) == (str(second), False)

    # a keystore whose key needs a password: the password goes to ZooKeeper encrypted with
    # password.encoder.secret and is decrypted when the broker starts again (else it would
    # fall back to its file's keystore, the first CA's)
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(certs.foreign_broker.key_path.read_bytes(), None)
    locked = tmp_path / "locked.pem"
    locked.write_bytes(certs.foreign_broker.cert_path.read_bytes() + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"key-pass")))  # fmt: skip
    password = "listener.name.secure.ssl.key.password"
    with pytest.raises(KafkaException) as refused:  # the key cannot load without it
        _alter(admin, "1", name, str(locked))
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    both = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in ((name, str(locked)), (password, "key-pass"))]  # fmt: skip
    res = ConfigResource(ResourceType.BROKER, "1", incremental_configs=both)
    for future in admin.incremental_alter_configs([res]).values():
        future.result(timeout=TIMEOUT_S)
    entry = _describe(admin, "1")[password]
    assert (entry.value, entry.is_sensitive) == (None, True)
    cluster.kill(1, "TERM")
    cluster.start(1)
    port = cluster.broker(1).listener_ports["SECURE"]
    assert _served_issuer(port) == "another CA"
