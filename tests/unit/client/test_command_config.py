"""--command-config: Java properties syntax, the JAAS value, and the client settings they make."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path
from typing import Any

import pytest

from client.command_config import (
    CommandConfig,
    command_config,
    load_command_config,
    parse_properties,
)
from protocol.errors import UsageError
from protocol.jaas import parse_jaas, single_entry

SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="alice-secret";'
)


# ----- properties --------------------------------------------------------------------------


def test_properties_separators_comments_and_blanks() -> None:
    text = "# a comment\n! another\n\na=1\nb: 2\nc 3\n  d  =  4  \ne=\nf\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4  ", "e": "", "f": ""}


def test_properties_continuations_and_escapes() -> None:
    text = (
        "jaas=one \\\n"
        "     two \\\n"
        "  three\n"
        "path=C:\\\\dir\\\\file\n"
        "tab=a\\tb\n"
        "uni=\\u00e9t\\u00E9\n"
        "key\\=with\\:sep=v\n"
        "even=ends in a backslash\\\\\n"
        "next=x\n"
    )
    assert parse_properties(text) == {
        "jaas": "one two three",
        "path": "C:\\dir\\file",
        "tab": "a\tb",
        "uni": "été",
        "key=with:sep": "v",
        "even": "ends in a backslash\\",
        "next": "x",
    }


def test_properties_a_comment_marker_inside_a_continuation_is_text() -> None:
    assert parse_properties("a=1 \\\n# not a comment\n") == {"a": "1 # not a comment"}


def test_properties_faults() -> None:
    with pytest.raises(UsageError, match="given twice"):
        parse_properties("a=1\na=2\n")
    with pytest.raises(UsageError, match="uXXXX"):
        parse_properties("a=\\u12\n")
    with pytest.raises(UsageError, match="no property name"):
        parse_properties("=value\n")


# ----- JAAS --------------------------------------------------------------------------------


def test_jaas_scram_entry() -> None:
    entry = single_entry(SCRAM_JAAS)
    assert entry.login_module.endswith("ScramLoginModule")
    assert entry.flag == "required"
    assert entry.options == {"username": "alice", "password": "alice-secret"}


def test_jaas_plain_broker_list_escapes_comments_and_many_entries() -> None:
    text = (
        "/* broker */ org.apache.kafka.common.security.plain.PlainLoginModule REQUIRED\n"
        '  username="admin" password="a\\"b\\\\c" // the broker itself\n'
        "  user_admin=admin-secret\n"
        '  user_alice="alice secret";\n'
        "other.Module optional;"
    )
    first, second = parse_jaas(text)
    assert first.flag == "required"
    assert first.options == {
        "username": "admin",
        "password": 'a"b\\c',
        "user_admin": "admin-secret",
        "user_alice": "alice secret",
    }
    assert second.login_module == "other.Module" and second.options == {}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "any login modules"),
        ("a.B", "control flag"),
        ("a.B mandatory;", "control flag"),
        ('a.B required username="x"', "does not end with ';'"),
        ('a.B required username "x";', "no '=value'"),
        ("a.B required username=;", "no value"),
        ('a.B required password="open;', "not closed"),
        ('a.B required x="1" x="2";', "given twice"),
        ("a.B required /* open", "not closed"),
        ("a.B required ( ;", "unexpected"),
    ],
)
def test_jaas_faults(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_jaas(text)


def test_jaas_client_takes_one_module_and_never_echoes_a_password() -> None:
    with pytest.raises(UsageError, match="2 login modules"):
        single_entry("a.B required; c.D required;")
    with pytest.raises(UsageError) as caught:
        single_entry('a.B required password="hunter2"').option("username")
    assert "hunter2" not in str(caught.value)


# ----- the settings ------------------------------------------------------------------------


def test_plaintext_is_the_default_and_gives_no_options() -> None:
    config = command_config({})
    assert config == CommandConfig()
    assert config.client_options() == {}


def test_sasl_ssl_scram_with_a_pem_truststore(tmp_path: Path) -> None:
    ca = _write_ca(tmp_path)
    config = command_config(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": SCRAM_JAAS,
            "ssl.truststore.location": str(ca),
            "ssl.truststore.type": "PEM",
        }
    )
    assert (config.sasl_mechanism, config.sasl_username, config.sasl_password) == (
        "SCRAM-SHA-512", "alice", "alice-secret",
    )  # fmt: skip
    assert "alice-secret" not in repr(config)
    options = config.client_options()
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert options["sasl_plain_username"] == "alice"
    assert options["sasl_plain_password"] == "alice-secret"
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "test CA"),),)]


def test_ssl_with_pkcs12_stores_and_no_hostname_check(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

    key, cert = _key_and_cert("client")
    p12 = pkcs12.serialize_key_and_certificates(
        b"client", key, cert, None, BestAvailableEncryption(b"store-pass")
    )
    (tmp_path / "client.p12").write_bytes(p12)
    (tmp_path / "trust.p12").write_bytes(p12)
    config = command_config(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": str(tmp_path / "trust.p12"),
            "ssl.truststore.password": "store-pass",
            "ssl.keystore.location": str(tmp_path / "client.p12"),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.password": "store-pass",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert config.truststore_type == "PKCS12"  # from the .p12 name, as no type was given
    context = config.client_options()["ssl_context"]
    assert not context.check_hostname
    assert len(context.get_ca_certs()) == 1
    with pytest.raises(UsageError, match="wrong password"):
        command_config(
            {"security.protocol": "SSL", "ssl.keystore.location": str(tmp_path / "client.p12"),
             "ssl.keystore.type": "PKCS12", "ssl.keystore.password": "nope"}
        ).ssl_context()  # fmt: skip


def test_inline_pem_keystore_and_truststore() -> None:
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    key, cert = _key_and_cert("inline")
    cert_pem = cert.public_bytes(Encoding.PEM).decode()
    key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    config = command_config(
        {
            "security.protocol": "SSL",
            "ssl.truststore.certificates": cert_pem,
            "ssl.keystore.certificate.chain": cert_pem,
            "ssl.keystore.key": key_pem,
        }
    )
    assert len(config.ssl_context().get_ca_certs()) == 1


@pytest.mark.parametrize(
    ("props", "why"),
    [
        ({"bootstrap.servers": "x:1"}, "unsupported property bootstrap.servers"),
        ({"security.protocol": "TLS"}, "is not one of"),
        ({"sasl.mechanism": "PLAIN"}, "needs security.protocol SASL_SSL"),
        ({"ssl.truststore.location": "x"}, "needs security.protocol SSL"),
        ({"security.protocol": "SASL_PLAINTEXT"}, "GSSAPI is not supported"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs sasl.jaas"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
             "sasl.jaas.config": SCRAM_JAAS},
            "needs org.apache.kafka.common.security.plain.PlainLoginModule",
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
             "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
             'required username="a";'},
            "needs a password= option",
        ),
        ({"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, "keytool -importkeystore"),
        ({"security.protocol": "SSL", "ssl.keystore.type": "BCFKS"}, "not one of PEM, PKCS12"),
        ({"security.protocol": "SSL", "ssl.keystore.key": "k"}, "go together"),
        (
            {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"},
            "'https' or empty",
        ),
    ],
)  # fmt: skip
def test_settings_faults(props: dict[str, str], why: str) -> None:
    with pytest.raises(UsageError, match=why):
        command_config(props)


def test_load_from_a_file_and_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="bob" password="bob-secret";\n'
    )
    config = load_command_config(path)
    assert (config.sasl_mechanism, config.sasl_username) == ("PLAIN", "bob")
    assert "ssl_context" not in config.client_options()
    with pytest.raises(UsageError, match="cannot read"):
        load_command_config(tmp_path / "absent.properties")


# ----- helpers -----------------------------------------------------------------------------


def _key_and_cert(name: str) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _write_ca(tmp_path: Path) -> Path:
    from cryptography.hazmat.primitives.serialization import Encoding

    _, cert = _key_and_cert("test CA")
    path = tmp_path / "ca.pem"
    path.write_bytes(cert.public_bytes(Encoding.PEM))
    return path


def test_every_client_command_takes_command_config_before_or_after(tmp_path: Path) -> None:
    from deploy import cli
    from deploy.cli_common import security_from_args

    path = tmp_path / "client.properties"
    path.write_text("security.protocol=PLAINTEXT\n")
    parser = cli.build_parser()
    after = parser.parse_args(["topics", "list", "--command-config", str(path)])
    before = parser.parse_args(["--command-config", str(path), "topics", "list"])
    assert after.command_config == before.command_config == path
    assert security_from_args(after) == {}
    path.write_text("sasl.mechanism=PLAIN\n")
    with pytest.raises(UsageError, match=r"needs security\.protocol SASL_SSL"):
        security_from_args(after)


def test_bench_takes_command_config(tmp_path: Path) -> None:
    from deploy import cli

    path = tmp_path / "client.properties"
    args = cli.bench_parser().parse_args(
        ["produce", "--topic", "t", "--bootstrap", "h:1", "--command-config", str(path)]
    )
    assert args.command_config == path


def test_a_local_secure_cluster_without_command_config_says_which_file(tmp_path: Path) -> None:
    import argparse

    from deploy.cli_common import security_from_args

    (tmp_path / "cluster.json").write_text('{"secure": true}')
    args = argparse.Namespace(dir=tmp_path, bootstrap=None, command_config=None)
    with pytest.raises(UsageError, match=r"client\.properties"):
        security_from_args(args)
    (tmp_path / "cluster.json").write_text('{"secure": false}')
    assert security_from_args(args) == {}
    args = argparse.Namespace(dir=None, bootstrap="h:1", command_config=None)
    assert security_from_args(args) == {}  # somewhere else: the brokers will say
