"""SASL_PLAINTEXT against a real broker process: with PLAIN, confluent-kafka (librdkafka) and
kafka-python produce, consume in a group and commit; a SCRAM-SHA-256 user made through
AlterUserScramCredentials (KIP-554) logs in once the broker's credential cache has it; a wrong
password and an unknown user are refused with SASL_AUTHENTICATION_FAILED and Kafka's message,
quickly; a request before authentication closes the connection; and with a short
connections_max_reauth_ms (KIP-368) a confluent-kafka producer sending across several session
lifetimes keeps working, re-authenticating on its connections (the broker's log shows it)."""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from tests.fixtures.cluster import shared_cluster, wait_until
from tests.integration.kafka_clients import kafka_python_subscribe

pytestmark = pytest.mark.integration

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="alice-secret";'
)
REAUTH_MS = 3000  # KIP-368: short, so that a test spans several session lifetimes
START_TIMEOUT_S = 30.0
CLIENT_TIMEOUT_S = 30.0


@dataclass
class SaslBroker:
    cluster: LocalCluster  # one broker; its native door is PLAINTEXT (LocalCluster's probes)

    @property
    def kafka_port(self) -> int:
        return self.cluster.broker(1).listener_ports["SASL_PLAINTEXT"]

    @property
    def scram_only_port(self) -> int:  # listener.name.scramonly.sasl.enabled.mechanisms
        return self.cluster.broker(1).listener_ports["SCRAMONLY"]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    def log(self) -> str:
        return self.cluster.broker_log(1).read_text(errors="replace")


@pytest.fixture(scope="module")
def sasl_broker(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SaslBroker]:
    """Settings no other module shares (a short KIP-368 lifetime, the SASL logger at DEBUG,
    PLAIN users, a SCRAM-only listener), so a module-scoped cluster, not the pool's."""
    for cluster in shared_cluster(
        zk_server, tmp_path_factory, 1,
        listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT", "SCRAMONLY": "SASL_PLAINTEXT"},
        broker_settings={
            "sasl_enabled_mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.scramonly.sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "sasl_jaas_config": JAAS,
            "connections_max_reauth_ms": REAUTH_MS,
            "logger_levels": "odradek.broker.sasl=DEBUG",  # its re-authentication lines
        },
    ):  # fmt: skip
        broker = SaslBroker(cluster)
        wait_until(lambda b=broker: _metadata_ok(b), "the SASL broker to answer", START_TIMEOUT_S)
        yield broker


def confluent_config(
    broker: SaslBroker, user: str = "alice", password: str = "alice-secret", **extra: Any
) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def _metadata_ok(broker: SaslBroker) -> bool:
    from confluent_kafka.admin import AdminClient  # type: ignore[import-untyped]

    alive = broker.cluster.broker_states()[1] == "alive"
    assert alive, f"the broker exited:\n{broker.log()[-3000:]}"
    admin = AdminClient(confluent_config(broker, "admin", "admin-secret"))
    try:
        return len(admin.list_topics(timeout=2).brokers) == 1
    except Exception:
        return False


def _keep(errors: list[Any], err: Any) -> None:
    if err is not None:
        errors.append(err)


def confluent_produce(broker: SaslBroker, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer(dict(confluent_config(broker), acks="all"))
    errors: list[Any] = []
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, msg: _keep(errors, err))
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    assert errors == []


def confluent_consume(broker: SaslBroker, topic: str, group: str, count: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    settings = {"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    consumer = Consumer(dict(confluent_config(broker), **settings))
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=CLIENT_TIMEOUT_S)
        assert committed[0].offset == count
        return got
    finally:
        consumer.close()


# --- produce, consume in a group, commit -----------------------------------------------------


def test_confluent_kafka_produces_consumes_and_commits(sasl_broker: SaslBroker) -> None:
    topic = f"plain-ck-{uuid.uuid4().hex[:6]}"
    values = [f"v{i}".encode() for i in range(20)]
    confluent_produce(sasl_broker, topic, values)
    assert confluent_consume(sasl_broker, topic, "ck-group", len(values)) == values


def test_kafka_python_produces_consumes_and_commits(sasl_broker: SaslBroker) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # type: ignore[import-untyped]

    security = {
        "bootstrap_servers": sasl_broker.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    topic = f"plain-kp-{uuid.uuid4().hex[:6]}"
    values = [f"k{i}".encode() for i in range(20)]
    producer = KafkaProducer(acks="all", **security)
    try:
        for v in values:
            producer.send(topic, v).get(CLIENT_TIMEOUT_S)
    finally:
        producer.close()
    consumer = KafkaConsumer(group_id="kp-group", auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=20_000,
                             **security)  # fmt: skip
    try:
        kafka_python_subscribe(consumer, [topic])
        got = []
        for msg in consumer:
            got.append(msg.value)
            if len(got) == len(values):
                break
        consumer.commit()
        assert got == values
        assert consumer.committed(TopicPartition(topic, 0)) == len(values)
    finally:
        consumer.close()


def _make_scram_user(broker: SaslBroker, user: str, password: str) -> None:
    """A SCRAM-SHA-256 user made with KIP-554's AlterUserScramCredentials, as admin."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(confluent_config(broker, "admin", "admin-secret"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    upsert = UserScramCredentialUpsertion(user, info, password.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(CLIENT_TIMEOUT_S)


def _login(
    broker: SaslBroker, user: str, password: str, mechanism: str, port: int | None = None
) -> list[str]:
    """A confluent-kafka admin's login on `port` (the SASL_PLAINTEXT listener's by default):
    [] once it lists the cluster, else what librdkafka told error_cb."""
    from confluent_kafka.admin import AdminClient

    told: list[str] = []
    conf = confluent_config(broker, user, password, **{"sasl.mechanism": mechanism})
    if port is not None:
        conf["bootstrap.servers"] = f"127.0.0.1:{port}"
    conf["error_cb"] = lambda err: told.append(str(err))
    admin = AdminClient(conf)
    try:
        if len(admin.list_topics(timeout=2).brokers) == 1:
            return []
    except Exception as exc:
        told.append(str(exc))
    admin.poll(1.0)  # serves error_cb
    return told or ["no brokers listed"]


def test_a_scram_user_made_with_kip554_logs_in(sasl_broker: SaslBroker) -> None:
    _make_scram_user(sasl_broker, "carol", "carol-secret")
    wait_until(lambda: not _login(sasl_broker, "carol", "carol-secret", "SCRAM-SHA-256"),
               "carol's SCRAM-SHA-256 login", 10.0)  # fmt: skip


def test_a_listener_serves_its_own_mechanisms(sasl_broker: SaslBroker) -> None:
    """listener.name.scramonly.sasl.enabled.mechanisms=SCRAM-SHA-256 over the broker's
    PLAIN,SCRAM-SHA-256,SCRAM-SHA-512: PLAIN works on the other listener, not on that one."""
    port = sasl_broker.scram_only_port
    _make_scram_user(sasl_broker, "dave", "dave-secret")
    wait_until(lambda: not _login(sasl_broker, "dave", "dave-secret", "SCRAM-SHA-256", port),
               "dave's SCRAM-SHA-256 login on SCRAMONLY", 10.0)  # fmt: skip
    assert _login(sasl_broker, "alice", "alice-secret", "PLAIN") == []
    refused = " ".join(_login(sasl_broker, "alice", "alice-secret", "PLAIN", port))
    assert "Unsupported SASL mechanism" in refused and "SCRAM-SHA-256" in refused, refused
    assert "SCRAM-SHA-512" not in refused, refused  # the listener's list, not the broker's


def test_aiokafka_produces_consumes_and_commits(sasl_broker: SaslBroker) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # type: ignore[import-untyped]

    security = {
        "bootstrap_servers": sasl_broker.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    topic = f"plain-aio-{uuid.uuid4().hex[:6]}"
    values = [f"a{i}".encode() for i in range(20)]

    async def run() -> tuple[list[bytes], int | None]:
        producer = AIOKafkaProducer(acks="all", **security)
        await producer.start()
        try:
            for v in values:
                await producer.send_and_wait(topic, v)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id="aio-group", auto_offset_reset="earliest",
                                    enable_auto_commit=False, **security)  # fmt: skip
        await consumer.start()
        try:
            got: list[bytes] = []
            async with asyncio.timeout(CLIENT_TIMEOUT_S):
                while len(got) < len(values):
                    batch = await consumer.getmany(timeout_ms=500)
                    got += [m.value for ms in batch.values() for m in ms if m.value is not None]
            await consumer.commit()
            return got, await consumer.committed(TopicPartition(topic, 0))
        finally:
            await consumer.stop()

    got, committed = asyncio.run(run())
    assert got == values and committed == len(values)


def test_kcat_produces_and_consumes_in_a_group(sasl_broker: SaslBroker) -> None:
    topic = f"plain-kcat-{uuid.uuid4().hex[:6]}"
    security = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
                "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"]  # fmt: skip
    lines = [f"line{i}" for i in range(10)]
    subprocess.run(["kcat", "-b", sasl_broker.bootstrap, *security, "-P", "-t", topic],
                   input="\n".join(lines) + "\n", text=True, check=True,
                   timeout=CLIENT_TIMEOUT_S)  # fmt: skip
    consumed = subprocess.run(
        ["kcat", "-b", sasl_broker.bootstrap, *security, "-G", "kcat-group",
         "-X", "auto.offset.reset=earliest", "-c", str(len(lines)), topic],
        capture_output=True, text=True, check=True, timeout=CLIENT_TIMEOUT_S,
    )  # fmt: skip
    assert consumed.stdout.split() == lines
    from confluent_kafka import Consumer, TopicPartition

    group = Consumer(dict(confluent_config(sasl_broker), **{"group.id": "kcat-group"}))
    try:
        committed = group.committed([TopicPartition(topic, 0)], timeout=CLIENT_TIMEOUT_S)
        assert committed[0].offset == len(lines)  # kcat's group committed what it read
    finally:
        group.close()


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
def test_wrong_credentials_are_refused_quickly_with_kafkas_message(
    sasl_broker: SaslBroker, user: str, password: str
) -> None:
    from confluent_kafka import KafkaError, Producer

    errors: list[KafkaError] = []
    producer = Producer(confluent_config(sasl_broker, user, password,
                                         error_cb=errors.append))  # fmt: skip
    producer.produce("never", b"x")
    wait_until(lambda: (producer.poll(0.1), errors)[1], "the authentication error", 10.0)
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "Authentication failed: Invalid username or password" in errors[0].str()
    assert "alice-secret" not in sasl_broker.log() and "wrong" not in sasl_broker.log()
    producer.purge()


def test_a_request_before_authentication_closes_the_connection(sasl_broker: SaslBroker) -> None:
    with socket.create_connection(("127.0.0.1", sasl_broker.kafka_port), timeout=10) as sock:
        client = b"raw"
        body = struct.pack(">hhih", 3, 0, 7, len(client)) + client + struct.pack(">i", 0)
        sock.sendall(struct.pack(">i", len(body)) + body)  # Metadata v0, all topics
        assert sock.recv(4096) == b""  # closed, unanswered, as Kafka


# --- KIP-368 -------------------------------------------------------------------------------------


def test_a_producer_keeps_working_across_session_lifetimes(sasl_broker: SaslBroker) -> None:
    from confluent_kafka import Producer

    before = sasl_broker.log().count("re-authenticated")
    producer = Producer(dict(confluent_config(sasl_broker), acks="all", **{"linger.ms": 0}))
    topic = f"reauth-{uuid.uuid4().hex[:6]}"
    errors: list[Any] = []
    delivered = 0
    started = time.monotonic()
    while time.monotonic() - started < 3.5 * REAUTH_MS / 1000:  # across more than 3 lifetimes
        producer.produce(topic, b"tick", on_delivery=lambda err, msg: _keep(errors, err))
        delivered += 1
        assert producer.flush(CLIENT_TIMEOUT_S) == 0, "a send got stuck"
        time.sleep(0.2)  # the producer's pace, not a synchronisation
    assert errors == [], errors
    consumed = confluent_consume(sasl_broker, topic, "reauth-group", delivered)
    assert len(consumed) == delivered
    wait_until(lambda: sasl_broker.log().count("re-authenticated") - before >= 2,
               "re-authentications in the broker's log", 10.0)  # fmt: skip
    assert "expired" not in sasl_broker.log()  # nobody was cut off for not re-authenticating


def test_kafka_python_keeps_working_across_session_lifetimes(sasl_broker: SaslBroker) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN", sasl_plain_username="alice", sasl_plain_password="alice-secret",
        acks="all",
    )  # fmt: skip
    topic = f"reauth-kp-{uuid.uuid4().hex[:6]}"
    sent = 0
    try:
        started = time.monotonic()
        while time.monotonic() - started < 3.5 * REAUTH_MS / 1000:  # across 3 lifetimes
            producer.send(topic, b"tick").get(CLIENT_TIMEOUT_S)  # raises if a send fails
            sent += 1
            time.sleep(0.2)  # the producer's pace, not a synchronisation
    finally:
        producer.close()
    assert len(confluent_consume(sasl_broker, topic, "reauth-kp-group", sent)) == sent
    assert "expired" not in sasl_broker.log()
