"""A real broker process with TLS listeners (issue 25), certificates from tests/fixtures/certs.py.

The broker (a one-broker LocalCluster with listeners of its own) has one native listener,
SECURE (SSL), which is also its inter-broker listener (its controller talks to itself over TLS
with the broker's own certificate), and two Kafka listeners: SSL and PLAINTEXT;
ssl_client_auth is `requested`, so a client may come with or without a certificate. Proven
here: confluent-kafka over SSL and over mTLS produces and consumes; Metadata tells each client
the endpoints of the listener it came in on; the native client over TLS produces and consumes;
an expired client certificate and one from another CA are refused quickly with librdkafka's
SSL error; 50 TLS handshakes on the plaintext port are closed and logged once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from tests.fixtures.certs import TestCerts, certs  # noqa: F401
from tests.fixtures.cluster import ClusterFactory

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0
REFUSED_WITHIN_S = 10.0


@dataclass
class TlsBroker:
    cluster: LocalCluster  # one broker
    native_port: int
    ssl_port: int
    plain_port: int

    def log(self) -> str:
        return (self.cluster.dir / "broker-1.log").read_text(errors="replace")

    def running(self) -> bool:
        return self.cluster.broker_states()[1] == "alive"


@pytest.fixture
def tls_broker(
    tmp_path: Path,
    cluster_factory: ClusterFactory,
    certs: TestCerts,  # noqa: F811
) -> TlsBroker:
    keystore = tmp_path / "broker.pem"
    keystore.write_bytes(certs.broker.cert_path.read_bytes() + certs.broker.key_path.read_bytes())
    cluster = cluster_factory(
        1,
        native_listeners={"SECURE": "SSL"},
        listeners={"SSL": "SSL", "PLAINTEXT": "PLAINTEXT"},
        broker_settings={
            "inter_broker_listener_name": "SECURE",
            "ssl_keystore_location": str(keystore),
            "ssl_truststore_location": str(certs.ca.cert_path),
            "ssl_client_auth": "requested",
        },
        probe_options={"security_protocol": "SSL", "ssl_cafile": str(certs.ca.cert_path)},
    )
    ports = cluster.broker(1).listener_ports
    return TlsBroker(cluster, ports["SECURE"], ports["SSL"], ports["PLAINTEXT"])


def ssl_conf(certs: TestCerts, port: int, cert: Any = None) -> dict[str, Any]:  # noqa: F811
    conf: dict[str, Any] = {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.ca.cert_path),
    }
    if cert is not None:
        conf["ssl.certificate.location"] = str(cert.cert_path)
        conf["ssl.key.location"] = str(cert.key_path)
    return conf


def wait_for_controller(broker: TlsBroker, certs: TestCerts) -> None:  # noqa: F811
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(ssl_conf(certs, broker.ssl_port))
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        assert broker.running(), broker.log()
        with contextlib.suppress(Exception):
            meta = admin.list_topics(timeout=2)
            if meta.controller_id == 1:
                return
        assert time.monotonic() < deadline, f"broker not ready:\n{broker.log()}"
        time.sleep(0.1)


def produce_and_consume(conf: dict[str, Any], topic: str, n: int = 10) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    producer = Producer({**conf, "acks": "all"})
    for i in range(n):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(got) < n and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def test_confluent_kafka_over_ssl_and_mtls(tls_broker: TlsBroker, certs: TestCerts) -> None:  # noqa: F811
    from confluent_kafka.admin import AdminClient

    wait_for_controller(tls_broker, certs)
    expected = [f"m{i}".encode() for i in range(10)]
    assert produce_and_consume(ssl_conf(certs, tls_broker.ssl_port), "over-ssl") == expected
    mtls = ssl_conf(certs, tls_broker.ssl_port, certs.client)
    assert produce_and_consume(mtls, "over-mtls") == expected
    # each listener advertises itself: a client is told the listener it came in on
    ssl_meta = AdminClient(ssl_conf(certs, tls_broker.ssl_port)).list_topics(timeout=10)
    plain_meta = AdminClient({"bootstrap.servers": f"127.0.0.1:{tls_broker.plain_port}"}
                             ).list_topics(timeout=10)  # fmt: skip
    assert [b.port for b in ssl_meta.brokers.values()] == [tls_broker.ssl_port]
    assert [b.port for b in plain_meta.brokers.values()] == [tls_broker.plain_port]


def test_expired_and_foreign_certificates_are_refused_quickly(
    tls_broker: TlsBroker,
    certs: TestCerts,  # noqa: F811
) -> None:
    from confluent_kafka import KafkaError, Producer

    wait_for_controller(tls_broker, certs)
    for bad in (certs.expired, certs.foreign_client):
        errors: list[KafkaError] = []
        conf = {**ssl_conf(certs, tls_broker.ssl_port, bad), "error_cb": errors.append}
        producer = Producer(conf)
        deadline = time.monotonic() + REFUSED_WITHIN_S
        while not errors and time.monotonic() < deadline:
            producer.poll(0.2)
        assert errors, f"{bad.cert_path.name}: no error within {REFUSED_WITHIN_S} s"
        codes = {e.code() for e in errors}
        assert codes & {KafkaError._SSL, KafkaError._AUTHENTICATION, KafkaError._TRANSPORT,
                        KafkaError._ALL_BROKERS_DOWN}, errors  # fmt: skip
        assert any("SSL" in e.str() or "certificate" in e.str() for e in errors), errors
        producer.flush(0)


async def test_native_client_over_tls(tls_broker: TlsBroker, certs: TestCerts) -> None:  # noqa: F811
    from client import AsyncAdmin, AsyncConsumer, AsyncProducer, NewTopic, TopicPartition

    await asyncio.get_running_loop().run_in_executor(None, wait_for_controller, tls_broker, certs)
    bootstrap = f"127.0.0.1:{tls_broker.native_port}"
    security = {"security_protocol": "SSL", "ssl_cafile": str(certs.ca.cert_path)}
    admin = AsyncAdmin(bootstrap, **security)
    try:
        await admin.create_topics([NewTopic("native-tls", num_partitions=1, replication_factor=1)])
    finally:
        await admin.close()
    producer = AsyncProducer(bootstrap, **security)
    await producer.start()
    try:
        for i in range(5):
            await (await producer.send("native-tls", f"n{i}".encode(), partition=0))
    finally:
        await producer.close()
    mtls = {**security, "ssl_certfile": str(certs.client.cert_path),
            "ssl_keyfile": str(certs.client.key_path)}  # fmt: skip
    consumer = AsyncConsumer(bootstrap, auto_offset_reset="earliest", **mtls)
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition("native-tls", 0)])
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < 5 and time.monotonic() < deadline:
            for records in (await consumer.poll(timeout_ms=500)).values():
                got.extend(r.value or b"" for r in records)
    finally:
        await consumer.close()
    assert got == [f"n{i}".encode() for i in range(5)]


def test_tls_handshakes_on_the_plaintext_port_are_logged_once(
    tls_broker: TlsBroker,
    certs: TestCerts,  # noqa: F811
) -> None:
    wait_for_controller(tls_broker, certs)
    hello = bytes.fromhex("16030100f8010000f40303") + b"\x00" * 40

    async def attempts() -> None:
        for _ in range(50):
            reader, writer = await asyncio.open_connection("127.0.0.1", tls_broker.plain_port)
            writer.write(hello)
            await asyncio.wait_for(reader.read(), TIMEOUT_S)  # the broker closes at once
            writer.close()

    asyncio.run(attempts())
    deadline = time.monotonic() + TIMEOUT_S
    line = "a TLS handshake on PLAINTEXT listener PLAINTEXT"
    while line not in tls_broker.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    log = tls_broker.log()
    assert log.count(line) == 1, log
    assert "is the client set for SSL?" in log
    assert "frame length" not in log
