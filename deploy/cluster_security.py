"""`odradek cluster up --secure`: the CA, the certificates, the users and the settings it writes.

A secure local cluster runs every listener as SASL_SSL with SCRAM-SHA-512, clients' and the
brokers' own alike, with the authorizer on. Under the cluster directory:

    tls/ca.crt, tls/ca.key        the cluster's own CA (the key 0600; nothing else signs)
    tls/broker-<id>.pem           a broker's key and certificate (for localhost, 127.0.0.1 and
                                  its host), 0600: its `ssl_keystore_location` (PEM)
    broker-<id>.toml              a broker's settings (listeners, ssl, sasl, super_users,
                                  authorizer): 0600, as it holds the broker user's password in
                                  its inter-broker JAAS value, as Kafka's server.properties does
    client.properties             Kafka tools' client properties for the admin user (0600)

Every broker's schema registry speaks HTTPS with the broker's certificate and takes HTTP Basic
with the same SCRAM users (`schema_registry_ssl`, `schema_registry_authentication =
"http_basic"`; docs/schema-registry.md); the Python snippet has the registry client's config.

Users (SCRAM-SHA-512 credentials in ZooKeeper, /config/users/<user>, made before a broker
starts): `broker` (the brokers' own connections) and `admin`, both super users, each with a
password made here from the system's random source. Passwords are written only to the two
0600 files above, never printed to a log; the admin's is printed once, inside the
client.properties text `cluster up` shows on stdout, as the user asked for it.

`SecureLayout` is pure: the settings, the properties text and the Python snippets are functions
of the paths, ports and passwords, and tests call them directly. `prepare(dir, ...)` does the
file work; `prepare_cluster` (that plus the users, with progress lines) and
`write_client_properties` are what `LocalCluster.up` calls.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MECHANISM = "SCRAM-SHA-512"
SECURITY_PROTOCOL = "SASL_SSL"
LISTENER = "SASL_SSL"  # one listener name per door, mapped to itself by Kafka's default map
BROKER_USER = "broker"
ADMIN_USER = "admin"
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
CLIENT_PROPERTIES = "client.properties"
TLS_DIR = "tls"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def jaas(user: str, password: str) -> str:
    """A ScramLoginModule JAAS value; the password's quotes and backslashes escaped."""
    quoted = password.replace("\\", "\\\\").replace('"', '\\"')
    return f'{SCRAM_MODULE} required username="{user}" password="{quoted}";'


def property_value(text: str) -> str:
    """`text` as a Java properties value: backslashes doubled, line breaks escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def new_password() -> str:
    return secrets.token_urlsafe(18)  # 144 random bits; URL-safe: no quoting in any file


@dataclass(frozen=True, slots=True)
class SecureLayout:
    """The secure parts of one cluster's files: where the CA is, the users' passwords."""

    dir: Path
    broker_password: str
    admin_password: str

    def __repr__(self) -> str:  # never the passwords
        return f"SecureLayout({self.dir})"

    @property
    def ca_path(self) -> Path:
        return self.dir / TLS_DIR / "ca.crt"

    def keystore_path(self, broker_id: int) -> Path:
        return self.dir / TLS_DIR / f"broker-{broker_id}.pem"

    @property
    def properties_path(self) -> Path:
        return self.dir / CLIENT_PROPERTIES

    def broker_settings(self, broker_id: int) -> dict[str, str | bool]:
        """One broker's security settings, broker/config.py's names. The listeners' addresses
        are the cluster's (`--port`, `--listeners` on the command line, with the SASL_SSL name);
        the native door's listener carries the inter-broker traffic."""
        return {
            "listener_security_protocol_map": "SASL_SSL:SASL_SSL",
            "inter_broker_listener_name": LISTENER,
            "ssl_keystore_type": "PEM",
            "ssl_keystore_location": str(self.keystore_path(broker_id)),
            "ssl_truststore_type": "PEM",
            "ssl_truststore_location": str(self.ca_path),
            "ssl_client_auth": "none",
            "sasl_enabled_mechanisms": MECHANISM,
            "sasl_mechanism_inter_broker_protocol": MECHANISM,
            "sasl_jaas_config": jaas(BROKER_USER, self.broker_password),
            "authorizer_class_name": AUTHORIZER,
            "super_users": f"User:{BROKER_USER};User:{ADMIN_USER}",
            "allow_everyone_if_no_acl_found": False,
            "schema_registry_ssl": True,
            "schema_registry_authentication": "http_basic",
        }

    def client_properties(self, kafka_bootstrap: str) -> str:
        """Kafka tools' client properties for the admin (`--command-config`,
        kafka-*.sh), with bootstrap.servers in a comment: tools take that from a flag."""
        return (
            "# Written by `odradek cluster up --secure`: the admin user of this cluster.\n"
            f"# bootstrap.servers={kafka_bootstrap}\n"
            f"security.protocol={SECURITY_PROTOCOL}\n"
            f"sasl.mechanism={MECHANISM}\n"
            f"sasl.jaas.config={property_value(jaas(ADMIN_USER, self.admin_password))}\n"
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={property_value(str(self.ca_path))}\n"
        )

    def confluent_config(self, kafka_bootstrap: str) -> dict[str, str]:
        """The same for confluent-kafka (librdkafka's names)."""
        return {
            "bootstrap.servers": kafka_bootstrap,
            "security.protocol": SECURITY_PROTOCOL,
            "sasl.mechanism": MECHANISM,
            "sasl.username": ADMIN_USER,
            "sasl.password": self.admin_password,
            "ssl.ca.location": str(self.ca_path),
        }

    def registry_config(self, registry_urls: str) -> dict[str, str]:
        """confluent-kafka's SchemaRegistryClient config for the admin (HTTPS, HTTP Basic)."""
        return {
            "url": registry_urls,
            "basic.auth.user.info": f"{ADMIN_USER}:{self.admin_password}",
            "ssl.ca.location": str(self.ca_path),
        }

    def python_snippet(self, kafka_bootstrap: str, bootstrap: str, registry_urls: str = "") -> str:
        """What to paste into Python: confluent-kafka's config (and its schema registry
        client's, when the brokers serve one) and the native client's."""
        conf = self.confluent_config(kafka_bootstrap)
        lines = ["# confluent-kafka", "conf = {"]
        lines += [f"    {k!r}: {v!r}," for k, v in conf.items()]
        lines += ["}"]
        if registry_urls:
            lines += ["# confluent_kafka.schema_registry.SchemaRegistryClient(registry_conf)",
                      "registry_conf = {"]  # fmt: skip
            lines += [f"    {k!r}: {v!r}," for k, v in self.registry_config(registry_urls).items()]
            lines += ["}"]
        lines += [
            "# odradek's native client (client.Producer / Consumer / Admin)",
            "native = dict(",
            f"    bootstrap_servers={bootstrap!r},",
            f"    security_protocol={SECURITY_PROTOCOL!r},",
            f"    sasl_mechanism={MECHANISM!r},",
            f"    sasl_plain_username={ADMIN_USER!r},",
            f"    sasl_plain_password={self.admin_password!r},",
            f"    ssl_cafile={str(self.ca_path)!r},",
            ")",
        ]
        return "\n".join(lines) + "\n"


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (created 0600, not chmod-ed after the fact)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def prepare(dir: Path, broker_ids: list[int], hosts: dict[int, str]) -> SecureLayout:
    """Make the CA and one certificate per broker (valid for localhost, 127.0.0.1 and its
    host), and the two passwords. Users and files that name ports come later (`up`)."""
    from deploy.certs import issue, make_ca

    layout = SecureLayout(dir, new_password(), new_password())
    tls_dir = dir / TLS_DIR
    ca = make_ca(tls_dir, "ca", common_name=f"odradek local CA {dir.name}")
    for broker_id in broker_ids:
        names = tuple(dict.fromkeys(("localhost", "127.0.0.1", hosts[broker_id])))
        cert = issue(ca, tls_dir, f"broker-{broker_id}-cert", common_name=BROKER_USER,
                     hosts=names)  # fmt: skip
        pem = cert.key_path.read_text() + cert.cert_path.read_text() + ca.cert_path.read_text()
        write_private(layout.keystore_path(broker_id), pem)
        cert.key_path.unlink()
        cert.cert_path.unlink()
    return layout


def write_users(
    zk_connect: str, users: list[tuple[str, str, str]], session_timeout_ms: int
) -> None:
    """(user, mechanism, password) credentials written straight to ZooKeeper, as KIP-554's
    AlterUserScramCredentials writes them (coordinator/cluster/scram_credentials.py: salted,
    iterated keys, never the password; the node's other keys kept). For users the brokers need
    before any broker can be asked: its inter-broker user, the first admin. ZkError when
    ZooKeeper does not answer."""
    import asyncio

    from coordinator.cluster.scram_credentials import alter_credentials
    from coordinator.cluster.zk import ZkClient
    from protocol.scram import make_credential

    async def write() -> None:
        zk = ZkClient(zk_connect, session_timeout_ms)
        await zk.start(session_timeout_ms / 1000)  # makes the chroot, as the brokers do
        try:
            for user, mechanism, password in users:
                await alter_credentials(zk, user, {mechanism: make_credential(mechanism, password)})
        finally:
            await zk.stop()

    asyncio.run(write())


def create_users(zk_connect: str, layout: SecureLayout, session_timeout_ms: int) -> None:
    """The broker and admin SCRAM users, written before any broker runs (so no change
    notification is needed: every broker reads /config/users when it starts)."""
    users = [(BROKER_USER, MECHANISM, layout.broker_password),
             (ADMIN_USER, MECHANISM, layout.admin_password)]  # fmt: skip
    write_users(zk_connect, users, session_timeout_ms)


def prepare_cluster(
    dir: Path,
    hosts: dict[int, str],
    zk_connect: str,
    session_timeout_ms: int,
    progress: Callable[[str], None],
) -> SecureLayout:
    """`cluster up --secure`: the CA, the brokers' certificates (`hosts`: each broker's
    address by id), the passwords, and the SCRAM users in ZooKeeper."""
    progress("secure: making the CA and the brokers' certificates")
    layout = prepare(dir, list(hosts), hosts)
    create_users(zk_connect, layout, session_timeout_ms)
    progress(f"secure: SCRAM users {BROKER_USER!r} and {ADMIN_USER!r} made in ZooKeeper")
    return layout


def write_client_properties(layout: SecureLayout | None, kafka_bootstrap: str) -> None:
    """The admin's client.properties (0600), in the process that ran a secure up (else none)."""
    if layout is None:
        return
    write_private(layout.properties_path, layout.client_properties(kafka_bootstrap))


def main(argv: list[str] | None = None) -> int:
    """`python -m deploy.cluster_security --zookeeper HOST:PORT[/chroot] --user U
    --password-file F [--mechanism M]`: a SCRAM user written to ZooKeeper before the brokers
    start (docs/security.md: the inter-broker user and the first admin of a new cluster)."""
    import sys

    from coordinator.cluster.zk import ZkError
    from deploy.cli_parser import Parser
    from protocol.errors import UsageError
    from protocol.scram import MECHANISMS

    parser = Parser(prog="python -m deploy.cluster_security", description=main.__doc__)
    parser.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/chroot]")
    parser.add_argument("--user", required=True)
    parser.add_argument("--password-file", required=True, type=Path, metavar="FILE",
                        help="its first line is the password")  # fmt: skip
    parser.add_argument("--mechanism", default=MECHANISM, choices=sorted(MECHANISMS))
    args = parser.parse_args(argv)
    try:
        lines = args.password_file.read_text().splitlines()
        if not lines or not lines[0]:
            raise UsageError(f"{args.password_file}: its first line is empty")
        write_users(args.zookeeper, [(args.user, args.mechanism, lines[0])], 10_000)
    except (UsageError, OSError, ZkError) as exc:
        print(f"error: {getattr(exc, 'message', None) or exc}", file=sys.stderr)
        return 1
    print(f"{args.mechanism} credential of {args.user} written to {args.zookeeper}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
