"""`cluster up --secure`'s files (deploy/cluster_security.py): what it writes reads back through
--command-config's own parser, the brokers' keystores chain to the cluster's CA, and no
password shows in a repr or a znode."""

from __future__ import annotations

import json
import ssl
import stat
from pathlib import Path

import pytest

from client.command_config import command_config, parse_properties
from coordinator.cluster import zk as zk_module
from coordinator.cluster.scram_credentials import user_path
from deploy import cluster_security
from deploy.cluster_security import MECHANISM, SecureLayout, jaas, prepare, write_private
from protocol.jaas import single_entry
from protocol.scram import ScramCredential
from tests.unit.coordinator.test_scram_credentials import FakeZk


def test_client_properties_read_back_as_the_admin_over_sasl_ssl(tmp_path: Path) -> None:
    layout = SecureLayout(tmp_path, "broker-pw", 'adm"in\\pw')
    text = layout.client_properties("127.0.0.1:9093")
    config = command_config(parse_properties(text))
    assert config.security_protocol == "SASL_SSL"
    assert config.sasl_mechanism == "SCRAM-SHA-512"
    assert (config.sasl_username, config.sasl_password) == ("admin", 'adm"in\\pw')
    assert config.truststore_location == str(tmp_path / "tls" / "ca.crt")
    assert "pw" not in repr(layout)


def test_broker_settings_name_the_broker_user_and_super_users(tmp_path: Path) -> None:
    layout = SecureLayout(tmp_path, "broker-pw", "admin-pw")
    settings = layout.broker_settings(2)
    assert settings["ssl_keystore_location"] == str(tmp_path / "tls" / "broker-2.pem")
    assert settings["super_users"] == "User:broker;User:admin"
    assert settings["sasl_mechanism_inter_broker_protocol"] == "SCRAM-SHA-512"
    entry = single_entry(settings["sasl_jaas_config"])
    assert (entry.options["username"], entry.options["password"]) == ("broker", "broker-pw")
    assert settings["authorizer_class_name"]


def test_python_snippet_is_python_with_both_clients(tmp_path: Path) -> None:
    layout = SecureLayout(tmp_path, "b", "admin-pw")
    scope: dict[str, object] = {}
    exec(layout.python_snippet("127.0.0.1:2", "127.0.0.1:1"), scope)
    assert scope["conf"] == layout.confluent_config("127.0.0.1:2")
    native = scope["native"]
    assert isinstance(native, dict)
    assert native["sasl_plain_password"] == "admin-pw"
    assert native["bootstrap_servers"] == "127.0.0.1:1"


def test_jaas_quotes_survive_the_parser() -> None:
    entry = single_entry(jaas("u", 'a"b\\c;d'))
    assert entry.options == {"username": "u", "password": 'a"b\\c;d'}


def test_private_files_are_0600(tmp_path: Path) -> None:
    write_private(tmp_path / "x" / "secret", "s")
    assert stat.S_IMODE((tmp_path / "x" / "secret").stat().st_mode) == 0o600


def test_prepare_makes_keystores_that_chain_to_the_ca(tmp_path: Path) -> None:
    layout = prepare(tmp_path, [1, 2], {1: "127.0.0.1", 2: "127.0.0.1"})
    assert layout.broker_password != layout.admin_password
    for broker_id in (1, 2):
        path = layout.keystore_path(broker_id)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(path)  # key and chain in one PEM file, as ssl_keystore_location
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(layout.ca_path)
    assert len(client.get_ca_certs()) == 1
    assert sorted(p.name for p in (tmp_path / "tls").iterdir()) == [
        "broker-1.pem", "broker-2.pem", "ca.crt", "ca.key",
    ]  # fmt: skip


class _Zk(FakeZk):
    """The in-memory ZooKeeper of the storage tests, started and stopped as a ZkClient is."""

    def __init__(self, hosts: str, session_timeout_ms: int) -> None:
        super().__init__()
        self.nodes.update(NODES)
        self.started = False

    async def start(self, timeout_s: float) -> None:
        self.started = True

    async def stop(self) -> None:
        NODES.update(self.nodes)


NODES: dict[str, tuple[bytes, int]] = {}


def test_bootstrap_users_are_kafkas_credentials_and_keep_the_nodes_other_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """write_users stores as AlterUserScramCredentials does (coordinator/cluster/
    scram_credentials.py): salted, iterated keys and never the password; a quota already
    on the node stays."""
    monkeypatch.setattr(zk_module, "ZkClient", _Zk)
    NODES.clear()
    NODES[user_path("app")] = (b'{"version":1,"config":{"producer_byte_rate":"1024"}}', 0)
    cluster_security.write_users(
        "zk:2181", [("broker", MECHANISM, "the-password"), ("app", MECHANISM, "pw")], 10_000
    )
    broker = json.loads(NODES[user_path("broker")][0])
    assert b"the-password" not in NODES[user_path("broker")][0] and broker["version"] == 1
    assert ScramCredential.from_string(broker["config"][MECHANISM]).iterations >= 4096
    app = json.loads(NODES[user_path("app")][0])["config"]
    assert app["producer_byte_rate"] == "1024" and MECHANISM in app


def test_bootstrap_user_command_refuses_an_empty_password_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.password"
    empty.write_text("\n")
    code = cluster_security.main(
        ["--zookeeper", "127.0.0.1:1", "--user", "broker", "--password-file", str(empty)]
    )
    assert code == 1
    assert "its first line is empty" in capsys.readouterr().err
