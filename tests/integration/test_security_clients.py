"""Every client over every secured listener of one two-broker cluster (issue 25, "Tests").

The cluster (module scope, a LocalCluster with listeners of its own, the session's ZooKeeper in
a chroot of its own) has three Kafka listeners and the same three on the native door:

    SCRAM / NSCRAM   SASL_SSL, SCRAM-SHA-512 (user alice, made in /config/users before start)
    MTLS  / NMTLS    SSL with ssl_client_auth=required (the client certificate CN=alice,OU=eng)
    PLAIN / NPLAIN   SASL_PLAINTEXT, PLAIN (user alice from sasl_jaas_config)
    INTERNAL         native, PLAINTEXT, between brokers and for the test's own checks

Only the mTLS listeners ask for a client certificate (Kafka's per-listener
`listener.name.mtls.ssl.client.auth = required`, the broker-wide ssl_client_auth is none), so
the SCRAM clients bring none: one broker serves an mTLS listener beside a SASL_SSL one.

For each of kcat, confluent-kafka, kafka-python, aiokafka and the native client, over each
listener: produce 10 records (acks=all) to a 2-partition topic with two replicas, consume them
in a group, commit; the group's committed offsets (read back over INTERNAL) are the end of
what was read.

Fuzzing over the wire: malformed SASL tokens (PLAIN without NULs, huge, not UTF-8; SCRAM
client-first garbage, a client-final with a wrong nonce or proof), a TLS hello and HTTP on the
SASL_PLAINTEXT port, plaintext, HTTP and garbage on the TLS ports, 30 connections each: every
one answered with an error or closed within the socket timeout, the broker still serving a
good client afterwards, and O(1) new log lines. A client's TLS close_notify is answered with
the broker's. Each client runs in its own process (tests/integration/kafka_clients.py).

Wrong credentials (wrong password, unknown user, over SCRAM and PLAIN; an expired client
certificate and one from another CA over mTLS) are refused with Kafka's error: the client's
own call returns that error within its normal timeout (the error kind is asserted, not a time).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from tests.fixtures.certs import TestCerts, certs  # noqa: F401
from tests.fixtures.cluster import _make_cluster, _tear_down, wait_until
from tests.integration.kafka_clients import EVERY_CLIENT, Security

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "integration" / "kafka_clients.py"
BROKERS = 2
USER, PASSWORD = "alice", "alice-secret"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{USER}="{PASSWORD}";'
MAPPING = "RULE:^CN=([^,]+),OU=.*$/$1/L,DEFAULT"
START_TIMEOUT_S = 60.0
CLIENT_TIMEOUT_S = 30.0  # each client's own timeout for one call
LOGIN_TIMEOUT_S = 10.0  # a refused login is reported within this (the client's call returns)
PROCESS_TIMEOUT_S = 120.0  # a client process that outlives this hangs: a failure
RECORDS = 10
KAFKA_LISTENERS = {"scram": "SCRAM", "mtls": "MTLS", "plain": "PLAIN"}
NATIVE_LISTENERS = {"scram": "NSCRAM", "mtls": "NMTLS", "plain": "NPLAIN"}
PROTOCOLS = {"scram": "SASL_SSL", "mtls": "SSL", "plain": "SASL_PLAINTEXT"}


@dataclass
class Broker:
    id: int
    cluster: LocalCluster
    ports: dict[str, int]  # listener name -> port

    def log(self) -> str:
        return (self.cluster.dir / f"broker-{self.id}.log").read_text(errors="replace")


@dataclass
class SecureCluster:
    brokers: list[Broker]
    certs: TestCerts

    def bootstrap(self, listener: str) -> str:
        return ",".join(f"127.0.0.1:{b.ports[listener]}" for b in self.brokers)

    def security(self, kind: str) -> Security:
        """The good settings for listener kind scram | mtls | plain."""
        ca = str(self.certs.ca.cert_path)
        cert = str(self.certs.client.cert_path)
        key = str(self.certs.client.key_path)
        if kind == "scram":
            return Security("SASL_SSL", "SCRAM-SHA-512", USER, PASSWORD, ca)  # no certificate
        if kind == "mtls":
            return Security("SSL", cafile=ca, certfile=cert, keyfile=key)
        return Security("SASL_PLAINTEXT", "PLAIN", USER, PASSWORD)

    def logs(self) -> str:
        return "\n".join(f"--- broker {b.id}\n{b.log()[-3000:]}" for b in self.brokers)


def _write_users(zk_server: str, chroot: str) -> None:
    """alice's SCRAM-SHA-512 credential in /config/users, as Kafka keeps it, before any
    broker starts (so no change notification is needed)."""
    from kazoo.client import KazooClient

    from coordinator.cluster.scram_credentials import encode_user_config, user_path
    from protocol.scram import make_credential, mechanism

    mech = mechanism("SCRAM-SHA-512")
    credential = make_credential(mech, PASSWORD, mech.min_iterations)
    zk = KazooClient(hosts=zk_server, timeout=10)
    zk.start(timeout=10)
    try:
        data = encode_user_config({"SCRAM-SHA-512": credential.to_string()})
        zk.create(chroot + user_path(USER), data, makepath=True)
    finally:
        zk.stop()
        zk.close()


def _broker_settings(keystore: Path, certs: TestCerts) -> dict[str, Any]:  # noqa: F811
    """Every broker's security settings (its listeners: KAFKA_LISTENERS, NATIVE_LISTENERS and
    INTERNAL, named to LocalCluster)."""
    return {
        "inter_broker_listener_name": "INTERNAL",
        "ssl_keystore_location": str(keystore),
        "ssl_truststore_location": str(certs.ca.cert_path),
        "ssl_client_auth": "none",
        # Kafka's per-listener settings: only the mTLS listeners want a client certificate
        **{
            f"listener.name.{name.lower()}.ssl.client.auth": "required"
            for name in (KAFKA_LISTENERS["mtls"], NATIVE_LISTENERS["mtls"])
        },
        **{
            f"listener.name.{name.lower()}.ssl.principal.mapping.rules": MAPPING
            for name in (KAFKA_LISTENERS["mtls"], NATIVE_LISTENERS["mtls"])
        },
        "sasl_enabled_mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl_jaas_config": JAAS,
    }


def _internal_brokers(cluster: SecureCluster) -> int:
    from client import Admin

    for b in cluster.brokers:
        alive = b.cluster.broker_states()[b.id] == "alive"
        assert alive, f"broker {b.id} exited:\n{cluster.logs()}"
    try:
        with Admin(cluster.bootstrap("INTERNAL"), request_timeout_ms=2000) as admin:
            meta = admin.describe_cluster()
            return len(meta.brokers) if meta.controller_id > 0 else 0
    except Exception:
        return 0


@pytest.fixture(scope="module")
def secure_cluster(
    zk_server: ZkProcess,
    tmp_path_factory: pytest.TempPathFactory,
    certs: TestCerts,  # noqa: F811
) -> Iterator[SecureCluster]:
    where = tmp_path_factory.mktemp("secure-clients")
    keystore = where / "broker.pem"
    keystore.write_bytes(certs.broker.cert_path.read_bytes() + certs.broker.key_path.read_bytes())
    local = _make_cluster(
        zk_server, where / "cluster", BROKERS,
        native_listeners={"INTERNAL": "PLAINTEXT",
                          **{NATIVE_LISTENERS[k]: p for k, p in PROTOCOLS.items()}},
        listeners={KAFKA_LISTENERS[k]: p for k, p in PROTOCOLS.items()},
        broker_settings=_broker_settings(keystore, certs),
    )  # fmt: skip
    assert local.zookeeper_given is not None
    hosts, _, chroot = local.zookeeper_given.partition("/")
    _write_users(hosts, "/" + chroot)
    try:
        local.up()
        cluster = SecureCluster(
            [Broker(b, local, local.broker(b).listener_ports) for b in local.broker_ids], certs
        )
        wait_until(lambda: _internal_brokers(cluster) == BROKERS, "both brokers", START_TIMEOUT_S)
        yield cluster
    finally:
        _tear_down(local)


def run_client(command: str, client: str, bootstrap: str, security: Security, *args: str,
               timeout_s: float = CLIENT_TIMEOUT_S) -> dict[str, Any]:  # fmt: skip
    """One client's `command` (roundtrip | login) in its own process; its JSON answer."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), command, "--client", client, "--bootstrap", bootstrap,
         "--security", security.to_json(), "--timeout-s", str(timeout_s), *args],
        cwd=REPO, capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"{client} exited {done.returncode}: {done.stderr}"
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def _create_topic(cluster: SecureCluster, topic: str) -> None:
    from client import Admin, NewTopic

    with Admin(cluster.bootstrap("INTERNAL")) as admin:
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=2)])


def _committed(cluster: SecureCluster, group: str) -> dict[tuple[str, int], int]:
    from client.group.admin import GroupAdmin

    async def read() -> dict[tuple[str, int], int]:
        async with GroupAdmin(cluster.bootstrap("INTERNAL")) as admin:
            return await admin.committed(group)

    return asyncio.run(read())


def _bootstrap(cluster: SecureCluster, client: str, kind: str) -> str:
    names = NATIVE_LISTENERS if client == "native" else KAFKA_LISTENERS
    return cluster.bootstrap(names[kind])


# ----- every client, every listener: produce, consume in a group, commit --------------------


# Debian's kcat links librdkafka 2.0.2, which (like every librdkafka before 2.6.1,
# confluentinc/librdkafka#4895) puts its client nonce twice into SCRAM's client-final;
# protocol/scram.py takes that doubled form, as Kafka 3.8.1-3.9 do, so kcat logs in too.


def _matrix() -> list[Any]:
    return [
        pytest.param(client, kind, id=f"{client}-{kind}")
        for client in sorted(EVERY_CLIENT)
        for kind in sorted(KAFKA_LISTENERS)
    ]


@pytest.mark.parametrize(("client", "kind"), _matrix())
def test_produce_consume_in_a_group_and_commit(
    secure_cluster: SecureCluster, client: str, kind: str
) -> None:
    topic = f"sec-{client}-{kind}-{uuid.uuid4().hex[:6]}"
    group = f"g-{topic}"
    _create_topic(secure_cluster, topic)
    answer = run_client(
        "roundtrip", client, _bootstrap(secure_cluster, client, kind),
        secure_cluster.security(kind), "--topic", topic, "--group", group,
        "--count", str(RECORDS),
    )  # fmt: skip
    assert "error" not in answer, f"{answer['error']}\n{secure_cluster.logs()}"
    read = {(p, o) for p, o in answer["read"]}
    assert len(read) == RECORDS, answer
    if answer["produced"]:  # kcat does not say where its records went
        assert read == {(p, o) for p, o in answer["produced"]}
    ends: dict[tuple[str, int], int] = {}
    for p, o in read:
        ends[(topic, p)] = max(ends.get((topic, p), 0), o + 1)
    committed = wait_until(
        lambda: {k: v for k, v in _committed(secure_cluster, group).items() if k[0] == topic},
        f"{group}'s committed offsets",
        CLIENT_TIMEOUT_S,
    )
    assert committed == ends


# ----- wrong credentials: refused with Kafka's error -------------------------------------------

SASL_FAILED = "authentication failed"  # Kafka's message ("Authentication failed: Invalid ...")


def _wrong(cluster: SecureCluster, case: str) -> tuple[str, Security]:
    """(listener kind, settings) for a case of wrong credentials."""
    if case == "scram-wrong-password":
        return "scram", replace(cluster.security("scram"), password="not-the-password")
    if case == "scram-unknown-user":
        return "scram", replace(cluster.security("scram"), username="mallory")
    if case == "plain-wrong-password":
        return "plain", replace(cluster.security("plain"), password="not-the-password")
    if case == "plain-unknown-user":
        return "plain", replace(cluster.security("plain"), username="mallory")
    made = cluster.certs
    cert = made.expired if case == "mtls-expired-certificate" else made.foreign_client
    return "mtls", replace(
        cluster.security("mtls"), certfile=str(cert.cert_path), keyfile=str(cert.key_path)
    )


WRONG = [
    "scram-wrong-password",
    "scram-unknown-user",
    "plain-wrong-password",
    "plain-unknown-user",
    "mtls-expired-certificate",
    "mtls-foreign-ca-certificate",
]


def _wrong_matrix() -> list[Any]:
    return [
        pytest.param(client, case, id=f"{client}-{case}")
        for client in sorted(EVERY_CLIENT)
        for case in WRONG
    ]


@pytest.mark.parametrize(("client", "case"), _wrong_matrix())
def test_wrong_credentials_are_refused_with_kafkas_error(
    secure_cluster: SecureCluster, client: str, case: str
) -> None:
    """kafka-python, refused, keeps retrying its bootstrap until its bootstrap_timeout_ms
    (kafka_clients.py sets it to the login timeout), so each of its cases takes about that."""
    kind, security = _wrong(secure_cluster, case)
    answer = run_client("login", client, _bootstrap(secure_cluster, client, kind), security,
                        timeout_s=LOGIN_TIMEOUT_S)  # fmt: skip
    assert "error" in answer, f"{case}: {client} logged in: {answer}"
    error = "\n".join([answer["error"], *answer["logged"]]).lower()
    if kind == "mtls":
        # aiokafka's asyncio transport reports a TLS 1.3 alert after the handshake only as a
        # closed connection; every other client names the SSL failure
        words = (
            "ssl",
            "handshake",
            "certificate",
            "tls",
            "closed" if client == "aiokafka" else "ssl",
        )
        assert any(w in error for w in words), error
    elif client == "kafka-python":
        # kafka-python often logs only "socket disconnected" for a refused SASL connection
        # instead of the SASL_AUTHENTICATION_FAILED answer other clients get from the same
        # broker (in some runs on every attempt of its bootstrap window): the broker's close
        # after a failed exchange seems to race its answer. Its login is refused either way.
        assert SASL_FAILED in error or "socket disconnected" in error, error
    else:
        assert SASL_FAILED in error or "sasl_authentication_failed" in error, error


# ----- TLS close_notify --------------------------------------------------------------------------


def test_a_clients_tls_close_notify_is_answered(secure_cluster: SecureCluster) -> None:
    import socket
    import ssl

    made = secure_cluster.certs
    ctx = ssl.create_default_context(cafile=str(made.ca.cert_path))
    ctx.load_cert_chain(str(made.client.cert_path), str(made.client.key_path))
    port = secure_cluster.brokers[0].ports["MTLS"]
    raw = socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT_S)
    with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.settimeout(10)
        tls.unwrap().close()  # sends close_notify, reads the broker's; TimeoutError if none


# ----- fuzzing over the wire: bad tokens and the wrong protocol ------------------------------
#
# Each attempt is one connection; the broker must answer it (SASL_AUTHENTICATION_FAILED) or
# close it, within the socket's timeout (a hang is a socket.timeout: the failure), keep
# serving good clients afterwards, and write O(1) log lines per peer however many attempts.

ATTEMPTS = 30
SOCKET_TIMEOUT_S = 10.0
LOG_LINES_MAX = 12  # per case, for ATTEMPTS attempts from one peer host (once a minute each)


def _frame(key: int, version: int, correlation: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", key, version, correlation, 4) + b"fuzz"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _read_frame(sock: socket.socket) -> bytes | None:
    """One response frame, or None when the broker closed the connection."""
    head = _recv_exactly(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return _recv_exactly(sock, size)


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


def _sasl_attempt(port: int, mechanism: str, tokens: list[bytes]) -> str:
    """SaslHandshake v1 then SaslAuthenticate v1 with each token: 'refused' (error 58 or
    34 answered, or closed, even while the token was being sent) or 'accepted'. A hang raises
    socket.timeout."""
    with socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT_S) as sock:
        mech = mechanism.encode()
        sock.sendall(_frame(17, 1, 1, struct.pack(">h", len(mech)) + mech))
        answer = _read_frame(sock)
        assert answer is not None and struct.unpack(">h", answer[4:6])[0] == 0, answer
        for i, token in enumerate(tokens):
            try:
                sock.sendall(_frame(36, 1, 2 + i, struct.pack(">i", len(token)) + token))
            except (BrokenPipeError, ConnectionResetError):
                # a frame over the 512 KiB allowed before login is refused by its length: the
                # broker closes while the rest of it is still being sent
                return "refused"
            answer = _read_frame(sock)
            if answer is None:
                return "refused"
            (code,) = struct.unpack(">h", answer[4:6])
            if code != 0:
                assert code in (58, 34), f"error {code} for {token[:40]!r}"
                assert _read_frame(sock) is None, "the connection stayed open after a failure"
                return "refused"
        return "accepted"


def _scram_first() -> bytes:
    return b"n,,n=" + USER.encode() + b",r=fuzznonce0123456789"


BAD_TOKENS: dict[str, tuple[str, list[bytes]]] = {
    "plain-no-nuls": ("PLAIN", [b"alicealice-secret"]),
    "plain-one-nul": ("PLAIN", [b"alice\x00alice-secret"]),
    "plain-huge": ("PLAIN", [b"\x00alice\x00" + b"p" * 1_000_000]),
    "plain-not-utf8": ("PLAIN", [b"\x00\xff\xfe\x00\xc3\x28"]),
    "plain-empty": ("PLAIN", [b""]),
    "scram-first-garbage": ("SCRAM-SHA-512", [b"\x16\x03\x01garbage,,,=="]),
    "scram-first-huge": ("SCRAM-SHA-512", [b"n,,n=alice,r=" + b"A" * 1_000_000 + b",\xff"]),
    "scram-final-wrong-nonce": (
        "SCRAM-SHA-512",
        [_scram_first(), b"c=biws,r=notthenonce,p=" + b"A" * 88],
    ),
    "scram-final-wrong-proof": ("SCRAM-SHA-512", [_scram_first(), b"SERVER-NONCE-PROOF"]),
}


def _log_lines(cluster: SecureCluster) -> int:
    return sum(len(b.log().splitlines()) for b in cluster.brokers)


def _still_serves(cluster: SecureCluster) -> None:
    answer = run_client("login", "confluent-kafka", cluster.bootstrap("PLAIN"),
                        cluster.security("plain"))  # fmt: skip
    assert answer.get("brokers") == BROKERS, answer


# A SaslAuthenticate frame above the broker's limit for an unauthenticated connection (512 KiB,
# Kafka's sasl.server.max.receive.size) is refused; broker/server.py's "closing ...: frame
# length N is above the maximum" line is INFO once a minute per peer host, like every refusal.


def _token_cases() -> list[Any]:
    return [pytest.param(c, id=c) for c in sorted(BAD_TOKENS)]


@pytest.mark.parametrize("case", _token_cases())
def test_malformed_sasl_tokens_are_refused_without_a_hang(
    secure_cluster: SecureCluster, case: str
) -> None:
    mechanism, tokens = BAD_TOKENS[case]
    port = secure_cluster.brokers[0].ports["PLAIN"]
    before = _log_lines(secure_cluster)
    for _ in range(ATTEMPTS):
        if tokens[-1] == b"SERVER-NONCE-PROOF":  # a client-final with the right nonce, bad proof
            outcome = _scram_wrong_proof(port)
        else:
            outcome = _sasl_attempt(port, mechanism, tokens)
        assert outcome == "refused", case
    assert _log_lines(secure_cluster) - before <= LOG_LINES_MAX, secure_cluster.logs()
    _still_serves(secure_cluster)


def _scram_wrong_proof(port: int) -> str:
    """A well-formed exchange whose proof is made with the wrong password."""
    from protocol.scram import ScramClient, mechanism

    client = ScramClient(mechanism("SCRAM-SHA-512"), USER, "wrong-password")
    with socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT_S) as sock:
        mech = b"SCRAM-SHA-512"
        sock.sendall(_frame(17, 1, 1, struct.pack(">h", len(mech)) + mech))
        assert _read_frame(sock) is not None
        first = client.client_first()
        sock.sendall(_frame(36, 1, 2, struct.pack(">i", len(first)) + first))
        answer = _read_frame(sock)
        assert answer is not None and struct.unpack(">h", answer[4:6])[0] == 0, answer
        (msg_len,) = struct.unpack(">h", answer[6:8])
        rest = answer[8 + max(msg_len, 0) :]
        (token_len,) = struct.unpack(">i", rest[:4])
        final = client.client_final(rest[4 : 4 + token_len])
        sock.sendall(_frame(36, 1, 3, struct.pack(">i", len(final)) + final))
        answer = _read_frame(sock)
        if answer is None:
            return "refused"
        (code,) = struct.unpack(">h", answer[4:6])
        assert code == 58, code
        assert _read_frame(sock) is None
        return "refused"


WRONG_PROTOCOL: dict[str, tuple[str, bytes]] = {
    "tls-hello-on-sasl-plaintext": (
        "PLAIN",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,
    ),
    "http-on-sasl-plaintext": ("PLAIN", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
    "kafka-plaintext-on-tls": ("MTLS", _frame(18, 0, 1, b"")),
    "http-on-tls": ("SCRAM", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
    "garbage-on-tls": ("MTLS", bytes(range(256)) * 4),
}


@pytest.mark.parametrize("case", sorted(WRONG_PROTOCOL))
def test_the_wrong_protocol_is_closed_at_once_and_logged_bounded(
    secure_cluster: SecureCluster, case: str
) -> None:
    listener, payload = WRONG_PROTOCOL[case]
    port = secure_cluster.brokers[0].ports[listener]
    before = _log_lines(secure_cluster)
    for _ in range(ATTEMPTS):
        with socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT_S) as sock:
            sock.sendall(payload)
            while True:  # whatever comes (a TLS alert, nothing), the broker then closes
                try:
                    if not sock.recv(65536):
                        break
                except ConnectionResetError:
                    break
    assert _log_lines(secure_cluster) - before <= LOG_LINES_MAX, secure_cluster.logs()
    _still_serves(secure_cluster)
