"""SCRAM users end to end on two real broker processes sharing one ZooKeeper.

- `odradek users add` (native client, KIP-554) creates a user; confluent-kafka then produces,
  consumes in a group and commits with SCRAM-SHA-256 and with SCRAM-SHA-512 on the other broker.
- The /config/users znode is Kafka's JSON and holds no password.
- confluent-kafka's AdminClient (the Kafka door) alters and describes credentials, with Kafka's
  errors for an unknown user and for too few iterations.
- A changed password takes effect on the other broker within a second (its cache follows the
  change notification), and the old one is refused with Kafka's message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from coordinator.cluster.scram_credentials import encode_user_config
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.scram import make_credential
from tests.fixtures.cluster import _make_cluster, _tear_down, run_odradek, wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 40.0
CLIENT_TIMEOUT_S = 30.0
BROKER_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="broker" password="broker-secret";'
)
FOLLOW_S = 1.0  # the bound: a changed credential works on every broker within a second


@dataclass
class Broker:
    cluster: LocalCluster
    id: int

    def port(self, listener: str) -> int:
        return self.cluster.broker(self.id).listener_ports[listener]

    @property
    def native(self) -> int:  # PLAINTEXT native listener (inter-broker by default, the CLI)
        return self.port("INTERNAL")

    @property
    def native_sasl(self) -> int:
        return self.port("NSASL")

    @property
    def kafka(self) -> int:  # PLAINTEXT Kafka listener (admin)
        return self.port("PLAINTEXT")

    @property
    def kafka_sasl(self) -> int:
        return self.port("SASL_PLAINTEXT")

    def log(self) -> str:
        return (self.cluster.dir / f"broker-{self.id}.log").read_text(errors="replace")


@dataclass
class Pair:
    brokers: list[Broker]
    chroot: str
    where: Path


@contextlib.contextmanager
def two_brokers(
    zk_server: ZkProcess, where: Path, inter_broker: str = "INTERNAL"
) -> Iterator[Pair]:
    """Two brokers, each with a PLAINTEXT and a SASL_PLAINTEXT listener on both doors (native:
    INTERNAL and NSASL; Kafka: PLAINTEXT and SASL_PLAINTEXT); `inter_broker`: the native
    listener they dial each other on."""
    cluster = _make_cluster(
        zk_server, where, 2,
        native_listeners={"INTERNAL": "PLAINTEXT", "NSASL": "SASL_PLAINTEXT"},
        listeners={"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"},
        broker_settings={
            "inter_broker_listener_name": inter_broker, "sasl_jaas_config": BROKER_JAAS,
            "sasl_enabled_mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        },
    )  # fmt: skip
    assert cluster.zookeeper_given is not None
    p = Pair([Broker(cluster, 1), Broker(cluster, 2)], cluster.zookeeper_given, where)
    if inter_broker != "INTERNAL":  # the brokers' own user exists before they dial each other
        write_znode(p, "broker", {"SCRAM-SHA-512": make_credential(
            "SCRAM-SHA-512", "broker-secret", 4096).to_string()})  # fmt: skip
    try:
        cluster.up()
        wait_until(lambda: _both_up(p), "both brokers to answer", START_TIMEOUT_S)
        yield p
    finally:
        _tear_down(cluster)


def _both_up(pair: Pair) -> bool:
    from confluent_kafka.admin import AdminClient

    for b in pair.brokers:
        alive = b.cluster.broker_states()[b.id] == "alive"
        assert alive, f"a broker exited:\n{b.log()[-3000:]}"
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{pair.brokers[0].kafka}"})
    try:
        return len(admin.list_topics(timeout=2).brokers) == 2
    except Exception:
        return False


@pytest.fixture(scope="module")
def pair(zk_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with two_brokers(zk_server, tmp_path_factory.mktemp("scram")) as p:
        yield p


def odradek(pair: Pair, *args: str) -> subprocess.CompletedProcess[str]:
    return run_odradek(*args, "--bootstrap", f"127.0.0.1:{pair.brokers[0].native}", cwd=REPO)


def password_file(pair: Pair, password: str) -> str:
    path = pair.where / f"pw-{uuid.uuid4().hex[:6]}"
    path.write_text(password + "\n")
    return str(path)


def scram_config(broker: Broker, mechanism: str, user: str, password: str, **extra: Any) -> dict:
    return {
        "bootstrap.servers": f"127.0.0.1:{broker.kafka_sasl}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def produce_consume_commit(broker: Broker, mechanism: str, user: str, password: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = f"scram-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"
    values = [f"{mechanism}-{i}".encode() for i in range(10)]
    producer = Producer(scram_config(broker, mechanism, user, password, acks="all"))
    errors: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for v in values:
        producer.produce(topic, v, on_delivery=delivered)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    assert errors == []
    consumer = Consumer(scram_config(
        broker, mechanism, user, password, **{"group.id": f"g-{topic}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False}))  # fmt: skip
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while len(got) < len(values) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert got == values
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=CLIENT_TIMEOUT_S)
        assert committed[0].offset == len(values)
    finally:
        consumer.close()


def write_znode(pair: Pair, user: str, config: dict[str, str]) -> None:
    from kazoo.client import KazooClient

    hosts, _, root = pair.chroot.partition("/")  # the chroot does not exist yet
    zk = KazooClient(hosts=hosts)
    zk.start(timeout=15)
    try:
        zk.create(f"/{root}/config/users/{user}", encode_user_config(config), makepath=True)
    finally:
        zk.stop()
        zk.close()


def read_znode(pair: Pair, user: str) -> bytes:
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=pair.chroot)
    zk.start(timeout=15)
    try:
        data, _ = zk.get(f"/config/users/{user}")
        return bytes(data)
    finally:
        zk.stop()
        zk.close()


def test_users_add_then_confluent_kafka_logs_in_with_both_mechanisms(pair: Pair) -> None:
    pw = password_file(pair, "alice-secret")
    both = ["--mechanism", "SCRAM-SHA-256", "--mechanism", "SCRAM-SHA-512"]
    added = odradek(pair, "users", "add", "alice", *both, "--iterations", "8192",
                    "--password-file", pw)  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = odradek(pair, "users", "list", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["users"] == [
        {"user": "alice", "mechanism": "SCRAM-SHA-256", "iterations": 8192},
        {"user": "alice", "mechanism": "SCRAM-SHA-512", "iterations": 8192},
    ]
    node = read_znode(pair, "alice")
    assert b"alice-secret" not in node
    config = json.loads(node)
    assert config["version"] == 1
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        keys = [kv.split("=", 1)[0] for kv in config["config"][mechanism].split(",")]
        assert keys == ["salt", "stored_key", "server_key", "iterations"]
        assert config["config"][mechanism].endswith(",iterations=8192")
    for b in pair.brokers:
        assert "alice-secret" not in b.log()
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        produce_consume_commit(pair.brokers[1], mechanism, "alice", "alice-secret")


def test_confluent_admin_alters_and_describes_with_kafkas_errors(pair: Pair) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{pair.brokers[0].kafka}"})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("bob", info, b"bob-secret", b"salt-of-bob")]
    )
    futures["bob"].result(CLIENT_TIMEOUT_S)
    described = admin.describe_user_scram_credentials(["bob"])["bob"].result(CLIENT_TIMEOUT_S)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 4096)
    ]
    with pytest.raises(KafkaException) as unknown:
        admin.describe_user_scram_credentials(["nobody"])["nobody"].result(CLIENT_TIMEOUT_S)
    assert unknown.value.args[0].name() == "RESOURCE_NOT_FOUND"
    weak = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", weak, b"carol-secret", b"salt")]
    )
    with pytest.raises(KafkaException) as refused:
        futures["carol"].result(CLIENT_TIMEOUT_S)
    assert refused.value.args[0].name() == "UNACCEPTABLE_CREDENTIAL"
    assert "Too few iterations" in refused.value.args[0].str()
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)]
    )
    futures["bob"].result(CLIENT_TIMEOUT_S)
    with pytest.raises(KafkaException):
        admin.describe_user_scram_credentials(["bob"])["bob"].result(CLIENT_TIMEOUT_S)


async def _native_login(broker: Broker, user: str, password: str) -> None:
    from transport.connection import BrokerConnection
    from transport.security import SecurityConfig

    security = SecurityConfig(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=user, sasl_plain_password=password,
    )  # fmt: skip
    conn = await BrokerConnection.connect("127.0.0.1", broker.native_sasl, security=security)
    await conn.close()


def test_a_changed_password_works_on_the_other_broker_within_a_second(pair: Pair) -> None:
    from protocol.errors import SaslAuthenticationFailedError

    first = odradek(pair, "users", "add", "dave", "--password-file", password_file(pair, "old-pw"))
    assert first.returncode == 0, first.stderr
    other = pair.brokers[1]
    wait_until(lambda: _logs_in(other, "dave", "old-pw"), "dave's first password", 10.0)
    changed = odradek(
        pair, "users", "add", "dave", "--password-file", password_file(pair, "new-pw")
    )
    assert changed.returncode == 0, changed.stderr
    wait_until(lambda: _logs_in(other, "dave", "new-pw"), "the new password on broker 2", FOLLOW_S)
    with pytest.raises(SaslAuthenticationFailedError, match="invalid credentials"):
        asyncio.run(_native_login(other, "dave", "old-pw"))
    removed = odradek(pair, "users", "remove", "dave")
    assert removed.returncode == 0, removed.stderr
    wait_until(lambda: not _logs_in(other, "dave", "new-pw"), "dave removed on broker 2", FOLLOW_S)


def _logs_in(broker: Broker, user: str, password: str) -> bool:
    from protocol.errors import SaslAuthenticationFailedError

    try:
        asyncio.run(_native_login(broker, user, password))
    except SaslAuthenticationFailedError:
        return False
    return True


def test_users_cli_refuses_bad_input_with_one_line(pair: Pair) -> None:
    weak = odradek(pair, "users", "add", "erin", "--iterations", "100",
                   "--password-file", password_file(pair, "pw"))  # fmt: skip
    assert weak.returncode == 2 and "4096..16384" in weak.stderr
    assert len(weak.stderr.strip().splitlines()) == 1
    nobody = odradek(pair, "users", "list", "nobody")
    assert nobody.returncode == 1 and "does not exist" in nobody.stderr
    warned = odradek(pair, "users", "add", "erin", "--password", "erin-secret")
    assert warned.returncode == 0 and "shell history" in warned.stderr


def test_brokers_replicate_over_a_scram_inter_broker_listener(
    zk_server: Any, tmp_path: Path
) -> None:
    """Replica fetchers and the controller's requests log in with sasl_jaas_config's
    ScramLoginModule user: with min.insync.replicas=2, acks=all only succeeds once the
    follower fetches over the SASL_PLAINTEXT inter-broker listener (NSASL)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    with two_brokers(zk_server, tmp_path, inter_broker="NSASL") as p:
        bootstrap = f"127.0.0.1:{p.brokers[0].kafka}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = NewTopic("replicated", 1, 2, config={"min.insync.replicas": "2"})
        admin.create_topics([topic])["replicated"].result(CLIENT_TIMEOUT_S)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        errors: list[Any] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)

        for i in range(10):
            producer.produce("replicated", f"r{i}".encode(), on_delivery=delivered)
        assert producer.flush(CLIENT_TIMEOUT_S) == 0
        assert errors == []
        for b in p.brokers:
            assert "broker-secret" not in b.log()
            assert "Authentication failed" not in b.log()


def test_the_native_client_produces_and_consumes_in_a_group_with_scram(pair: Pair) -> None:
    """odradek produce/consume (the native client) through --command-config's Kafka
    properties: SCRAM-SHA-512 on the native door's SASL listener, a group that commits."""
    added = odradek(pair, "users", "add", "frank", "--password-file",
                    password_file(pair, "frank-secret"))  # fmt: skip
    assert added.returncode == 0, added.stderr
    config = pair.where / "frank.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="frank" password="frank-secret";\n'
    )
    created = odradek(pair, "topics", "create", "native-scram", "--partitions", "1")
    assert created.returncode == 0, created.stderr
    sasl = f"127.0.0.1:{pair.brokers[1].native_sasl}"
    common = ["--bootstrap", sasl, "--command-config", str(config)]
    lines = "".join(f"n{i}\n" for i in range(10))
    produced = run_odradek("produce", "native-scram", *common, input=lines, cwd=REPO)
    assert produced.returncode == 0, produced.stderr
    consumed = run_odradek("consume", "native-scram", *common, "--group", "native-g",
                           "--from-beginning", "--max-messages", "10", cwd=REPO)  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == [f"n{i}" for i in range(10)]
    wrong = pair.where / "wrong.properties"
    wrong.write_text(config.read_text().replace("frank-secret", "nope"))
    refused = run_odradek("produce", "native-scram", "--bootstrap", sasl, "--command-config",
                          str(wrong), input="x\n", cwd=REPO)  # fmt: skip
    assert refused.returncode == 1
    assert "SASL_AUTHENTICATION_FAILED" in refused.stderr and "nope" not in refused.stderr
